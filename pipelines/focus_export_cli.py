"""`kubeledger export focus`: the allocations of a range of days as a FOCUS 1.2 file (Parquet or CSV).

The rows are marts.fct_focus_allocation_daily's (the FOCUS columns and kubeledger's x_ columns are computed there,
in dbt, once); this command only selects the days from the serving copy and writes them. The file is written to a
temporary name beside the target and renamed over it when complete, so a reader never sees part of an export and
a failed export leaves the previous file as it was.

Formats, as FOCUS's attributes ask: Parquet keeps the types (Date/Time columns as UTC instants, costs as 64-bit
decimals, Tags a JSON string); CSV writes date/times as YYYY-MM-DDTHH:MM:SSZ and numbers as plain decimals (no
exponent, FOCUS Numeric Format).
"""

from __future__ import annotations

import argparse
import os
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import duckdb

from pipelines.serving.cli import error_exit
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.snapshots import ServingUnavailable, read_once
from pipelines.settings import Settings

MART = "fct_focus_allocation_daily"
# the mart's partition keys, not FOCUS columns (the file says them as ChargePeriodStart and x_ClusterName)
PARTITION_KEYS = ("usage_date", "cluster")
# what may be written: a FOCUS column ID (Pascal case, alphanumeric) or a custom x_ column
EXPORTED_COLUMN = re.compile(r"^(?:[A-Z][A-Za-z0-9]*|x_[A-Za-z0-9]+)$")
FORMATS = ("parquet", "csv")
ORDER = '"ChargePeriodStart", "x_ClusterName", "x_NodeName", "x_Namespace", "ResourceId", "x_ContainerName"'


@dataclass(frozen=True)
class ExportResult:
    path: Path
    rows: int
    clusters: list[str]
    list_cost: float
    effective_cost: float
    energy_kwh: float
    co2e_g: float


def add_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    """Register `export focus` on the `kubeledger` subparsers (pipelines/cli.py); `common` adds --config/-v."""
    export = sub.add_parser("export", help="write the allocations in a standard format (export focus -h)")
    kinds = export.add_subparsers(dest="export_kind", required=True, metavar="FORMAT",
                                  help="what to write (focus: the FinOps FOCUS 1.2 columns)")
    p = kinds.add_parser("focus", help="the allocations of a range of days as FOCUS 1.2 rows (Parquet or CSV)",
                         description="Write each allocation-day of the serving copy as a FOCUS 1.2 Usage row of the "
                         "service Kubernetes: ListCost the list-priced cost, EffectiveCost after the cloud bill's "
                         "reconciliation, the cluster's billing account when the bill names it, namespace and "
                         "controller in Tags, kWh and CO2e in x_ columns (marts.fct_focus_allocation_daily).")
    p.add_argument("--start", type=_day, required=True, help="first day, YYYY-MM-DD (UTC)")
    p.add_argument("--end", type=_day, required=True, help="last day, inclusive, YYYY-MM-DD (UTC)")
    p.add_argument("--out", type=Path, default=None,
                   help="file to write (default ./focus-<start>_<end>.<format>); replaced whole when complete")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="parquet or csv (default: from --out's suffix, else parquet)")
    p.add_argument("--cluster", default=None, help="only this cluster (default: all)")
    common(p)
    return export


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day (YYYY-MM-DD)") from None


def _format_of(args: argparse.Namespace) -> str:
    if args.format:
        return args.format
    if args.out is not None and args.out.suffix.lower() == ".csv":
        return "csv"
    return "parquet"


def _columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """The mart's exported columns (name, DuckDB type) in its order; QueryError when the serving copy lacks it."""
    rows = con.execute("select column_name, data_type from duckdb_columns() where schema_name = 'marts' "
                       "and table_name = ? order by column_index", [MART]).fetchall()
    if not rows:
        raise QueryError("marts", MART, "", status=404, message=(
            f"marts.{MART} is not in the serving copy: build the days first (kubeledger backfill, or kubeledger "
            "rebuild for days built before the FOCUS export existed)"))
    out = [(n, t) for n, t in rows if n not in PARTITION_KEYS]
    bad = [n for n, _ in out if not EXPORTED_COLUMN.match(n)]
    if bad:  # a column the FOCUS file may not hold (neither a FOCUS ID nor x_): never written
        raise QueryError("marts", MART, "", status=500, message=f"marts.{MART}: unexpected columns {bad}")
    return out


def _select_item(name: str, data_type: str, fmt: str) -> str:
    ident = '"' + name + '"'  # allow-listed by EXPORTED_COLUMN: letters, digits and _ only
    if data_type.startswith("TIMESTAMP"):
        if fmt == "csv":
            return f"strftime({ident}, '%Y-%m-%dT%H:%M:%SZ') as {ident}"
        return f"cast({ident} as timestamptz) as {ident}"  # an instant in UTC (session TimeZone UTC)
    if fmt == "csv" and data_type in ("DOUBLE", "FLOAT"):
        # plain decimal text (FOCUS Numeric Format has no exponent); shortest form when it has none
        text = f"cast({ident} as varchar)"
        return (f"case when {text} like '%e%' then rtrim(rtrim(printf('%.24f', {ident}), '0'), '.') "
                f"else {text} end as {ident}")
    return ident


def export_focus(con: duckdb.DuckDBPyConnection, start: date, end: date, out: Path, fmt: str,
                 cluster: str | None = None) -> ExportResult:
    """Write the mart's rows of [start, end] (and `cluster`) to `out` atomically; QueryError when there are none."""
    if fmt not in FORMATS:
        raise QueryError("format", fmt, "one of " + ", ".join(FORMATS))
    if end < start:
        raise QueryError("end", end.isoformat(), f"the last day must not be before --start {start.isoformat()}")
    columns = _columns(con)
    where = "usage_date >= ? and usage_date <= ?" + (" and cluster = ?" if cluster else "")
    params: list[Any] = [start, end] + ([cluster] if cluster else [])
    totals = 'count(*), list(distinct cluster order by cluster), sum("ListCost"), sum("EffectiveCost"), ' \
        'sum("x_EnergyKwh"), sum("x_Co2eGrams")'
    summary = con.execute(f"select {totals} from marts.{MART} where {where}", params).fetchone()  # noqa: S608
    if not summary[0]:
        scope = f" for cluster {cluster}" if cluster else ""
        raise QueryError("start", start.isoformat(), "", status=404, message=(
            f"no allocations from {start} to {end}{scope} in the serving copy: nothing written"))
    select = ", ".join(_select_item(n, t, fmt) for n, t in columns)
    options = "format parquet, compression zstd" if fmt == "parquet" else "format csv, header true"
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex}.tmp")
    try:
        con.execute("set TimeZone = 'UTC'")
        path_literal = "'" + str(tmp).replace("'", "''") + "'"
        con.execute(f"copy (select {select} from marts.{MART} where {where} order by {ORDER}) "  # noqa: S608
                    f"to {path_literal} ({options})", params)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return ExportResult(path=out, rows=summary[0], clusters=list(summary[1]), list_cost=summary[2] or 0.0,
                        effective_cost=summary[3] or 0.0, energy_kwh=summary[4] or 0.0, co2e_g=summary[5] or 0.0)


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    """`kubeledger export focus`: 0 written, 1 nothing to write or no serving copy, 2 bad input."""
    fmt = _format_of(args)
    out = args.out or Path(f"focus-{args.start.isoformat()}_{args.end.isoformat()}.{fmt}")
    try:
        result = read_once(settings.serving_path,
                           lambda con: export_focus(con, args.start, args.end, out, fmt, args.cluster))
    except (QueryError, ServingUnavailable) as exc:
        return error_exit(exc)
    print(f"wrote {result.rows} FOCUS rows ({args.start} to {args.end}, clusters {', '.join(result.clusters)}) "
          f"to {result.path}: ListCost {result.list_cost:.6f} USD, EffectiveCost {result.effective_cost:.6f} USD, "
          f"x_EnergyKwh {result.energy_kwh:.6f}, x_Co2eGrams {result.co2e_g:.3f}")
    return 0
