"""Dagster's run and event storage, bounded: what is kept of each run, and for how long.

Measured before this rule (one demo cluster, SQLite): one `kubeledger materialize` day writes ~6.5 MB of events
(the hourly extract stores one materialisation and one "planned" event per asset and hour: 10 assets x 24 h;
the daily build ~200 step outputs, ~140 check evaluations and their "planned" rows), and SQLite stores every
asset event twice (the run's own file `history/runs/<run id>.db` and `history/runs/index.db`). A 30-day backfill
after one day left 125 MB (index.db 71 MB, the backfill's extract run 41 MB: 7,200 materialisations + 7,200
planned events). Dagster's own `retention:` setting covers schedule and sensor ticks only, so nothing was ever
removed but the runs `prune_runs` deleted, SQLite never gave the freed pages back, and the asset check rows
("planned" for every partition of a ranged run, 6 MB after the backfill) were never removed at all.

The rule, applied after each good publish (`serving_warehouse` calls `prune_runs`), oldest runs first:

1. A finished run keeps its full event log for `RUN_DETAIL_DAYS` (7) days; so does the newest run of each job
   until `keep_days` (`kubeledger status` reads its checks and failure).
2. After that the run is compacted: it keeps its run record, its run and step lifecycle events (start, success,
   failure, skipped) and its asset materialisations (with SQLite those stay in `index.db`, the asset history
   every asset query reads, and leave the run's own file); step outputs, "planned" events, check evaluations, logs and
   engine events go, as do its asset check rows that are "planned" or superseded by a newer evaluation of the
   same check and partition (the newest evaluation of each check and partition stays).
3. After `keep_days` (`warehouse.raw_retention_days`, default 35) the run is deleted with its events, its SQLite
   event file and its compute-log folder, unless it holds the latest materialisation of a daily partition (marts
   and serving, kept indefinitely): that run stays, compacted, so the UI and a "missing" backfill never see a
   built day as missing. Extract runs hold hourly partitions, whose raw rows the same retention removes.
4. SQLite: a compacted run's file is vacuumed; `index.db` is vacuumed when over a quarter of it (and at least
   `VACUUM_MIN_FREE_BYTES`) is free pages. PostgreSQL reuses freed space through its autovacuum.

So the storage holds, per cluster: the last week in full (~7 MB a day for the demo cluster), the hourly
materialisations of the raw retention window (~1.3 MB a day, in index.db) and ~0.5 MB per older published day
(its 59 latest materialisations). tests/integration/test_dagster_storage_bound.py simulates 90 daily runs with
the CLI's event volumes: 125 MB (the rule before this one: 401 MB, growing with every day), held under
`STORAGE_BOUND_90_DAYS_MB` (140 MB).
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any

PRUNE_BATCH = 200  # runs deleted (and runs compacted) per call at most: the next publish continues
RUN_DETAIL_DAYS = 7  # full event logs are kept this long
COMPACTED_TAG = "kubeledger/compacted"  # set on a run whose event log was compacted
VACUUM_MIN_FREE_BYTES = 4 * 1024 * 1024
STORAGE_BOUND_90_DAYS_MB = 140  # the stated bound (README "Operating it"), held by the 90-day test

# event types a compacted run keeps: what the run page's status and timeline and the asset history are made of
KEPT_EVENT_TYPES = frozenset({
    "PIPELINE_ENQUEUED", "PIPELINE_DEQUEUED", "PIPELINE_STARTING", "PIPELINE_START", "PIPELINE_SUCCESS",
    "PIPELINE_FAILURE", "PIPELINE_CANCELING", "PIPELINE_CANCELED",
    "RUN_ENQUEUED", "RUN_DEQUEUED", "RUN_STARTING", "RUN_START", "RUN_SUCCESS", "RUN_FAILURE", "RUN_CANCELING",
    "RUN_CANCELED",
    "STEP_START", "STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED", "STEP_UP_FOR_RETRY", "STEP_RESTARTED",
    "ASSET_MATERIALIZATION",
})


def prune_runs(instance: Any, keep_days: int, *, detail_days: int = RUN_DETAIL_DAYS, limit: int = PRUNE_BATCH,
               now: datetime | None = None, log: Callable[[str], Any] | None = None) -> list[str]:
    """Apply the rule above; returns the ids of the deleted runs (oldest first). At most `limit` runs are deleted
    and `limit` compacted per call."""
    import dagster as dg
    from dagster._core.storage.dagster_run import FINISHED_STATUSES

    now = now or datetime.now(UTC)
    delete_before = now - timedelta(days=keep_days)
    detail_before = now - timedelta(days=min(detail_days, keep_days))
    records = instance.get_run_records(filters=dg.RunsFilter(statuses=list(FINISHED_STATUSES),
                                                             created_before=detail_before), ascending=True)
    newest = _newest_run_per_job(instance, {r.dagster_run.job_name for r in records})
    deleted: list[str] = []
    compacted: list[str] = []
    for record in records:
        run = record.dagster_run
        old = record.create_timestamp.astimezone(UTC) < delete_before
        if old and len(deleted) < limit and not _holds_latest_day(instance, run.run_id):
            delete_run(instance, run.run_id)  # past retention, even a job's newest run: nothing reads it then
            deleted.append(run.run_id)
        elif run.run_id in newest:
            continue  # `kubeledger status` reads the newest run's checks and failure: kept in full
        elif run.tags.get(COMPACTED_TAG) != "1" and len(compacted) < limit:
            compact_run(instance, run.run_id)
            compacted.append(run.run_id)
    vacuum_sqlite(instance, compacted)
    if (deleted or compacted) and log:
        log(f"  Dagster runs: deleted {len(deleted)} older than {keep_days} days, compacted {len(compacted)} "
            f"older than {detail_days} days")
    return deleted


def _newest_run_per_job(instance: Any, jobs: set[str]) -> set[str]:
    import dagster as dg

    newest = set()
    for job in jobs:
        records = instance.get_run_records(filters=dg.RunsFilter(job_name=job), limit=1)
        newest.update(r.dagster_run.run_id for r in records)
    return newest


def _is_day_key(partition: str | None) -> bool:
    return bool(partition) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", partition or "") is not None


def _tables() -> tuple[Any, Any, Any]:
    from dagster._core.storage.event_log.schema import (
        AssetCheckExecutionsTable,
        AssetEventTagsTable,
        SqlEventLogStorageTable,
    )

    return SqlEventLogStorageTable, AssetEventTagsTable, AssetCheckExecutionsTable


def _holds_latest_day(instance: Any, run_id: str) -> bool:
    """Whether a daily partition this run materialised has no later materialisation (one query on the asset
    index: storage ids are comparable there, not across SQLite's per-run files)."""
    import sqlalchemy as sa

    events, _tags, _checks = _tables()
    mine, later = events.alias("mine"), events.alias("later")
    superseded = sa.exists().where(later.c.asset_key == mine.c.asset_key, later.c.partition == mine.c.partition,
                                   later.c.dagster_event_type == "ASSET_MATERIALIZATION", later.c.id > mine.c.id)
    query = sa.select(mine.c.partition).where(
        mine.c.run_id == run_id, mine.c.dagster_event_type == "ASSET_MATERIALIZATION",
        mine.c.partition.is_not(None), ~superseded)
    with instance.event_log_storage.index_connection() as conn:
        return any(_is_day_key(row[0]) for row in conn.execute(query))


def compact_run(instance: Any, run_id: str) -> None:
    """Keep the run's record, lifecycle events and materialisations; drop the rest of its events and its
    planned or superseded asset check rows; tag the run as compacted."""
    import sqlalchemy as sa

    events, tags, checks = _tables()
    storage = instance.event_log_storage
    sharded = getattr(storage, "path_for_shard", None) is not None  # SQLite: a file per run plus index.db

    def dropped(kept: frozenset[str]) -> Any:
        return sa.and_(events.c.run_id == run_id, sa.or_(events.c.dagster_event_type.is_(None),
                                                         events.c.dagster_event_type.not_in(sorted(kept))))

    # with SQLite the run's own file also loses its materialisations: index.db, which every asset query reads,
    # keeps them (the run page then shows the run's and steps' events only)
    run_kept = KEPT_EVENT_TYPES - {"ASSET_MATERIALIZATION"} if sharded else KEPT_EVENT_TYPES
    for connect, kept in ((lambda: storage.run_connection(run_id), run_kept),
                          (storage.index_connection, KEPT_EVENT_TYPES)):
        with connect() as conn:  # the same database twice with PostgreSQL: the second pass finds nothing
            drop = dropped(kept)
            observations = [row[0] for row in conn.execute(
                sa.select(events.c.id).where(drop, events.c.dagster_event_type == "ASSET_OBSERVATION"))]
            conn.execute(events.delete().where(drop))
            if observations:
                conn.execute(tags.delete().where(tags.c.event_id.in_(observations)))
    _drop_check_rows(storage, run_id)
    instance.add_run_tags(run_id, {COMPACTED_TAG: "1"})


def _drop_check_rows(storage: Any, run_id: str) -> None:
    """The run's asset check rows that are "planned" (its run is over) or have a newer row for the same check and
    partition; Dagster's own run deletion leaves them all."""
    import sqlalchemy as sa

    _events, _tags, checks = _tables()
    newer = checks.alias("newer")
    same_partition = sa.or_(newer.c.partition == checks.c.partition,
                            sa.and_(newer.c.partition.is_(None), checks.c.partition.is_(None)))
    superseded = sa.exists().where(newer.c.asset_key == checks.c.asset_key,
                                   newer.c.check_name == checks.c.check_name, same_partition,
                                   newer.c.execution_status != "PLANNED", newer.c.id > checks.c.id)
    with storage.index_connection() as conn:
        conn.execute(checks.delete().where(checks.c.run_id == run_id,
                                           sa.or_(checks.c.execution_status == "PLANNED", superseded)))


def delete_run(instance: Any, run_id: str) -> None:
    """Dagster's run deletion (the run and its events), plus what it leaves: the run's asset check rows that are
    planned or superseded, its SQLite events file and its compute-log folder."""
    instance.delete_run(run_id)
    _drop_check_rows(instance.event_log_storage, run_id)
    _drop_sqlite_shard(instance, run_id)
    with suppress(Exception):  # a compute log manager without local files (or another kind) keeps nothing here
        base = getattr(instance.compute_log_manager, "_base_dir", None)
        if base and os.path.isdir(os.path.join(base, run_id)):
            shutil.rmtree(os.path.join(base, run_id), ignore_errors=True)


def _drop_sqlite_shard(instance: Any, run_id: str) -> None:
    """SQLite keeps one events file per run, emptied but not removed by delete_run: remove it."""
    storage = instance.event_log_storage
    path_for_shard = getattr(storage, "path_for_shard", None)
    if path_for_shard is None:
        return
    engines = getattr(storage, "_kubeledger_engines", None)  # pipelines/dagster_defs/event_storage.py
    cached = engines.pop(run_id, None) if engines is not None else None
    if cached is not None:
        cached[1].dispose()
    base = path_for_shard(run_id)
    for suffix in ("", "-wal", "-shm"):
        with suppress(FileNotFoundError):
            os.unlink(base + suffix)
    getattr(storage, "_initialized_dbs", set()).discard(run_id)


def vacuum_sqlite(instance: Any, compacted: list[str]) -> None:
    """Give SQLite's free pages back: each compacted run's file, and the index when a quarter of it is free."""
    storage = instance.event_log_storage
    path_for_shard = getattr(storage, "path_for_shard", None)
    if path_for_shard is None:
        return
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME

    for shard in [*compacted, INDEX_SHARD_NAME]:
        path = path_for_shard(shard)
        if os.path.exists(path):
            _vacuum(path, always=shard != INDEX_SHARD_NAME)


def _vacuum(path: str, always: bool) -> None:
    con = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        pages, free, size = (con.execute(f"PRAGMA {p}").fetchone()[0]
                             for p in ("page_count", "freelist_count", "page_size"))
        if free and (always or (free * size >= VACUUM_MIN_FREE_BYTES and free * 4 >= pages)):
            con.execute("VACUUM")
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.OperationalError:
        pass  # busy (the UI or the daemon writing): the next publish tries again
    finally:
        con.close()
