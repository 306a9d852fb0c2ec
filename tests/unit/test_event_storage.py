"""The CLI's SQLite event writes (pipelines/dagster_defs/event_storage.py) store what Dagster's own storage stores:
the same partitions materialised, readable by a plain instance on the same files; a failing batch leaves nothing
half-written and Dagster writes it again event by event."""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.events import (
    DagsterEvent,
    DagsterEventBatchMetadata,
    DagsterEventType,
    StepMaterializationData,
)
from dagster._core.events.log import EventLogEntry

from pipelines.dagster_defs.event_storage import (
    batched_event_writes,
    close_sqlite_connections,
    keep_sqlite_connections,
)


def _instance(home: Path) -> dg.DagsterInstance:
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(f"storage:\n  sqlite:\n    base_dir: {home / 'storage'}\n"
                                       "telemetry:\n  enabled: false\n")
    return dg.DagsterInstance.from_config(str(home))


def _entry(key: str, partition: str, run_id: str = "run1") -> EventLogEntry:
    event = DagsterEvent(DagsterEventType.ASSET_MATERIALIZATION.value, "job", event_specific_data=StepMaterializationData(
        dg.AssetMaterialization(asset_key=["raw", key], partition=partition)))
    return EventLogEntry(error_info=None, level=10, user_message="", run_id=run_id, timestamp=time.time(),
                         dagster_event=event, job_name="job")


def _write(instance: dg.DagsterInstance, key: str, partitions: list[str]) -> None:
    for i, p in enumerate(partitions):
        instance.handle_new_event(_entry(key, p), batch_metadata=DagsterEventBatchMetadata(f"b-{key}",
                                                                                          i == len(partitions) - 1))


def test_batched_writes_store_what_dagster_stores(tmp_path: Path) -> None:
    hours = [f"2026-11-28-{h:02d}:00" for h in range(24)]
    plain = _instance(tmp_path / "plain")
    _write(plain, "a", hours)
    fast = _instance(tmp_path / "fast")
    assert keep_sqlite_connections(fast) and not keep_sqlite_connections(fast)  # patched once
    with batched_event_writes(size=10):  # 24 events: batches of 10, 10 and the last 4
        _write(fast, "a", hours)
    fast.store_event(_entry("b", hours[0]))  # a single event outside any batch
    close_sqlite_connections(fast)

    reader = _instance(tmp_path / "fast")  # Dagster's own storage reads the files the patched one wrote
    for inst in (plain, reader):
        assert inst.get_materialized_partitions(dg.AssetKey(["raw", "a"])) == set(hours)
        latest = inst.get_latest_materialization_event(dg.AssetKey(["raw", "a"]))
        assert latest is not None and latest.dagster_event.partition == hours[-1]
    assert reader.get_materialized_partitions(dg.AssetKey(["raw", "b"])) == {hours[0]}
    assert len(reader.get_records_for_run("run1").records) == 25


def test_failed_batch_rolls_back_and_is_written_one_by_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

    fast = _instance(tmp_path / "fast")
    keep_sqlite_connections(fast)
    real = SqliteEventLogStorage.store_event
    calls = {"n": 0}

    def flaky(self, event):  # the third write of the batch fails once
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk hiccup")
        return real(self, event)

    monkeypatch.setattr(SqliteEventLogStorage, "store_event", flaky)
    hours = [f"2026-11-28-{h:02d}:00" for h in range(5)]
    with batched_event_writes():
        _write(fast, "a", hours)
    # the batch rolled back (no duplicates of the first two) and Dagster stored the five one by one
    assert len(fast.get_records_for_run("run1").records) == 5
    assert fast.get_materialized_partitions(dg.AssetKey(["raw", "a"])) == set(hours)
    close_sqlite_connections(fast)


def test_the_schema_is_asked_once_per_table_and_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dagster asks the index file whether a table or an asset key column exists on every asset event (a new engine
    per has_table): the patched storage asks once per name that exists, and again for a name still missing."""
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

    asked: list[str] = []
    plain_has_table = SqliteEventLogStorage.has_table
    plain_has_col = SqliteEventLogStorage._has_asset_key_col_on_connection
    monkeypatch.setattr(SqliteEventLogStorage, "has_table",
                        lambda self, name: asked.append(name) or plain_has_table(self, name))
    monkeypatch.setattr(SqliteEventLogStorage, "_has_asset_key_col_on_connection",
                        lambda self, conn, name: asked.append(f"column {name}") or plain_has_col(self, conn, name))
    hours = [f"2026-11-28-{h:02d}:00" for h in range(24)]
    instance = _instance(tmp_path / "fast")
    keep_sqlite_connections(instance)
    with batched_event_writes(size=10):
        _write(instance, "a", hours)
    storage = instance.event_log_storage
    assert not storage.has_table("no_such_table") and not storage.has_table("no_such_table")
    close_sqlite_connections(instance)
    assert asked and len(asked) == len(set(asked)) + 1, asked  # each name once; the missing table twice
    assert asked.count("no_such_table") == 2
    assert instance.get_materialized_partitions(dg.AssetKey(["raw", "a"])) == set(hours)
