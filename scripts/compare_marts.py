"""Compare the marts of two warehouses: every row identical, floating-point columns to a relative tolerance.

    .venv/bin/python scripts/compare_marts.py BEFORE.duckdb AFTER.duckdb [--rel 1e-12] [--schema marts]

Used before and after every change that must not move a number (the house rule: marts identical to 1e-12 on the demo
day and the bench scales). Rows are matched on all non-floating-point columns (keys, properties, flags, timestamps);
floating-point columns are summed per match group, so row order and duplicate rows do not matter. `--json COLS`
names text columns holding JSON with numbers (the recommendations' `evidence`): they are compared as JSON values, the
numbers to the same tolerance, because the last digits of a double written into text follow DuckDB's parallel
summation order as the double columns do. Exit 1 on any difference, listing the first ones per table.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import duckdb

FLOAT_TYPES = ("DOUBLE", "FLOAT", "REAL")


def _columns(con: duckdb.DuckDBPyConnection, db: str, schema: str, table: str) -> list[tuple[str, str]]:
    return con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_catalog = ? AND table_schema = ? AND table_name = ? ORDER BY ordinal_position",
        [db, schema, table]).fetchall()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _same_json(a: Any, b: Any, rel: float, abs_tol: float) -> bool:
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool | str):
        return a == b or abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_tol) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k], rel, abs_tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y, rel, abs_tol) for x, y in zip(a, b, strict=True))
    return a == b


def _json_differences(con: duckdb.DuckDBPyConnection, schema: str, table: str, keys: list[str],
                      json_cols: list[str], rel: float, abs_tol: float) -> list[tuple]:
    """Rows (matched on `keys`, in order) whose JSON columns differ beyond the tolerance."""
    order = ", ".join(f"{k} NULLS FIRST" for k in keys) or "1"
    cols = ", ".join([*keys, *json_cols])
    x = con.execute(f"SELECT {cols} FROM a.{schema}.{_quote(table)} ORDER BY {order}").fetchall()  # noqa: S608
    y = con.execute(f"SELECT {cols} FROM b.{schema}.{_quote(table)} ORDER BY {order}").fetchall()  # noqa: S608
    out = []
    for rx, ry in zip(x, y, strict=False):
        for vx, vy in zip(rx[len(keys):], ry[len(keys):], strict=True):
            px = json.loads(vx) if vx is not None else None
            py = json.loads(vy) if vy is not None else None
            if rx[:len(keys)] != ry[:len(keys)] or not _same_json(px, py, rel, abs_tol):
                out.append((*rx, *ry[len(keys):]))
                break
    return out


def compare_table(con: duckdb.DuckDBPyConnection, schema: str, table: str, rel: float, show: int,
                  abs_tol: float = 0.0, skip: tuple[str, ...] = (), json_cols: tuple[str, ...] = ()) -> list[str]:
    before, after = _columns(con, "a", schema, table), _columns(con, "b", schema, table)
    if [c for c, _ in before] != [c for c, _ in after]:
        return [f"{table}: columns differ: only before {sorted(set(before) - set(after))}, "
                f"only after {sorted(set(after) - set(before))}"]
    js = [_quote(c) for c, _ in before if c in json_cols and c not in skip]
    keys = [_quote(c) for c, t in before if t.upper() not in FLOAT_TYPES and c not in skip and c not in json_cols]
    nums = [_quote(c) for c, t in before if t.upper() in FLOAT_TYPES and c not in skip]
    agg = ", ".join([*keys, "count(*) AS _n", *[f"sum({c}) AS {c}" for c in nums]])
    group = f"GROUP BY {', '.join(keys)}" if keys else ""
    on = " AND ".join([f"x.{k} IS NOT DISTINCT FROM y.{k}" for k in keys]) or "TRUE"
    diff = ["x._n IS DISTINCT FROM y._n"] + [
        f"(x.{c} IS NULL) <> (y.{c} IS NULL) OR abs(x.{c} - y.{c}) > "
        f"greatest({rel} * greatest(abs(x.{c}), abs(y.{c})), {abs_tol}, 1e-300)"
        for c in nums]
    sql = (f"WITH x AS (SELECT {agg} FROM a.{schema}.{_quote(table)} {group}), "  # noqa: S608 - catalog names
           f"y AS (SELECT {agg} FROM b.{schema}.{_quote(table)} {group}) "
           f"SELECT x.*, y.* FROM x FULL OUTER JOIN y ON {on} WHERE x._n IS NULL OR y._n IS NULL OR "
           + " OR ".join(f"({d})" for d in diff))
    rows = con.execute(sql).fetchall()
    if js and not rows:
        rows = _json_differences(con, schema, table, keys, js, rel, abs_tol)
    out = [f"{table}: {len(rows)} differing row group(s)"] if rows else []
    out += [f"  {r}" for r in rows[:show]]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rel", type=float, default=1e-12, help="relative tolerance for floating-point columns")
    p.add_argument("--schema", default="marts")
    p.add_argument("--abs", type=float, default=0.0, dest="abs_tol",
                   help="absolute tolerance as well (float noise around zero, e.g. 1e-9)")
    p.add_argument("--skip", default="", help="comma list of columns left out of the comparison")
    p.add_argument("--json", default="", dest="json_cols",
                   help="comma list of JSON text columns compared as JSON values (numbers to the tolerance)")
    p.add_argument("--show", type=int, default=3, help="differing groups printed per table")
    a = p.parse_args(argv)
    con = duckdb.connect()
    con.execute("ATTACH ? AS a (READ_ONLY)", [a.before])
    con.execute("ATTACH ? AS b (READ_ONLY)", [a.after])
    tables = [r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'a' AND table_schema = ? "
        "ORDER BY 1", [a.schema]).fetchall()]
    problems: list[str] = []
    for t in tables:
        n = con.execute(f"SELECT count(*) FROM a.{a.schema}.{_quote(t)}").fetchone()  # noqa: S608
        found = compare_table(con, a.schema, t, a.rel, a.show, a.abs_tol,
                              tuple(x.strip() for x in a.skip.split(",") if x.strip()),
                              tuple(x.strip() for x in a.json_cols.split(",") if x.strip()))
        print(f"{t:32s} {n[0] if n else 0:>10,} rows  {'DIFFERENT' if found else 'identical'}")
        problems += found
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
