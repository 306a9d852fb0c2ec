"""Publish what BI tools and the allocation API read: a serving copy of the marts, swapped in atomically, and a
Parquet export partitioned by cluster= and date=.

Readers never see a lock or a half-written day: the copy is written to a temporary file next to the target and
moved over it with os.replace (atomic on POSIX); a reader that still has the old file open keeps reading it.
The copy is written in DuckDB storage version v1.4.0 so BI tools embedding DuckDB 1.4+ can open it.

The allocation API reads its own copy of each snapshot (`.api-snapshots/serving-<publish id>.duckdb` beside the BI
copy, the last API_SNAPSHOTS_KEPT kept): DuckDB locks whole files, so an analyst who opens `serving.duckdb`
read-write (the default of the DuckDB CLI and Python) can block other openers of that file, but never the API.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb

from pipelines import SQL_DIR

MART_TABLES = ("fct_allocation_daily", "fct_allocation_shared_daily", "fct_asset_daily", "fct_cluster_daily",
               "fct_node_energy_daily")
PARQUET_MARTS = ("fct_allocation_daily", "fct_allocation_shared_daily", "fct_node_energy_daily", "fct_cluster_daily")
SERVING_STORAGE_VERSION = "v1.4.0"
API_SNAPSHOTS_KEPT = 2
API_SNAPSHOT_DIR = ".api-snapshots"
API_SNAPSHOT_GLOB = "serving-*.duckdb"


@dataclass
class PublishResult:
    serving_path: Path
    tables: dict[str, int]
    bytes: int


def publish_serving_copy(working_path: Path, serving_path: Path) -> PublishResult:
    """Copy the marts (and sql/bi views) from the working warehouse into a new file and swap it in."""
    serving_path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_tmp(serving_path)
    tmp = serving_path.with_name(f".{serving_path.name}.{uuid.uuid4().hex}.tmp")
    con = duckdb.connect()
    counts: dict[str, int] = {}
    try:
        con.execute(f"attach '{_q(tmp)}' as serving (storage_version '{SERVING_STORAGE_VERSION}')")
        con.execute(f"attach '{_q(working_path)}' as working (read_only)")
        con.execute("create schema serving.marts")
        con.execute("create schema serving.bi")
        existing = {r[0] for r in con.execute(
            "select table_name from duckdb_tables() where database_name = 'working' and schema_name = 'marts'"
        ).fetchall()}
        for table in MART_TABLES:
            if table not in existing:
                continue
            # identifiers come from MART_TABLES, never from input
            con.execute(f"create table serving.marts.{table} as select * from working.marts.{table}")  # noqa: S608
            counts[table] = con.execute(f"select count(*) from serving.marts.{table}").fetchone()[0]  # noqa: S608
        con.execute("detach working")
        con.execute("use serving")
        for sql_file in sorted((SQL_DIR / "bi").glob("*.sql")):
            if "fct_allocation_shared_daily" in sql_file.read_text() and "fct_allocation_shared_daily" not in counts:
                continue
            con.execute(sql_file.read_text())
        con.execute("use memory")
        con.execute("detach serving")
    except BaseException:
        con.close()
        tmp.unlink(missing_ok=True)
        raise
    con.close()
    _write_api_snapshot(tmp, serving_path)
    os.replace(tmp, serving_path)
    return PublishResult(serving_path=serving_path, tables=counts, bytes=serving_path.stat().st_size)


def api_snapshot_dir(serving_path: Path) -> Path:
    return serving_path.parent / API_SNAPSHOT_DIR


def _write_api_snapshot(source: Path, serving_path: Path) -> Path:
    """Copy a finished serving file into the API's snapshot folder (atomically) and prune older snapshots.

    Names sort by publish time, so the API picks the newest; a snapshot the API still reads stays readable after
    it is unlinked (POSIX), so pruning never breaks a request in flight."""
    folder = api_snapshot_dir(serving_path)
    folder.mkdir(parents=True, exist_ok=True)
    publish_id = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time_ns() % 1_000_000_000:09d}"
    target = folder / f"serving-{publish_id}-{uuid.uuid4().hex[:8]}.duckdb"
    tmp = folder / f".{target.name}.tmp"
    try:
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    for old in sorted(folder.glob(API_SNAPSHOT_GLOB), reverse=True)[API_SNAPSHOTS_KEPT:]:
        old.unlink(missing_ok=True)
    for stale in folder.glob(".serving-*.duckdb.tmp"):
        if stale.stat().st_mtime < time.time() - 3600:  # left by a publish killed mid-copy
            stale.unlink(missing_ok=True)
    return target


def remove_stale_tmp(serving_path: Path) -> list[Path]:
    """Delete the temporary copies (and their WAL) left next to the serving copy by a publish that was killed.

    A file another process still has open is in use (DuckDB holds a POSIX lock on it) and is kept."""
    removed: list[Path] = []
    for path in serving_path.parent.glob(f".{serving_path.name}.*.tmp"):
        if _locked(path):
            continue
        for p in (path, path.with_name(path.name + ".wal")):
            if p.exists():
                p.unlink(missing_ok=True)
                removed.append(p)
    # a WAL whose database file is already gone
    for wal in serving_path.parent.glob(f".{serving_path.name}.*.tmp.wal"):
        if not wal.with_name(wal.name[:-4]).exists():
            wal.unlink(missing_ok=True)
            removed.append(wal)
    return removed


def _locked(path: Path) -> bool:
    """Whether another process holds DuckDB's lock on this file."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases the probe lock
    return False


def export_parquet(working_path: Path, parquet_root: Path, days: list[date]) -> dict[str, int]:
    """Write each mart's rows for these days as <root>/<mart>/cluster=<c>/date=<d>/data.parquet (replaced per day)."""
    written: dict[str, int] = {}
    started = time.time()
    con = duckdb.connect(str(working_path), read_only=True)
    try:
        for table in PARQUET_MARTS:
            exists = con.execute(
                "select count(*) from duckdb_tables() where schema_name = 'marts' and table_name = ?", [table]
            ).fetchone()[0]
            if not exists:
                continue
            for day in days:
                clusters = [r[0] for r in con.execute(
                    f"select distinct cluster from marts.{table} where usage_date = ?", [day]  # noqa: S608
                ).fetchall()]
                for cluster in clusters:
                    folder = parquet_root / table / f"cluster={_safe(cluster)}" / f"date={day.isoformat()}"
                    folder.mkdir(parents=True, exist_ok=True)
                    for stale in folder.glob(".data.*.tmp"):  # left by an export that was killed
                        if stale.stat().st_mtime < started:
                            stale.unlink(missing_ok=True)
                    tmp = folder / f".data.{uuid.uuid4().hex}.tmp"
                    con.execute(
                        f"copy (select * exclude (cluster) from marts.{table} where usage_date = ? and cluster = ?) "  # noqa: S608
                        f"to '{_q(tmp)}' (format parquet, compression zstd)",
                        [day, cluster],
                    )
                    os.replace(tmp, folder / "data.parquet")
                    written[table] = written.get(table, 0) + 1
    finally:
        con.close()
    return written


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _q(path: Path | str) -> str:
    return str(path).replace("'", "''")


def _safe(value: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in value)
