"""The one Definitions loads with the expected assets, checks, jobs and schedules."""

from datetime import datetime

import dagster as dg

from pipelines.definitions import defs

EXPECTED_PREFIXES = {"raw", "seeds", "staging", "intermediate", "marts", "serving"}


def test_definitions_load_with_the_asset_graph():
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {k.split("/")[0] for k in keys} == EXPECTED_PREFIXES
    for key in ("raw/container_hours", "raw/node_hours", "raw/k8s_objects", "raw/carbon_intensity_hours",
                "raw/boavizta_impacts", "raw/price_sheet", "marts/fct_allocation_daily",
                "marts/fct_allocation_shared_daily", "marts/fct_asset_daily", "marts/fct_cluster_daily",
                "marts/fct_node_energy_daily", "serving/warehouse", "seeds/opencost_prices"):
        assert key in keys
    jobs = {j.name for j in defs.resolve_all_job_defs()}
    assert {"extract_hourly", "daily_warehouse", "reference"} <= jobs


def test_partitions_hourly_extract_daily_build():
    graph = defs.resolve_asset_graph()
    raw = graph.get(dg.AssetKey(["raw", "container_hours"]))
    mart = graph.get(dg.AssetKey(["marts", "fct_allocation_daily"]))
    assert isinstance(raw.partitions_def, dg.HourlyPartitionsDefinition)
    assert isinstance(mart.partitions_def, dg.DailyPartitionsDefinition)


def test_daily_schedule_materialises_yesterday_and_late_days():
    schedule = defs.resolve_schedule_def("daily_warehouse_yesterday")
    context = dg.build_schedule_context(scheduled_execution_time=datetime(2026, 11, 29, 1, 30),
                                       repository_def=defs.get_repository_def())
    requests = list(schedule.evaluate_tick(context).run_requests)
    builds = [r.partition_key for r in requests if r.partition_key]
    assert builds == ["2026-11-28", "2026-11-27", "2026-11-26"]
    extracts = [r.tags["dagster/asset_partition_range_start"] for r in requests if not r.partition_key]
    assert extracts == ["2026-11-28-00:00", "2026-11-27-00:00", "2026-11-26-00:00"]
