"""Dagster's run and event storage stays bounded (pipelines/dagster_defs/run_retention.py).

90 days of `kubeledger materialize --date <yesterday>` for one cluster are simulated on a real SQLite instance
configured as the CLI configures it (dagster_home/dagster.yaml, the CLI's event writes), with the events one such
day writes, in number and size (measured on the demo cluster: ~7 MB): the hourly extract run's materialisation
and "planned" event per asset and hour (10 assets x 24 h), the daily build's 59 materialisations of the day's
partition, ~200 step outputs, 138 check evaluations with their "planned" rows and its step and run events. The
first day is written through Dagster's own event storage (~7 s); writing 89 more that way would take ten
minutes, so each later day is a copy of the first one's rows (its run file, its rows in the index, its tags and
asset check rows) with the run ids, the day and the timestamps changed, and its runs are created through Dagster
at the day's time. After each day the publish step's `prune_runs` runs, as in `serving_warehouse`. The storage must stay under
`STORAGE_BOUND_90_DAYS_MB`, every built day must still show as materialised, and the runs' own logs must keep what
the rule says they keep. Before the rule, the same 90 days left 401 MB (now 125 MB).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import tempfile
import uuid
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipelines import PROJECT_ROOT

pytestmark = pytest.mark.integration

DAYS = 90
KEEP_DAYS = 35  # warehouse.raw_retention_days' default
START = datetime(2026, 1, 1, tzinfo=UTC)
RAW = ["container_hours", "gpu_hours", "k8s_objects", "metric_coverage_hours", "namespace_hours", "node_hours",
       "pod_hours", "pod_volume_hours", "service_hours", "volume_hours"]
MODELS = 59  # materialisations of the day's partition in one daily build
STEP_OUTPUTS = 197
CHECKS = 138
STEPS = 10


def _storage_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in (home / "storage").rglob("*") if p.is_file())  # files, WAL included


class Day:
    """The runs and events one CLI day writes."""

    def __init__(self, instance, when: datetime) -> None:
        self.instance, self.when = instance, when

    def entry(self, run_id: str, job: str, step: str | None, event, message: str = ""):
        import dagster as dg

        self.when += timedelta(milliseconds=5)
        return dg.EventLogEntry(error_info=None, level=10, user_message=message, run_id=run_id,
                                timestamp=self.when.timestamp(), step_key=step, job_name=job, dagster_event=event)

    def event(self, kind, job: str, run_id: str, step: str | None, data, message: str):
        import dagster as dg
        from dagster._core.definitions.dependency import NodeHandle
        from dagster._core.execution.plan.handle import StepHandle

        handle = NodeHandle(step, None) if step else None
        return dg.DagsterEvent(
            event_type_value=kind.value, job_name=job, step_key=step, node_handle=handle,
            step_handle=StepHandle(handle) if handle else None, step_kind_value="COMPUTE" if step else None,
            logging_tags={"job_name": job, "op_name": step or "", "resource_fn_name": "None",
                          "resource_name": "None", "run_id": run_id, "step_key": step or ""},
            event_specific_data=data, message=message, pid=4242)

    def run(self, job: str, tags: dict[str, str], body) -> str:
        import dagster as dg
        from dagster._core.test_utils import freeze_time

        run_id = str(uuid.uuid4())
        with freeze_time(self.when):
            self.instance.add_run(dg.DagsterRun(job_name=job, run_id=run_id, status=dg.DagsterRunStatus.SUCCESS,
                                                tags=tags))
        kinds = dg.DagsterEventType
        entries = [self.entry(run_id, job, None, self.event(kinds.RUN_START, job, run_id, None, None, "start"))]
        entries += body(run_id)
        entries.append(self.entry(run_id, job, None, self.event(kinds.RUN_SUCCESS, job, run_id, None, None,
                                                                "Finished execution of run.")))
        self.instance.event_log_storage.store_event_batch(entries)
        return run_id

    def steps(self, run_id: str, job: str, step: str, inner: list) -> list:
        import dagster as dg
        from dagster._core.execution.plan.objects import StepSuccessData

        kinds = dg.DagsterEventType
        return ([self.entry(run_id, job, step, self.event(kinds.STEP_START, job, run_id, step, None,
                                                          f"Started execution of step \"{step}\"."))]
                + inner
                + [self.entry(run_id, job, step, self.event(kinds.STEP_SUCCESS, job, run_id, step,
                                                            StepSuccessData(duration_ms=1234.5),
                                                            f"Finished execution of step \"{step}\" in 1.23s."))])

    def materialisation(self, run_id: str, job: str, step: str, key, partition: str, metadata: dict):
        import dagster as dg
        from dagster._core.events import StepMaterializationData

        tags = {"dagster/code_version": run_id,
                "dagster/data_version": hashlib.sha256(f"{key}{partition}{run_id}".encode()).hexdigest()}
        mat = dg.AssetMaterialization(asset_key=key, partition=partition, metadata=metadata, tags=tags)
        return self.entry(run_id, job, step, self.event(dg.DagsterEventType.ASSET_MATERIALIZATION, job, run_id,
                                                        step, StepMaterializationData(mat),
                                                        f"Materialized value {key.to_user_string()}."))

    def planned(self, run_id: str, job: str, step: str, key, partition: str):
        import dagster as dg
        from dagster._core.events import AssetMaterializationPlannedData

        event = dg.DagsterEvent.build_asset_materialization_planned_event(
            job, step, AssetMaterializationPlannedData(key, partition=partition))
        return self.entry(run_id, job, step, event)

    def extract(self, day: datetime) -> str:
        import dagster as dg

        job, step = "extract_hourly", "raw_metrics"
        hours = [(day + timedelta(hours=h)).strftime("%Y-%m-%d-%H:%M") for h in range(24)]

        def body(run_id: str) -> list:
            keys = [dg.AssetKey(["raw", name]) for name in RAW]
            planned = [self.planned(run_id, job, step, k, h) for k in keys for h in hours]
            mats = [self.materialisation(run_id, job, step, k, h, {
                "rows": 3164, "hours": 24, "promql_queries": 0, "rows_per_cluster": {"demo": 6593},
                "warnings": [], "absent_series": {}}) for k in keys for h in hours]
            return planned + self.steps(run_id, job, step, mats)

        return self.run(job, {"kubeledger/range_start": hours[0], "kubeledger/range_end": hours[-1]}, body)

    def daily(self, day: datetime) -> str:
        import dagster as dg
        from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluationPlanned
        from dagster._core.events import StepOutputData
        from dagster._core.execution.plan.outputs import StepOutputHandle

        job, partition = "daily_warehouse", day.strftime("%Y-%m-%d")
        subset = dg.TimeWindowPartitionsDefinition(start="2025-01-01", cron_schedule="0 0 * * *", fmt="%Y-%m-%d")\
            .subset_with_partition_keys([partition])
        step_names = ["dbt_lookups", "raw__carbon_intensity_hours", "raw__boavizta_impacts", "dbt_daily",
                      "serving_warehouse", "serving_report", "check_coverage", "check_negative", "check_reconcile",
                      "check_estimated"][:STEPS]

        def dbt_meta(name: str) -> dict:
            return {"Execution Duration": 0.191642, "unique_id": f"model.kubeledger.{name}",
                    "invocation_id": str(uuid.uuid4()), "status": "success"}

        def body(run_id: str) -> list:
            keys = [dg.AssetKey(["marts" if i % 2 else "intermediate", f"model_number_{i:02d}_of_the_daily_build"])
                    for i in range(MODELS)]
            out = [self.planned(run_id, job, "dbt_daily", k, partition) for k in keys]
            for i in range(CHECKS):
                out.append(self.entry(run_id, job, "dbt_daily", self.event(
                    dg.DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED, job, run_id, None,
                    AssetCheckEvaluationPlanned(asset_key=keys[i % MODELS], check_name=f"not_null_model_{i:03d}_column_cluster",
                                                partitions_subset=subset),
                    f"daily_warehouse intends to execute asset check {i}")))
            inner = []
            for i in range(STEP_OUTPUTS):
                handle = StepOutputHandle("dbt_daily", f"marts__model_number_{i:03d}_of_the_daily_build")
                inner.append(self.entry(run_id, job, "dbt_daily", self.event(
                    dg.DagsterEventType.STEP_OUTPUT, job, run_id, "dbt_daily",
                    StepOutputData(handle, metadata=dbt_meta(f"model_{i}")),
                    f"Yielded output \"{handle.output_name}\" of type \"Nothing\". (Type check passed).")))
            inner += [self.materialisation(run_id, job, "dbt_daily", k, partition, dbt_meta(k.path[-1]))
                      for k in keys]
            for i in range(CHECKS):
                evaluation = dg.AssetCheckEvaluation(
                    asset_key=keys[i % MODELS], check_name=f"not_null_model_{i:03d}_column_cluster", passed=True,
                    metadata={**dbt_meta(f"test_{i}"), "dagster_dbt/failed_row_count": 0})
                inner.append(self.entry(run_id, job, "dbt_daily", self.event(
                    dg.DagsterEventType.ASSET_CHECK_EVALUATION, job, run_id, "dbt_daily", evaluation,
                    f"Asset check '{evaluation.check_name}' passed.")))
            inner += [self.entry(run_id, job, "dbt_daily", None, "Running dbt command: `dbt build --vars {...}` "
                                 + "x" * 300) for _ in range(15)]
            events = []
            for step in step_names:
                events += self.steps(run_id, job, step, inner if step == "dbt_daily" else [])
            return out + events

        return self.run(job, {"dagster/partition": partition}, body)


class Copies:
    """Later days as copies of the first day's rows: run files, index rows, tags and asset check rows."""

    def __init__(self, instance, home: Path, runs: dict[str, str], day: datetime) -> None:
        self.instance, self.home, self.runs, self.day = instance, home, runs, day
        self.shards = home / "storage" / "history" / "runs"
        self.templates: dict[str, tuple] = {}
        index = sqlite3.connect(self.shards / "index.db", timeout=30)
        for job, run_id in runs.items():
            template = home / f"template-{job}.db"
            src = sqlite3.connect(self.shards / f"{run_id}.db", timeout=30)
            src.execute(f"VACUUM INTO '{template}'")
            src.close()
            events = index.execute("select id, event, dagster_event_type, timestamp, step_key, asset_key, partition "
                                   "from event_logs where run_id = ? order by id", [run_id]).fetchall()
            ids = [row[0] for row in events]
            tags = index.execute("select event_id, asset_key, key, value, event_timestamp from asset_event_tags "
                                 "where event_id between ? and ? order by id", [min(ids), max(ids)]).fetchall()
            checks = index.execute(
                "select asset_key, check_name, partition, execution_status, evaluation_event, "
                "evaluation_event_timestamp, evaluation_event_storage_id, materialization_event_storage_id, "
                "create_timestamp from asset_check_executions where run_id = ? order by id", [run_id]).fetchall()
            run = instance.get_run_by_id(run_id)
            self.templates[job] = (run_id, template, events, tags, checks, dict(run.tags))
        index.close()

    def make(self, n: int, when: datetime) -> dict[str, str]:
        import dagster as dg
        from dagster._core.test_utils import freeze_time

        old_day = self.day.strftime("%Y-%m-%d")
        new_day = (self.day + timedelta(days=n)).strftime("%Y-%m-%d")
        shift = timedelta(days=n)

        def sub(text, old_run, new_run):
            return None if text is None else text.replace(old_run, new_run).replace(old_day, new_day)

        def later(ts):
            return None if ts is None else str(datetime.fromisoformat(ts) + shift)

        made = {}
        index = sqlite3.connect(self.shards / "index.db", timeout=30)
        try:
            for job, (old_run, template, events, tags, checks, run_tags) in self.templates.items():
                new_run = str(uuid.uuid4())
                with freeze_time(when):
                    self.instance.add_run(dg.DagsterRun(
                        job_name=job, run_id=new_run, status=dg.DagsterRunStatus.SUCCESS,
                        tags={k: sub(v, old_run, new_run) for k, v in run_tags.items()}))
                shard = self.shards / f"{new_run}.db"
                shutil.copyfile(template, shard)
                con = sqlite3.connect(shard)
                with con:
                    con.execute("update event_logs set run_id = ?, event = replace(replace(event, ?, ?), ?, ?), "
                                "partition = replace(partition, ?, ?), timestamp = datetime(timestamp, ?)",
                                [new_run, old_run, new_run, old_day, new_day, old_day, new_day, f"+{n} days"])
                con.close()
                with index:
                    ids = {}
                    for old_id, event, kind, ts, step, asset, partition in events:
                        cursor = index.execute(
                            "insert into event_logs (run_id, event, dagster_event_type, timestamp, step_key, "
                            "asset_key, partition) values (?, ?, ?, ?, ?, ?, ?)",
                            [new_run, sub(event, old_run, new_run), kind, later(ts), step, asset,
                             sub(partition, old_run, new_run)])
                        ids[old_id] = cursor.lastrowid
                    index.executemany(
                        "insert into asset_event_tags (event_id, asset_key, key, value, event_timestamp) "
                        "values (?, ?, ?, ?, ?)",
                        [(ids[e], a, k, sub(v, old_run, new_run), later(t)) for e, a, k, v, t in tags])
                    index.executemany(
                        "insert into asset_check_executions (asset_key, check_name, partition, run_id, "
                        "execution_status, evaluation_event, evaluation_event_timestamp, "
                        "evaluation_event_storage_id, materialization_event_storage_id, create_timestamp) "
                        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [(a, c, sub(p, old_run, new_run), new_run, st, sub(ev, old_run, new_run), later(et),
                          ids.get(es, es), ids.get(ms, ms), later(ct))
                         for a, c, p, st, ev, et, es, ms, ct in checks])
                made[job] = new_run
        finally:
            index.close()
        return made


@pytest.fixture
def home(tmp_path: Path):
    """In memory when the machine has /dev/shm: the same files and bytes, without waiting for the disk's syncs
    (the run takes half the time)."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=shm, prefix="kubeledger-test-") as folder:
        yield Path(folder)


def test_ninety_daily_runs_stay_under_the_stated_bound(home: Path, monkeypatch):
    import dagster as dg

    from pipelines.dagster_defs.event_storage import (
        batched_event_writes,
        close_sqlite_connections,
        keep_sqlite_connections,
    )
    from pipelines.dagster_defs.instance import prune_runs
    from pipelines.dagster_defs.run_retention import COMPACTED_TAG, STORAGE_BOUND_90_DAYS_MB

    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    (home / "dagster.yaml").write_text((PROJECT_ROOT / "dagster_home" / "dagster.yaml").read_text())
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("KUBELEDGER_DAGSTER_STORAGE", str(home / "storage"))
    daily_runs: list[str] = []
    extract_runs: list[str] = []
    with dg.DagsterInstance.get() as instance, batched_event_writes():
        keep_sqlite_connections(instance)  # as the CLI writes (pipelines/runs.py)
        try:
            first = Day(instance, START + timedelta(days=1, hours=1))  # yesterday's day, run at 01:00
            extract_runs.append(first.extract(START))
            daily_runs.append(first.daily(START))
            copies = Copies(instance, home, {"extract_hourly": extract_runs[0],
                                                 "daily_warehouse": daily_runs[0]}, START)
            prune_runs(instance, KEEP_DAYS, now=first.when)
            one_day = _storage_bytes(home)
            assert one_day > 5e6, f"one simulated day wrote {one_day / 1e6:.1f} MB, a real one ~7 MB"
            for n in range(1, DAYS):
                when = START + timedelta(days=n + 1, hours=1)
                made = copies.make(n, when)
                extract_runs.append(made["extract_hourly"])
                daily_runs.append(made["daily_warehouse"])
                prune_runs(instance, KEEP_DAYS, now=when + timedelta(minutes=5))
            size = _storage_bytes(home)
            print(f"one day {one_day / 1e6:.1f} MB; after {DAYS} days {size / 1e6:.1f} MB")
            assert size < STORAGE_BOUND_90_DAYS_MB * 1e6, (
                f"after {DAYS} daily runs Dagster's storage is {size / 1e6:.1f} MB, over the stated bound of "
                f"{STORAGE_BOUND_90_DAYS_MB} MB")

            # every built day still shows as built; the raw hours past retention no longer do
            mart = dg.AssetKey(["marts", "model_number_01_of_the_daily_build"])
            days = {(START + timedelta(days=n)).strftime("%Y-%m-%d") for n in range(DAYS)}
            assert instance.get_materialized_partitions(mart) == days
            # what stays of each run: the newest week in full, older ones compacted, old extract runs gone
            runs = {r.run_id: r for r in instance.get_runs()}
            assert set(daily_runs) <= set(runs) and len(set(extract_runs) & set(runs)) == KEEP_DAYS
            hours = instance.get_materialized_partitions(dg.AssetKey(["raw", "node_hours"]))
            assert len(hours) == 24 * KEEP_DAYS
            newest, old = daily_runs[-1], daily_runs[0]
            assert COMPACTED_TAG not in runs[newest].tags and runs[old].tags.get(COMPACTED_TAG) == "1"
            kinds = {e.dagster_event.event_type_value for e in instance.all_logs(old) if e.dagster_event}
            assert kinds == {"PIPELINE_START", "STEP_START", "STEP_SUCCESS", "PIPELINE_SUCCESS"}  # materialisations:
            assert instance.get_materialized_partitions(mart, before_cursor=None) >= {"2026-01-01"}  # in index.db
            assert len(instance.all_logs(newest, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)) == CHECKS
            latest = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=mart, asset_partitions=["2026-01-01"]), limit=1).records
            assert latest[0].run_id == old
        finally:
            close_sqlite_connections(instance)
