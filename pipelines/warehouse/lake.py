"""The Parquet lake: raw tables of the DuckDB warehouse written as hive-partitioned Parquet for the Spark engine.

Layout under the lake root (one file per partition):
    raw/<table>/cluster=<c>/date=<YYYY-MM-DD>/hour=<HH>/part-0.parquet   (cluster, hour_ts) tables
    raw/<table>/part-0.parquet                                          the others (whole-table snapshots)
`cluster` lives in the path only (Spark's partition discovery adds it back); `hour_ts` stays in the file, so
`date`/`hour` are only for pruning and never collide with a file column. Every partition is replaced atomically:
the file is written into a `_tmp-*` directory beside it (ignored by Spark and by DuckDB's hive reads) and renamed
into place, so a reader sees the old partition or the new one, never half of one. A partition with no rows still
gets a schema-only file, so replacing an hour with nothing empties it and the schema is always inferable.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterable, Mapping
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb

from pipelines.warehouse.landing import PARTITION_KEYS, LandingError, table_columns

PART_FILE = "part-0.parquet"
HOURLY_TABLES = tuple(t for t, keys in PARTITION_KEYS.items() if keys == ("cluster", "hour_ts"))
SNAPSHOT_TABLES = tuple(t for t in PARTITION_KEYS if t not in HOURLY_TABLES)


def _path_value(value: str) -> str:
    # %XX escaping, undone by Spark's partition discovery (ExternalCatalogUtils.unescapePathName decodes any %XX)
    return quote(value, safe="")


def partition_dir(lake_root: str | Path, table: str, cluster: str, hour_ts: datetime) -> Path:
    """Directory of one (cluster, hour) partition of an hourly raw table."""
    return (Path(lake_root) / "raw" / table / f"cluster={_path_value(cluster)}"
            / f"date={hour_ts:%Y-%m-%d}" / f"hour={hour_ts:%H}")


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    if table not in PARTITION_KEYS:
        raise LandingError(f"raw.{table}: not a landing table; allowed: {', '.join(sorted(PARTITION_KEYS))}")
    cols = table_columns(con, table)
    if not cols:
        raise LandingError(f"raw.{table}: not in the warehouse")
    return cols


def _copy(con: duckdb.DuckDBPyConnection, query: str, params: list[Any], target: Path) -> int:
    # identifiers in `query` come from PARTITION_KEYS / the catalogue; values are bound parameters
    con.execute(f"copy ({query}) to '{str(target).replace(chr(39), chr(39) * 2)}' (format parquet)", params)
    return con.execute(f"select count(*) from ({query})", params).fetchone()[0]  # noqa: S608


def _swap_in(staged: Path, final: Path) -> None:
    """Move the staged partition directory to `final`: a rename when new; else the file is renamed over the old
    one (atomic on POSIX), then anything else left in the old partition is removed."""
    final.parent.mkdir(parents=True, exist_ok=True)
    if not final.exists():
        os.rename(staged, final)
        return
    os.replace(staged / PART_FILE, final / PART_FILE)
    for stale in final.iterdir():
        if stale.name != PART_FILE:
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()


def write_raw_partitions(
    con: duckdb.DuckDBPyConnection,
    lake_root: str | Path,
    table: str,
    partitions: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, datetime], int]:
    """Replace the (cluster, hour_ts) partitions of hourly raw table `table` in the lake with the warehouse's rows
    (an empty partition gets a schema-only file). Returns rows written per (cluster, hour_ts)."""
    cols = _columns(con, table)
    if table not in HOURLY_TABLES:
        raise LandingError(f"raw.{table}: not partitioned by (cluster, hour_ts); use write_raw_snapshot")
    select = ", ".join(c for c in cols if c != "cluster")
    table_dir = Path(lake_root) / "raw" / table
    table_dir.mkdir(parents=True, exist_ok=True)
    staging = table_dir / f"_tmp-{uuid.uuid4().hex}"
    written: dict[tuple[str, datetime], int] = {}
    try:
        for part in {(p["cluster"], p["hour_ts"]) for p in partitions}:
            cluster, hour_ts = part
            staged = staging / f"{len(written)}"
            staged.mkdir(parents=True)
            written[part] = _copy(
                con, f"select {select} from raw.{table} where cluster = ? and hour_ts = ?",  # noqa: S608
                [cluster, hour_ts], staged / PART_FILE)
            _swap_in(staged, partition_dir(lake_root, table, cluster, hour_ts))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def write_raw_snapshot(con: duckdb.DuckDBPyConnection, lake_root: str | Path, table: str) -> int:
    """Replace the whole-table snapshot of raw table `table` (carbon, Boavizta, prices) in the lake."""
    cols = _columns(con, table)
    table_dir = Path(lake_root) / "raw" / table
    table_dir.mkdir(parents=True, exist_ok=True)
    staged = table_dir / f"_tmp-{uuid.uuid4().hex}.parquet"
    try:
        rows = _copy(con, f"select {', '.join(cols)} from raw.{table}", [], staged)  # noqa: S608
        os.replace(staged, table_dir / PART_FILE)
    finally:
        staged.unlink(missing_ok=True)
    return rows


def export_raw_day(
    con: duckdb.DuckDBPyConnection,
    lake_root: str | Path,
    day: date,
    cluster: str | None = None,
) -> dict[str, int]:
    """Write one UTC day of every raw table to the lake: the 24 hourly partitions of each hourly table for
    `cluster` (None = every cluster with rows that day) and fresh snapshots of the other tables.
    Returns rows written per table."""
    start = datetime(day.year, day.month, day.day)
    if cluster is None:
        union = " union ".join(
            f"select distinct cluster from raw.{t} where hour_ts >= ? and hour_ts < ?"  # noqa: S608
            for t in HOURLY_TABLES)
        end = start + timedelta(days=1)
        clusters = sorted(r[0] for r in con.execute(union, [start, end] * len(HOURLY_TABLES)).fetchall())
    else:
        clusters = [cluster]
    hours = [start + timedelta(hours=h) for h in range(24)]
    parts = [{"cluster": c, "hour_ts": h} for c in clusters for h in hours]
    rows = {t: sum(write_raw_partitions(con, lake_root, t, parts).values()) for t in HOURLY_TABLES}
    rows.update({t: write_raw_snapshot(con, lake_root, t) for t in SNAPSHOT_TABLES})
    return rows
