"""The same dbt project on Apache Spark (local mode, pyspark in this process) over the Parquet lake gives the marts
the DuckDB engine gives, and the dbt unit tests pass on Spark.

The day is the Prometheus scenario day (`kubeledger materialize` of every cluster the session's backfilled
Prometheus serves), built by the normal pipeline on DuckDB. Its raw tables are exported to a lake with
pipelines/warehouse/lake.py; the seeds with their data tests (`dbt build --select resource_type:seed`, as the
pipeline seeds apart from the daily build) and `dbt build` of the day (the daily build with the vars the pipeline
used for that day, the seeds excluded: they are loaded already) then run on the `spark` target through the group's
one dbtRunner (`spark_dbt`, tests/spark/conftest.py), so one JVM and one Spark session serve the module. The Spark
marts' Parquet files (<lake>/marts/<model>) are read back with DuckDB and compared with the DuckDB marts row for row
(tests/fixtures/spark_compare.py).

The demo day's parity is test_spark_kill.py's: the Spark lake of `kubeledger demo` with `engine: spark` against the
DuckDB engine's demo, with the same row comparison (one Spark build of the demo day for the group, not two).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.dagster_defs.dbt_args import daily_build_args, dbt_vars
from pipelines.settings import load_settings
from pipelines.warehouse.lake import export_raw_day
from tests.fixtures.pipeline_workdir import cli_args, cli_env
from tests.fixtures.prom_fleet import SHARED_NAMESPACE, write_price_sheet
from tests.fixtures.prom_scenario import DAY as PROM_DAY
from tests.fixtures.prom_scenario import SCRAPE_S
from tests.fixtures.spark_compare import assert_lake_marts_equal
from tests.fixtures.spark_dbt import SparkDbt, require_spark

pytestmark = pytest.mark.spark

SCENARIO_DAY: date = PROM_DAY.date()
WAREHOUSE = "warehouse:\n  path: wh/kubeledger.duckdb\n  serving_path: wh/serving.duckdb\n  parquet_path: wh/parquet\n"


@dataclass
class SparkDay:
    """One day built on both engines: the DuckDB warehouse and the Spark build's lake root."""

    warehouse: Path
    lake: Path


@pytest.fixture(scope="module")
def scenario_day(prometheus_scenario: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Prometheus scenario day built on DuckDB by `kubeledger materialize`: every cluster the session's
    Prometheus serves (small, big, the fleet pair with its spot node, load balancer and user price sheet, the
    legacy kube-state-metrics one), configured as tests/integration/test_prometheus_fleet.py configures its pair."""
    require_spark()
    wd = tmp_path_factory.mktemp("duckdb-scenario")
    write_price_sheet(wd / "prices.csv")
    clusters = "".join(f"""
  - name: {c}
    source: prometheus
    prometheus: {{url: "{prometheus_scenario.url}", cluster_label: cluster, cluster_label_value: {c},
                  scrape_interval_s: {SCRAPE_S}, retries: 1, timeout_s: 60}}""" for c in sorted(prometheus_scenario.expected))
    (wd / "kubeledger.yaml").write_text(f"""{WAREHOUSE}clusters:{clusters}
carbon: {{provider: none}}
schedule: {{start_date: "2025-01-01"}}  # the scenario's day is older than the default first day
pricing: {{instance_sheet: prices.csv}}
sharing: {{shared_namespaces: [{SHARED_NAMESPACE}], monthly_overhead_usd: 0.0}}
""")
    proc = subprocess.run(cli_args(wd, "materialize", "--date", SCENARIO_DAY.isoformat()), cwd=wd, env=cli_env(),
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return wd


def _build_on_spark(dbt: SparkDbt, workdir: Path, day: date, name: str) -> SparkDay:
    """Export the day's raw tables from the DuckDB warehouse to a fresh lake, load the seeds (with their data tests)
    and run the daily build of that day on Spark with the dbt vars the pipeline used (the workdir's
    kubeledger.yaml)."""
    warehouse = workdir / "wh" / "kubeledger.duckdb"
    lake = dbt.tmp / f"lake-{name}"
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        exported = export_raw_day(con, lake, day)
    finally:
        con.close()
    assert exported["container_hours"] > 0
    os.environ["KUBELEDGER_LAKE"] = str(lake)
    dbt("seed", ["build", "--select", "resource_type:seed"])  # the day's build below excludes them
    start = datetime(day.year, day.month, day.day)
    variables = dbt_vars(load_settings(workdir / "kubeledger.yaml"), start, start + timedelta(days=1))
    dbt(f"build {name}", [*daily_build_args(variables), "--exclude", "resource_type:seed"])
    return SparkDay(warehouse, lake)


@pytest.fixture(scope="module")
def spark_scenario(scenario_day: Path, spark_dbt: SparkDbt) -> SparkDay:
    return _build_on_spark(spark_dbt, scenario_day, SCENARIO_DAY, "scenario")


def test_marts_equal_duckdb(spark_scenario: SparkDay) -> None:
    print("\n".join(assert_lake_marts_equal(spark_scenario.warehouse, spark_scenario.lake)))


def test_dbt_unit_tests_pass_on_spark(spark_dbt: SparkDbt, spark_scenario: SparkDay) -> None:
    dbt = spark_dbt
    results = dbt("unit", ["test", "--select", "test_type:unit"])
    assert results, "no dbt unit test ran"
    assert all(r.node.resource_type == "unit_test" for r in results)
    print(f"{len(results)} dbt unit tests passed on Spark")
