"""The Definitions use exactly the settings they are given: importing them changes nothing in the environment, and
the partitions start at the settings' first day (not a constant)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date

import dagster as dg

from pipelines import PROJECT_ROOT
from pipelines.settings import ScheduleSettings, Settings

FOREIGN = ("KUBELEDGER_WAREHOUSE", "KUBELEDGER_SERVING", "KUBELEDGER_CONFIG", "KUBELEDGER_DUCKDB_MEMORY",
           "KUBELEDGER_PARTITIONS_START", "DAGSTER_HOME", "DO_NOT_TRACK")


def test_importing_the_definitions_does_not_change_the_environment(tmp_path):
    code = ("import os, json; before = dict(os.environ); import pipelines.definitions as d; "
            "assert d.defs is not None; after = dict(os.environ); "
            "print(json.dumps(sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))))")
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**env, "PYTHONPATH": str(PROJECT_ROOT)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_partitions_start_at_the_settings_first_day(tmp_path):
    from pipelines.definitions import build_definitions

    settings = Settings(schedule=ScheduleSettings(start_date="2026-10-05"))
    defs = build_definitions(settings)
    graph = defs.resolve_asset_graph()
    for key, kind in ((["raw", "container_hours"], dg.HourlyPartitionsDefinition),
                      (["marts", "fct_allocation_daily"], dg.DailyPartitionsDefinition),
                      (["serving", "warehouse"], dg.DailyPartitionsDefinition)):
        partitions = graph.get(dg.AssetKey(key)).partitions_def
        assert isinstance(partitions, kind), key
        assert partitions.start.date() == date(2026, 10, 5), key
    first = defs.resolve_job_def("daily_warehouse").partitions_def.get_first_partition_key()
    assert first == "2026-10-05"
    assert defs.resolve_job_def("extract_hourly").partitions_def.get_first_partition_key() == "2026-10-05-00:00"
    # the blocking quality checks moved with their asset
    checks = [graph.get(k) for k in graph.asset_check_keys if k.name in ("hour_coverage", "reconciliation")]
    assert checks and all(c.partitions_def.get_first_partition_key() == "2026-10-05" for c in checks)
    # the reconciliation and no-negative dbt singular tests are asset checks on their mart
    names = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert ("marts/fct_allocation_daily", "assert_no_negative_amounts") in names
    assert ("marts/fct_allocation_daily", "assert_allocation_reconciles_with_assets") in names
    assert ("marts/fct_node_energy_daily", "assert_node_energy_reconciles") in names
    # another configuration in the same process gets its own start
    other = build_definitions(Settings(schedule=ScheduleSettings(start_date="2026-01-01")))
    assert other.resolve_job_def("daily_warehouse").partitions_def.get_first_partition_key() == "2026-01-01"


def test_the_daily_schedule_skips_days_before_the_first(tmp_path):
    from datetime import datetime

    from pipelines.definitions import build_definitions

    defs = build_definitions(Settings(schedule=ScheduleSettings(start_date="2026-11-27")))
    schedule = defs.resolve_schedule_def("daily_warehouse_yesterday")
    context = dg.build_schedule_context(scheduled_execution_time=datetime(2026, 11, 29, 1, 30),
                                       repository_def=defs.get_repository_def())
    builds = [r.partition_key for r in schedule.evaluate_tick(context).run_requests if r.partition_key]
    assert builds == ["2026-11-28", "2026-11-27"]


def test_every_op_that_opens_the_warehouse_takes_the_writer_pool():
    """DuckDB lets one process hold the file: a step without the pool fails with a lock error whenever it runs
    beside another (the UI backfill's asset checks did, intermittently)."""
    from pipelines.dagster_defs.resources import WRITER_POOL
    from pipelines.definitions import build_definitions

    graph = build_definitions(Settings(schedule=ScheduleSettings(start_date="2026-10-05"))).resolve_asset_graph()
    ops = {ad.node_def.name: ad.node_def.pool for ad in graph.assets_defs
           if ad.is_executable and "kubeledger" in ad.required_resource_keys}
    assert len(ops) >= 10, ops
    assert {name: pool for name, pool in ops.items() if pool != WRITER_POOL} == {}
