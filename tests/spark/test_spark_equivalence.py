"""The same dbt project on Apache Spark (local mode, pyspark in this process) over the Parquet lake gives the marts
the DuckDB engine gives, and the dbt unit tests pass on Spark.

Two days, each built by the normal pipeline on DuckDB: the demo day (`kubeledger demo`) and the Prometheus scenario
day (`kubeledger materialize` of every cluster the session's backfilled Prometheus serves). Each day's raw tables
are exported to its own lake with pipelines/warehouse/lake.py; the seeds with their data tests (once, `dbt build
--select resource_type:seed`, as the pipeline seeds apart from the daily build) and `dbt build` of the day (the
daily build with the vars the pipeline used for that day, the seeds excluded: they are loaded already) then run on
the `spark` target through the group's one dbtRunner (`spark_dbt`, tests/spark/conftest.py), so one JVM and one
Spark session serve the module; between the days the session's databases other than the seeds are dropped
(the marts are external tables at the first lake: dropping them leaves its files). The Spark marts' Parquet files
(<lake>/marts/<model>) are read back with DuckDB and compared with the DuckDB marts row for row: keys exactly,
doubles to 1e-9 relative, JSON text as JSON values (Spark writes 1.0E8 where DuckDB writes 100000000.0).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
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
from tests.fixtures.spark_dbt import SparkDbt, require_spark

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
DAY = date(2026, 11, 28)
SCENARIO_DAY: date = PROM_DAY.date()
WAREHOUSE = "warehouse:\n  path: wh/kubeledger.duckdb\n  serving_path: wh/serving.duckdb\n  parquet_path: wh/parquet\n"
REL_TOL = 1e-9
ABS_TOL = 1e-12
# An idle row whose energy is a round-off residue (|energy_kwh| ~1e-17 kWh, a difference that is zero in exact
# arithmetic) has an intensity = weight / residue that depends on the summation order, on DuckDB as on Spark
# (the mart comparisons before/after a change skip the column for the same reason): compared only where the
# energy is real.
RATIO_OF_ENERGY = {"carbon_intensity_g_per_kwh": "energy_kwh"}


@dataclass
class SparkDay:
    """One day built on both engines: the DuckDB warehouse and the Spark build's lake root."""

    warehouse: Path
    lake: Path


def _kubeledger_demo(workdir: Path) -> None:
    env = {**os.environ, "DO_NOT_TRACK": "1", "DAGSTER_HOME": str(workdir / "dh"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("KUBELEDGER_WAREHOUSE", None)
    (workdir / "dh").mkdir()
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "--config", str(workdir / "kubeledger.yaml"), "demo",
                           "--date", DAY.isoformat()], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


@pytest.fixture(scope="module")
def demo_day(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo day built on DuckDB by the CLI: its workdir (kubeledger.yaml, wh/kubeledger.duckdb)."""
    require_spark()
    wd = tmp_path_factory.mktemp("duckdb-demo")
    (wd / "kubeledger.yaml").write_text(WAREHOUSE)
    _kubeledger_demo(wd)
    return wd


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
    """Export the day's raw tables from the DuckDB warehouse to a fresh lake and run the daily build of that day
    on Spark with the dbt vars the pipeline used (the workdir's kubeledger.yaml). The session keeps its metastore,
    so the relations of a previous day's build (marts registered at the other lake's location, recorded history
    of other clusters) are dropped first; the seeds are loaded once."""
    warehouse = workdir / "wh" / "kubeledger.duckdb"
    lake = dbt.tmp / f"lake-{name}"
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        exported = export_raw_day(con, lake, day)
    finally:
        con.close()
    assert exported["container_hours"] > 0
    os.environ["KUBELEDGER_LAKE"] = str(lake)
    if "seed" in dbt.timings:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.getOrCreate()
        for (db,) in spark.sql("show databases").collect():
            if db not in ("default", "seeds"):
                spark.sql(f"drop database {db} cascade")
    else:  # the seeds and their data tests, once for the session (the day builds below exclude them)
        dbt("seed", ["build", "--select", "resource_type:seed"])
    start = datetime(day.year, day.month, day.day)
    variables = dbt_vars(load_settings(workdir / "kubeledger.yaml"), start, start + timedelta(days=1))
    dbt(f"build {name}", [*daily_build_args(variables), "--exclude", "resource_type:seed"])
    return SparkDay(warehouse, lake)


@pytest.fixture(scope="module")
def spark_demo(demo_day: Path, spark_dbt: SparkDbt) -> SparkDay:
    return _build_on_spark(spark_dbt, demo_day, DAY, "demo")


@pytest.fixture(scope="module")
def spark_scenario(scenario_day: Path, spark_dbt: SparkDbt, spark_demo: SparkDay) -> SparkDay:
    # after the demo day's build (which loads the seeds), so each build sees only its own day's relations
    return _build_on_spark(spark_dbt, scenario_day, SCENARIO_DAY, "scenario")


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= max(ABS_TOL, REL_TOL * max(abs(a), abs(b)))
    if isinstance(a, str) and isinstance(b, str) and a != b and a[:1] in "[{" and b[:1] in "[{":
        try:
            return _same(json.loads(a), json.loads(b))
        except ValueError:
            return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _mart_rows(con: duckdb.DuckDBPyConnection, relation: str, columns: list[str], keys: list[str]) -> list[tuple]:
    order = ", ".join(f"{c} nulls first" for c in keys)
    return con.execute(f"select {', '.join(columns)} from {relation} order by {order}").fetchall()  # noqa: S608


@pytest.mark.parametrize("day", ["demo", "scenario"])
def test_marts_equal_duckdb(day: str, request: pytest.FixtureRequest) -> None:
    built: SparkDay = request.getfixturevalue(f"spark_{day}")
    lake = built.lake
    con = duckdb.connect(str(built.warehouse), read_only=True)
    try:
        marts = [r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'marts' and table_type = 'BASE TABLE'"
            " order by 1").fetchall()]
        assert "fct_allocation_daily" in marts
        report = []
        for mart in marts:
            files = lake / "marts" / mart
            assert files.is_dir(), f"{mart}: Spark wrote no {files}"
            pattern = f"{files}/*/*/*.parquet".replace("'", "''")
            con.execute(
                f"create or replace temp view spark_{mart} as select * from read_parquet('{pattern}', "  # noqa: S608
                "hive_partitioning = true, hive_types = {'cluster': varchar, 'usage_date': date})")
            described = con.execute(f"describe marts.{mart}").fetchall()
            columns = [r[0] for r in described]
            spark_columns = [r[0] for r in con.execute(f"describe spark_{mart}").fetchall()]
            assert sorted(spark_columns) == sorted(columns), f"{mart}: columns differ"
            # keys: every column that is not a double (text, dates, timestamps, flags, integers), then the doubles
            keys = [r[0] for r in described if r[1] != "DOUBLE"] + [r[0] for r in described if r[1] == "DOUBLE"]
            expected = _mart_rows(con, f"marts.{mart}", columns, keys)
            actual = _mart_rows(con, f"spark_{mart}", columns, keys)
            assert len(actual) == len(expected), f"{mart}: {len(actual)} rows on Spark, {len(expected)} on DuckDB"
            worst = 0.0
            for e_row, a_row in zip(expected, actual, strict=True):
                e_by, a_by = dict(zip(columns, e_row, strict=True)), dict(zip(columns, a_row, strict=True))
                for col, e, a in zip(columns, e_row, a_row, strict=True):
                    energy = RATIO_OF_ENERGY.get(col)
                    if energy in e_by and max(abs(e_by[energy] or 0), abs(a_by[energy] or 0)) < ABS_TOL:
                        continue
                    assert _same(e, a), f"{mart}.{col}: DuckDB {e!r} vs Spark {a!r}\nrow {e_row}\nvs  {a_row}"
                    if isinstance(e, float) and isinstance(a, float) and max(abs(e), abs(a)) > ABS_TOL:
                        worst = max(worst, abs(e - a) / max(abs(e), abs(a)))
            report.append(f"{mart}: {len(expected)} rows, max rel diff {worst:.1e}")
        print("\n".join(report))
    finally:
        con.close()


def test_dbt_unit_tests_pass_on_spark(spark_dbt: SparkDbt, spark_demo: SparkDay) -> None:
    dbt = spark_dbt
    results = dbt("unit", ["test", "--select", "test_type:unit"])
    assert results, "no dbt unit test ran"
    assert all(r.node.resource_type == "unit_test" for r in results)
    print(f"{len(results)} dbt unit tests passed on Spark")
