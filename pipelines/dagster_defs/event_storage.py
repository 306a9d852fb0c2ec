"""Cheaper SQLite event writes for the CLI's own process.

Dagster's SQLite event log opens a new engine and connection for every event it stores and closes it after one
transaction. A ranged run writes one materialisation (plus one "planned" event) per asset and partition: a one-day
extract of the demo writes ~500 events, a 30-day backfill ~15,000. Each write then pays a connect, a commit with an
fsync of the write-ahead log, and, when the connection closes, a checkpoint with an fsync of the database file:
profiled, that was over 40 % of a one-day `kubeledger materialize`.

`keep_sqlite_connections(instance)` makes the instance this process uses keep one connection per shard file open
(still one transaction per event, under the storage's own lock) with `synchronous=NORMAL`, SQLite's documented
setting for WAL databases: a commit no longer waits for the disk; a power cut can lose the newest events, never
corrupt the file (the runs are idempotent: a lost event at most makes a partition look unbuilt until re-run).
With `batched_event_writes()` around the runs, Dagster hands the events of one ranged output (one per partition)
and the run's "planned" events over as batches (its DAGSTER_EVENT_BATCH_SIZE mechanism), and each batch is
written in one transaction per file, the same rows as one by one; a failed batch rolls back and Dagster writes it
again event by event. The daemon and the UI keep Dagster's own storage; the files and their schema are the same.
"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.pool import StaticPool

BATCH_ENV = "DAGSTER_EVENT_BATCH_SIZE"
EVENT_BATCH_SIZE = 1000  # events per transaction at most (one ranged output's partitions, the planned events)


def keep_sqlite_connections(instance: Any) -> bool:
    """Patch the instance's SQLite event log storage (no-op for any other storage); True when patched."""
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
        INDEX_SHARD_NAME,
        SqliteEventLogStorage,
    )
    from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS

    storage = instance.event_log_storage
    if not isinstance(storage, SqliteEventLogStorage) or getattr(storage, "_kubeledger_engines", None) is not None:
        return False
    engines: dict[str, tuple[str, sa.Engine]] = {}
    engines_lock = threading.Lock()
    storage._kubeledger_engines = engines
    storage._kubeledger_batch = None  # {shard: connection in the batch's transaction} while a batch is written
    storage._db_lock = threading.RLock()  # held across a batch, and again by each write inside it

    def engine_for(self: Any, shard: str) -> sa.Engine:
        with engines_lock:
            path = self.path_for_shard(shard)
            cached = engines.get(shard)
            if cached is not None and os.path.exists(path):
                return cached[1]
            if cached is not None:  # the file was removed (a pruned run): start afresh, as Dagster would
                cached[1].dispose()
                self._initialized_dbs.discard(shard)
            engine = sa.create_engine(self.conn_string_for_shard(shard), poolclass=StaticPool,
                                      connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS,
                                                    "check_same_thread": False})
            sa.event.listen(engine, "connect", _pragmas)
            engines[shard] = (path, engine)
            return engine

    def ready_engine(self: Any, shard: str) -> sa.Engine:
        engine = engine_for(self, shard)
        if shard not in self._initialized_dbs:
            self._initdb(engine)
            self._initialized_dbs.add(shard)
        return engine

    @contextmanager
    def _connect(self: Any, shard: str) -> Iterator[sa.Connection]:
        # the same shape as SqliteEventLogStorage._connect, with the engine (and its one connection) kept
        with self._db_lock:
            open_conn = (self._kubeledger_batch or {}).get(shard)
            if open_conn is not None:  # inside store_event_batch: the batch's transaction
                yield open_conn
                return
            with ready_engine(self, shard).connect() as conn:
                with conn.begin():
                    yield conn

    def store_event_batch(self: Any, events: list[Any]) -> None:
        with self._db_lock, ExitStack() as stack:
            batch: dict[str, sa.Connection] = {}
            for shard in sorted({e.run_id for e in events}) + [INDEX_SHARD_NAME]:
                conn = stack.enter_context(ready_engine(self, shard).connect())
                stack.enter_context(conn.begin())  # commits when the block ends, rolls back on an error
                batch[shard] = conn
            self._kubeledger_batch = batch
            try:
                for event in events:
                    SqliteEventLogStorage.store_event(self, event)
            finally:
                self._kubeledger_batch = None

    # Dagster asks the index file's schema on every asset event (has_table opens a new engine and connection each
    # time; the asset key columns are read by reflection): in a 30-day backfill that was 7 s of 47 (py-spy). A table
    # or column found stays: nothing in this process drops one (a migration only adds them), so only a hit is kept
    known: set[tuple[str, str]] = set()

    def remembered(kind: str, name: str, ask: Callable[[], bool]) -> bool:
        if (kind, name) not in known and ask():
            known.add((kind, name))
        return (kind, name) in known

    def has_table(self: Any, table_name: str) -> bool:
        return remembered("table", table_name, lambda: SqliteEventLogStorage.has_table(self, table_name))

    def _has_asset_key_col_on_connection(self: Any, conn: sa.Connection, column_name: str) -> bool:
        return remembered("asset_keys column", column_name,
                          lambda: SqliteEventLogStorage._has_asset_key_col_on_connection(self, conn, column_name))

    storage._connect = types.MethodType(_connect, storage)
    storage.store_event_batch = types.MethodType(store_event_batch, storage)
    storage.has_table = types.MethodType(has_table, storage)
    storage._has_asset_key_col_on_connection = types.MethodType(_has_asset_key_col_on_connection, storage)
    return True


@contextmanager
def batched_event_writes(size: int = EVENT_BATCH_SIZE) -> Iterator[None]:
    """Let Dagster pass partitioned events as batches for the block (its DAGSTER_EVENT_BATCH_SIZE switch)."""
    saved = os.environ.get(BATCH_ENV)
    os.environ[BATCH_ENV] = str(size)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(BATCH_ENV, None)
        else:
            os.environ[BATCH_ENV] = saved


def _pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def close_sqlite_connections(instance: Any) -> None:
    """Close the connections `keep_sqlite_connections` kept (the last close checkpoints the WAL into the file)."""
    engines = getattr(instance.event_log_storage, "_kubeledger_engines", None) or {}
    for _path, engine in list(engines.values()):
        engine.dispose()
    engines.clear()
