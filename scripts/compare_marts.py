"""Compare the marts of two warehouses: every row identical, floating-point columns to a relative tolerance.

    .venv/bin/python scripts/compare_marts.py BEFORE.duckdb AFTER.duckdb [--rel 1e-12] [--schema marts]

Used before and after every change that must not move a number (the house rule: marts identical to 1e-12 on the demo
day and the bench scales). Rows are matched on all non-floating-point columns (keys, properties, flags, timestamps);
floating-point columns are summed per match group, so row order and duplicate rows do not matter. Exit 1 on any
difference, listing the first ones per table.
"""

from __future__ import annotations

import argparse
import sys

import duckdb

FLOAT_TYPES = ("DOUBLE", "FLOAT", "REAL")


def _columns(con: duckdb.DuckDBPyConnection, db: str, schema: str, table: str) -> list[tuple[str, str]]:
    return con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_catalog = ? AND table_schema = ? AND table_name = ? ORDER BY ordinal_position",
        [db, schema, table]).fetchall()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def compare_table(con: duckdb.DuckDBPyConnection, schema: str, table: str, rel: float, show: int,
                  abs_tol: float = 0.0, skip: tuple[str, ...] = ()) -> list[str]:
    before, after = _columns(con, "a", schema, table), _columns(con, "b", schema, table)
    if [c for c, _ in before] != [c for c, _ in after]:
        return [f"{table}: columns differ: only before {sorted(set(before) - set(after))}, "
                f"only after {sorted(set(after) - set(before))}"]
    keys = [_quote(c) for c, t in before if t.upper() not in FLOAT_TYPES and c not in skip]
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
                              tuple(x.strip() for x in a.skip.split(",") if x.strip()))
        print(f"{t:32s} {n[0] if n else 0:>10,} rows  {'DIFFERENT' if found else 'identical'}")
        problems += found
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
