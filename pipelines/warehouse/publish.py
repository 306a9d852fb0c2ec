"""Publish what BI tools and the allocation API read: a serving copy of the marts, swapped in atomically, and a
Parquet export partitioned by cluster= and date=.

Readers never see a lock or a half-written day: the copy is written to a temporary file next to the target and
moved over it with os.replace (atomic on POSIX); a reader that still has the old file open keeps reading it.
The copy is written in DuckDB storage version v1.4.0 so BI tools embedding DuckDB 1.4+ can open it.

The serving copy also holds the allocation API's rollups (schema api, allocation_rollup.py): the allocation
mart pre-aggregated per day, cluster and namespace / label keys / controller, read instead of the detail rows when
a request allows it.

The allocation API reads its own copy of each snapshot (`.api-snapshots/serving-<publish id>.duckdb` beside the BI
copy, the last API_SNAPSHOTS_KEPT kept): DuckDB locks whole files, so an analyst who opens `serving.duckdb`
read-write (the default of the DuckDB CLI and Python) can block other openers of that file, but never the API.

Every mart of MART_TABLES is copied with its table and column comments (dbt persist_docs) and exported to Parquet;
the sql/bi/*.sql views (schema bi) are created in the serving copy and in `lake.duckdb`, a small file beside the
Parquet export (rewritten atomically by each export) that holds only views over the Parquet files: a connection kept
open to it sees every newly exported day without reconnecting, while one kept open to serving.duckdb keeps reading
the snapshot it opened.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb

from pipelines import SQL_DIR
from pipelines.warehouse.allocation_rollup import build_rollup

# Every mart copied into the serving copy. The Parquet export holds those partitioned by cluster and usage_date:
# the cloud bill (fct_cloud_cost_daily) has no cluster and is served only. The allocations as FOCUS rows
# (fct_focus_allocation_daily) are partitioned like the allocation mart, so they are exported too.
MART_TABLES = ("fct_allocation_daily", "fct_allocation_shared_daily", "fct_asset_daily", "fct_cluster_daily",
               "fct_node_energy_daily", "fct_recommendation_daily", "fct_recommendation_outcome_daily",
               "fct_cloud_cost_daily", "fct_focus_allocation_daily")
PARQUET_MARTS = tuple(t for t in MART_TABLES if t != "fct_cloud_cost_daily")
LAKE_FILE = "lake.duckdb"
# the allocation API's names for rows without a namespace (pipelines/serving): written into the Parquet export so
# no exported row has a NULL namespace
NAMESPACE_KEY_SQL = ("coalesce(nullif(namespace, ''), case allocation_kind when 'idle' then '__idle__' "
                     "when 'unmounted' then '__unmounted__' when 'shared' then '__shared__' "
                     "else '__unallocated__' end)")
_MART_REF = re.compile(r"\bmarts\.(\w+)")
SERVING_STORAGE_VERSION = "v1.4.0"
API_SNAPSHOTS_KEPT = 2
API_SNAPSHOT_DIR = ".api-snapshots"
API_SNAPSHOT_GLOB = "serving-*.duckdb"


@dataclass
class PublishResult:
    serving_path: Path
    tables: dict[str, int]
    bytes: int


@contextmanager
def _new_catalog(tmp: Path, working_path: Path, name: str, kind: str
                 ) -> Iterator[tuple[duckdb.DuckDBPyConnection, list[str]]]:
    """A new DuckDB file `tmp` attached as `name` (schemas marts and bi) next to the working warehouse (read-only).
    The block fills `name`.marts and lists what it made (`kind` table or view); then the marts' comments and the
    sql/bi views over them are added and the file is closed. On failure the half-written file goes."""
    con = duckdb.connect()
    made: list[str] = []
    try:
        con.execute(f"attach '{_q(tmp)}' as {name} (storage_version '{SERVING_STORAGE_VERSION}')")
        con.execute(f"attach '{_q(working_path)}' as working (read_only)")
        con.execute(f"create schema {name}.marts")
        con.execute(f"create schema {name}.bi")
        yield con, made
        copy_comments(con, "working", name, made, kind=kind)
        con.execute("detach working")
        con.execute(f"use {name}")
        create_bi_views(con, name, set(made))
        con.execute("use memory")
        con.execute(f"detach {name}")
    except BaseException:
        con.close()
        tmp.unlink(missing_ok=True)
        tmp.with_name(tmp.name + ".wal").unlink(missing_ok=True)
        raise
    con.close()


def publish_serving_copy(working_path: Path, serving_path: Path) -> PublishResult:
    """Copy the marts (and sql/bi views) from the working warehouse into a new file and swap it in."""
    serving_path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_tmp(serving_path)
    tmp = serving_path.with_name(f".{serving_path.name}.{uuid.uuid4().hex}.tmp")
    counts: dict[str, int] = {}
    with _new_catalog(tmp, working_path, "serving", "table") as (con, made):
        existing = {r[0] for r in con.execute(
            "select table_name from duckdb_tables() where database_name = 'working' and schema_name = 'marts'"
        ).fetchall()}
        for table in MART_TABLES:
            if table not in existing:
                continue
            # identifiers come from MART_TABLES, never from input
            con.execute(f"create table serving.marts.{table} as select * from working.marts.{table}")  # noqa: S608
            counts[table] = con.execute(f"select count(*) from serving.marts.{table}").fetchone()[0]  # noqa: S608
            made.append(table)
        if "fct_allocation_daily" in made:  # the allocation API's pre-aggregates (schema api)
            build_rollup(con, "serving", source="serving.marts.fct_allocation_daily")
        counts.update(_copy_source_health(con))
    _write_api_snapshot(tmp, serving_path)
    os.replace(tmp, serving_path)
    return PublishResult(serving_path=serving_path, tables=counts, bytes=serving_path.stat().st_size)


def _copy_source_health(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """The source-health ledger as `ops.source_health` (what each day's sources gave: /healthz and status read it).
    An operational record copied as landed, like a run log, not a derived fact."""
    found = con.execute("select count(*) from duckdb_tables() where database_name = 'working' "
                        "and schema_name = 'raw' and table_name = 'source_health'").fetchone()[0]
    if not found:
        return {}
    con.execute("create schema serving.ops")
    con.execute("create table serving.ops.source_health as select * exclude (_extracted_at), "
                "_extracted_at as recorded_at from working.raw.source_health")
    return {"ops.source_health": con.execute("select count(*) from serving.ops.source_health").fetchone()[0]}


def copy_comments(con: duckdb.DuckDBPyConnection, source: str, target: str, tables: list[str],
                  kind: str = "table") -> int:
    """COMMENT ON each table of schema marts in catalog `target` (a view there with kind="view") and on each of its
    columns that also exists in `source`, as in catalog `source`; returns how many comments were written."""
    if not tables:
        return 0
    assert kind in ("table", "view")
    statements: list[str] = []
    rows = con.execute(
        "select table_name, comment from duckdb_tables() where database_name = ? and schema_name = 'marts' "
        "and list_contains(?, table_name) and comment is not null and comment <> ''", [source, tables]
    ).fetchall()
    for table, comment in rows:
        statements.append(f"comment on {kind} {_ident(target)}.marts.{_ident(table)} is {_lit(comment)}")
    rows = con.execute(
        "select s.table_name, s.column_name, s.comment from duckdb_columns() s "
        "join duckdb_columns() t on t.table_name = s.table_name and t.column_name = s.column_name "
        " and t.database_name = ? and t.schema_name = 'marts' "
        "where s.database_name = ? and s.schema_name = 'marts' and list_contains(?, s.table_name) "
        "  and s.comment is not null and s.comment <> ''", [target, source, tables]
    ).fetchall()
    for table, column, comment in rows:
        statements.append(f"comment on column {_ident(target)}.marts.{_ident(table)}.{_ident(column)} "
                          f"is {_lit(comment)}")
    if statements:
        con.execute(";\n".join(statements))
    return len(statements)


def create_bi_views(con: duckdb.DuckDBPyConnection, catalog: str, marts: set[str]) -> list[str]:
    """Run sql/bi/*.sql in `catalog` (the current catalog) with its marts; a file naming a missing mart is skipped.

    A view column left without a comment by its file gets the comment of the same-named column of the (first) mart
    the view reads. Returns the files run."""
    run: list[str] = []
    for sql_file in sorted((SQL_DIR / "bi").glob("*.sql")):
        text = sql_file.read_text()
        if any(name not in marts for name in _MART_REF.findall(text)):
            continue
        con.execute(text)
        run.append(sql_file.name)
    views = con.execute(
        "select view_name, sql from duckdb_views() where database_name = ? and schema_name = 'bi'", [catalog]
    ).fetchall()
    statements: list[str] = []
    for view, sql in views:
        sources = [m for m in _MART_REF.findall(sql or "") if m in marts]
        if not sources:
            continue
        missing = con.execute(
            "select v.column_name, m.comment from duckdb_columns() v "
            "join duckdb_columns() m on m.column_name = v.column_name and m.database_name = v.database_name "
            " and m.schema_name = 'marts' and m.table_name = ? "
            "where v.database_name = ? and v.schema_name = 'bi' and v.table_name = ? "
            "  and (v.comment is null or v.comment = '') and m.comment is not null and m.comment <> ''",
            [sources[0], catalog, view]).fetchall()
        for column, comment in missing:
            statements.append(f"comment on column {_ident(catalog)}.bi.{_ident(view)}.{_ident(column)} "
                              f"is {_lit(comment)}")
    if statements:
        con.execute(";\n".join(statements))
    return run


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


def export_parquet(working_path: Path, parquet_root: Path, days: list[date],
                   lake_path: Path | None = None) -> dict[str, int]:
    """Write each mart's rows for these days as <root>/<mart>/cluster=<c>/date=<d>/data.parquet (replaced per day),
    then rewrite the lake file (default <root>/lake.duckdb) with views over every exported mart.

    The files hold every mart column but `cluster` (it is the partition); `namespace` is never NULL in them: idle
    rows are `__idle__`, unmounted volumes without a namespace `__unmounted__`, a workload row without one
    `__unallocated__`, a shared pool without recipient `__shared__` (the allocation API's names; the marts keep
    NULL)."""
    written: dict[str, int] = {}
    started = time.time()
    con = duckdb.connect(str(working_path), read_only=True)
    try:
        for table in PARQUET_MARTS:
            columns = [r[0] for r in con.execute(
                "select column_name from duckdb_columns() where schema_name = 'marts' and table_name = ? "
                "order by column_index", [table]).fetchall()]
            if not {"cluster", "usage_date"} <= set(columns):
                continue  # not built (or not partitionable by cluster and day)
            fill = (f" replace ({NAMESPACE_KEY_SQL} as namespace)"
                    if {"namespace", "allocation_kind"} <= set(columns) else "")
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
                        f"copy (select * exclude (cluster){fill} from marts.{table} "  # noqa: S608
                        f"where usage_date = ? and cluster = ?) "
                        f"to '{_q(tmp)}' (format parquet, compression zstd)",
                        [day, cluster],
                    )
                    os.replace(tmp, folder / "data.parquet")
                    written[table] = written.get(table, 0) + 1
    finally:
        con.close()
    write_lake(working_path, parquet_root, lake_path or parquet_root / LAKE_FILE)
    return written


def lake_view_sql(parquet_root: Path, table: str, columns: list[str]) -> str:
    """SELECT over one mart's Parquet files with the mart's columns, in its order.

    `cluster` comes back from the partition folder (always VARCHAR) and so does `usage_date` (the `date=`
    partition holds exactly the file's usage_date), so filters on either prune whole files."""
    source = (f"read_parquet('{_q(parquet_root.resolve() / table)}/*/*/data.parquet', hive_partitioning = true, "
              f"hive_types = {{'cluster': 'VARCHAR', 'date': 'DATE'}}, union_by_name = true)")
    select = []
    for c in columns:
        if c == "usage_date":
            select.append('"date" as usage_date')
        else:
            select.append(_ident(c))
    return f"select {', '.join(select)} from {source}"  # noqa: S608 - names come from the warehouse catalog


def empty_view_sql(typed: list[tuple[str, str]]) -> str:
    """SELECT of no rows with these (column, type) pairs, in their order."""
    cols = ", ".join(f"cast(null as {data_type}) as {_ident(c)}" for c, data_type in typed)
    return f"select {cols} where false"  # noqa: S608 - names and types come from the warehouse catalog


def write_lake(working_path: Path, parquet_root: Path, lake_path: Path) -> Path | None:
    """Write `lake_path` (tmp + os.replace): schema marts = one view per exported mart over its Parquet files,
    schema bi = the sql/bi views, with the marts' comments. Nothing is written while no mart has been exported."""
    exported = {t for t in PARQUET_MARTS if any((parquet_root / t).glob("*/*/data.parquet"))}
    if not exported:
        return None
    lake_path.parent.mkdir(parents=True, exist_ok=True)
    for stale in lake_path.parent.glob(f".{lake_path.name}.*.tmp*"):  # left by a write that was killed
        if stale.stat().st_mtime < time.time() - 3600:
            stale.unlink(missing_ok=True)
    tmp = lake_path.with_name(f".{lake_path.name}.{uuid.uuid4().hex}.tmp")
    with _new_catalog(tmp, working_path, "lake", "view") as (con, made):
        for table in PARQUET_MARTS:
            typed = con.execute(
                "select column_name, data_type from duckdb_columns() where database_name = 'working' "
                "and schema_name = 'marts' and table_name = ? order by column_index", [table]).fetchall()
            columns = [c for c, _ in typed]
            if not {"cluster", "usage_date"} <= set(columns):
                continue
            # a mart no day has rows for yet (no file to read) is an empty view of its columns: a BI query on it
            # answers no rows instead of failing on a missing table
            body = (lake_view_sql(parquet_root, table, columns) if table in exported
                    else empty_view_sql(typed))
            con.execute(f"create view lake.marts.{_ident(table)} as {body}")
            made.append(table)
    os.replace(tmp, lake_path)
    return lake_path


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _q(path: Path | str) -> str:
    return str(path).replace("'", "''")


def _lit(text: str) -> str:
    """A SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def _ident(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + str(name).replace('"', '""') + '"'


def _safe(value: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in value)
