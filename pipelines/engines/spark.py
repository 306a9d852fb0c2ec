"""The spark engine: the dbt project run by dbt-spark inside this process, over the Parquet lake, with the
results brought back into the DuckDB warehouse so everything downstream (publish, API, BI views, asset checks,
reports, the Parquet export) works as with the duckdb engine.

One daily build on Spark, as the Dagster dbt assets call it (`spark_build`):

0. the metastore's home: its tables must live at the configured lake.root and warehouse folder, or the build
   fails in one line before the JVM starts (spark_metastore.py; `kubeledger lake relocate` re-registers them);
1. lake: the window's days of every raw table are written from the DuckDB warehouse to the lake
   (pipelines/warehouse/lake.py: each (cluster, hour) partition replaced atomically);
2. dbt: `dbt <args> --target spark` through `dbtRunner` in this process, so the one Spark session
   (spark_session.py) serves the seed, lookups and build calls; the environment the profile reads
   (KUBELEDGER_LAKE, ...) is set for the call only;
3. back to DuckDB: after the lookups call, the lookups model (the carbon-intensity and Boavizta extracts read it
   from the warehouse); after the daily build, the window's (cluster, usage_date) partitions of every mart, read
   from the marts' Parquet and cast to the marts' contract (marts_load.py), replaced in one transaction.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.engines import DBT_SPARK_TARGET, TEST_SELECTION_ENV
from pipelines.engines.dbt_runner import DbtCall, dbt_cli_args, invoke_dbt
from pipelines.engines.marts_load import load_marts
from pipelines.engines.spark_frames import frame_to_duckdb
from pipelines.engines.spark_metastore import adopt_metastore, check_metastore_home
from pipelines.engines.spark_session import get_session, spark_conf
from pipelines.timeutil import days_of_window
from pipelines.warehouse.connection import open_warehouse
from pipelines.warehouse.lookups import LOOKUPS_MODEL, LOOKUPS_RELATION

if TYPE_CHECKING:
    from pipelines.settings import Settings

# what the lookups asset and the daily asset build (names of pipelines/dagster_defs/assets_dbt.py)
LOOKUPS_ASSET, DAILY_ASSET = "dbt_lookups", "dbt_daily"


def spark_env(settings: Settings) -> dict[str, str]:
    """What the `spark` profile reads, given to each dbt call only."""
    spark = settings.lake.spark
    return {
        **TEST_SELECTION_ENV,  # as on DuckDB (engines.INDIRECT_SELECTION says why)
        "KUBELEDGER_LAKE": settings.lake_root,
        "KUBELEDGER_WAREHOUSE": str(settings.warehouse_path),
        # the profile's session parameters; the session itself is started first from the same settings
        # (spark_session.spark_conf), so the profile finds it with these values
        "KUBELEDGER_SPARK_DIR": str(settings.spark_state_dir),
        "KUBELEDGER_SPARK_MASTER": spark.master,
        "KUBELEDGER_SPARK_MEMORY": spark.driver_memory,
        "KUBELEDGER_SPARK_SHUFFLE_PARTITIONS": spark_conf(settings)["spark.sql.shuffle.partitions"],
        "DO_NOT_TRACK": "1",
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }


def dbt_spark_args(args: list[str], target_path: Path, project_dir: Path | None = None) -> list[str]:
    """dbt's command line on the spark target."""
    return dbt_cli_args(args, target_path, project_dir, DBT_SPARK_TARGET)


def run_dbt(settings: Settings, args: list[str], target_path: Path, project_dir: Path | None = None,
            env: dict[str, str] | None = None) -> DbtCall:
    """`dbt <args>` on the spark target, in this process, on the shared session."""
    get_session(settings)  # started here with the engine's settings; dbt-spark's getOrCreate finds it
    target_path.mkdir(parents=True, exist_ok=True)
    return invoke_dbt(dbt_spark_args(args, target_path, project_dir), {**spark_env(settings), **(env or {})})


def export_window(settings: Settings, start: datetime, end: datetime, cluster: str | None) -> dict[str, int]:
    """Write the window's days of every raw table from the warehouse to the lake (rows per table)."""
    from pipelines.warehouse.lake import export_raw_day

    rows: dict[str, int] = {}
    with open_warehouse(settings) as con:  # writable: a read-only open beside this process's own would fail
        for day in days_of_window(start, end):
            for table, n in export_raw_day(con, settings.lake_root, day, cluster).items():
                rows[table] = rows.get(table, 0) + n
    return rows


def prune_lake_raw(settings: Settings, newest: date) -> list[Path]:
    """Remove the lake's raw day partitions older than `lake.keep_raw_days` before `newest` (a local lake; the
    marts are kept). Returns the removed folders."""
    if "://" in settings.lake_root:
        return []  # an object-store lake: a bucket lifecycle rule on raw/ does this (README)
    cutoff = (newest - timedelta(days=settings.lake.keep_raw_days)).isoformat()
    removed = []
    for folder in sorted((Path(settings.lake_root) / "raw").glob("*/cluster=*/date=*")):
        if folder.name.removeprefix("date=") < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


# What a killed Spark write leaves in a table's folder: the file committer's job folder and the staging folder of a
# dynamic partition overwrite. Readers that glob <mart>/**/*.parquet trip on their 0-byte files, and a first build
# killed mid-write left a location dbt's CREATE TABLE AS SELECT refuses ("non-empty directory") on every re-run.
SPARK_DEBRIS_PREFIXES = ("_temporary", ".spark-staging-")


class LakeMartConflict(RuntimeError):
    """A mart folder of the lake holds files but no table of the metastore owns it."""


def clear_mart_debris(lake_root: str, registered: Callable[[str], bool]) -> list[Path]:
    """Before a daily build on Spark (the run holds the warehouse lock: no other job of ours writes the lake):
    remove the debris of killed writes from every mart folder of a local lake; returns what was removed.
    A folder still holding files whose mart `registered` (by folder name) does not know is refused in one line:
    those are a build killed between its commit and the table's registration, or another metastore's lake, and
    replacing them blindly could drop other days. An object-store lake is left to the cluster's committer."""
    root = Path(lake_root) / "marts"
    if "://" in lake_root or not root.is_dir():
        return []
    removed: list[Path] = []
    for mart in sorted(p for p in root.iterdir() if p.is_dir()):
        for entry in sorted(mart.iterdir()):
            if entry.name.startswith(SPARK_DEBRIS_PREFIXES):
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
                removed.append(entry)
        if any(mart.iterdir()) and not registered(mart.name):
            raise LakeMartConflict(
                f"the lake folder {mart} holds files but the Spark metastore has no table marts.{mart.name}: a build "
                "killed while it committed, or a lake written by another metastore; move the folder away to rebuild "
                "the mart from the raw lake (the days it held are rebuilt by a backfill), or restore the metastore "
                "of lake.root")
    return removed


def bootstrap_lake(settings: Settings) -> dict[str, int]:
    """Before a call without a window (the seeds): fresh snapshots of the whole-table raw tables (the price files
    the reference job just landed), and a schema-only partition for every hourly table not yet in the lake (the
    sources' views need a schema before the first day is exported; the first day's export replaces it)."""
    from pipelines.days import first_day
    from pipelines.warehouse.lake import (
        HOURLY_TABLES,
        SNAPSHOT_TABLES,
        write_raw_partitions,
        write_raw_snapshot,
    )

    rows: dict[str, int] = {}
    if "://" in settings.lake_root:
        return rows  # an object-store lake is kept by the cluster's own landing job
    first = first_day(settings).day
    empty = [{"cluster": settings.clusters[0].name, "hour_ts": datetime(first.year, first.month, first.day)}]
    with open_warehouse(settings) as con:
        for table in SNAPSHOT_TABLES:
            rows[table] = write_raw_snapshot(con, settings.lake_root, table)
        for table in HOURLY_TABLES:
            if not any((Path(settings.lake_root) / "raw" / table).glob("cluster=*")):
                rows[table] = sum(write_raw_partitions(con, settings.lake_root, table, empty).values())
    return rows


def copy_lookups(settings: Settings, call: DbtCall) -> int:
    """Put the lookups model Spark built into the warehouse, where the extracts read it (rows copied)."""
    relation = next((e["data"]["node_info"].get("node_relation", {}) for e in call.events
                     if e["data"]["node_info"]["unique_id"].endswith(f".{LOOKUPS_MODEL}")), None)
    if not relation:
        return 0
    name = f"{relation.get('schema')}.{relation.get('alias') or LOOKUPS_MODEL}"
    frame = get_session(settings).table(name)
    with open_warehouse(settings) as con:
        rows = frame_to_duckdb(con, frame, "_spark_lookups")
        con.execute("create schema if not exists intermediate")
        con.execute(f"create or replace table {LOOKUPS_RELATION} as select * from _spark_lookups")  # noqa: S608
    return rows


def spark_build(settings: Settings, asset_name: str, args: list[str], target_path: Path,
                start: datetime | None = None, end: datetime | None = None, cluster: str | None = None,
                project_dir: Path | None = None, env: dict[str, str] | None = None) -> DbtCall:
    """One dbt asset's call on Spark: the window's raw days to the lake first (lookups and daily builds), then
    dbt, then what DuckDB needs of the result (the lookups model; the window's mart partitions). Before anything:
    the metastore's tables must live at the configured lake and warehouse folder (spark_metastore.py)."""
    if check_metastore_home(settings) is None:  # a metastore older than its record: read once through the session
        adopt_metastore(settings, get_session(settings))
    if asset_name in (LOOKUPS_ASSET, DAILY_ASSET) and start is not None and end is not None:
        lake_rows = export_window(settings, start, end, cluster)
        if asset_name == DAILY_ASSET:
            prune_lake_raw(settings, days_of_window(start, end)[-1])
    else:
        lake_rows = bootstrap_lake(settings)
    if asset_name == DAILY_ASSET:
        session = get_session(settings)
        clear_mart_debris(settings.lake_root, lambda mart: session.catalog.tableExists(f"marts.{mart}"))
    call = run_dbt(settings, args, target_path, project_dir, env)
    call.lake_rows = lake_rows
    if not call.success:
        return call
    if asset_name == LOOKUPS_ASSET:
        call.loaded = {LOOKUPS_MODEL: copy_lookups(settings, call)}
    elif asset_name == DAILY_ASSET and start is not None and end is not None and args[:1] == ["build"]:
        # (a `run` is the window's upstream views and tables, rebuilt before the build: no mart changed)
        call.loaded = load_marts(settings, target_path / "manifest.json", start, end, cluster)
    return call
