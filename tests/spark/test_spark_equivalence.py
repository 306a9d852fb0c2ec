"""The dbt project's own checks on Apache Spark (local mode, pyspark in this process): the seeds load with their data
tests passing, and every dbt unit test passes on Spark as on DuckDB.

The unit tests replace each model's inputs with their fixtures, but dbt reads the inputs' column types from the
relations themselves, so every model must exist on Spark first. They are made empty (`dbt run --empty`: each model's
query over empty inputs, which Spark's optimizer folds to nothing to execute) over a lake with one schema-only file
per raw table (an empty DuckDB warehouse with the raw tables of sql/raw, exported by pipelines/warehouse/lake.py):
the relations and their types are the real ones, at a fraction of a day's build.

On Spark the project's unit materialization (macros/unit_test_spark.sql) computes the tested model's rows once
into a table that the comparison reads; the tolerance probe (tests/fixtures/tolerance_probe.py) runs through it here too
(what must fail fails).

The engines' marts are compared on a built day by test_spark_kill.py (the demo day through the real CLI, with a
price sheet and shared namespaces, against the DuckDB engine's same day, row for row); the comparison at scale is
`python -m bench --engine spark` (BENCHMARKS.md), where its time is measured rather than waited for in CI.
"""

from __future__ import annotations

import os
from datetime import date

import duckdb
import pytest

from pipelines.warehouse.connection import ensure_raw_schema
from pipelines.warehouse.lake import export_raw_day
from tests.fixtures.spark_dbt import SparkDbt
from tests.fixtures.tolerance_probe import EXPECTED, probe_project, unit_test_statuses

pytestmark = pytest.mark.spark

EMPTY_DAY = date(2026, 1, 1)  # any day: the lake's files hold no row, only the raw tables' schemas


@pytest.fixture(scope="module")
def spark_models(spark_dbt: SparkDbt) -> list[str]:
    """Every model of the project on Spark, empty; the seeds loaded (with their data tests). Returns the models
    `dbt run --empty` built (each one's status checked by SparkDbt)."""
    lake = spark_dbt.tmp / "lake-empty"
    con = duckdb.connect()  # in memory: the raw tables, no rows
    try:
        ensure_raw_schema(con)
        written = export_raw_day(con, lake, EMPTY_DAY, cluster="empty")
    finally:
        con.close()
    assert not any(written.values()), written
    os.environ["KUBELEDGER_LAKE"] = str(lake)
    # two dbt threads, as for the unit tests below: the JVM plans one node while dbt renders the next
    spark_dbt("seed", ["build", "--select", "resource_type:seed", "--threads", "2"])
    results = spark_dbt("empty", ["run", "--empty", "--exclude", "resource_type:seed", "--threads", "2"])
    return [r.node.unique_id for r in results]


def test_dbt_unit_tests_pass_on_spark(spark_dbt: SparkDbt, spark_models: list[str]) -> None:
    # two dbt threads: the JVM plans one unit test while dbt renders the next (66 tests: 304 -> 258 s wall on a quiet
    # machine, 502 s of test time; 154 s wall with the model's rows computed once, macros/unit_test_spark.sql)
    results = spark_dbt("unit", ["test", "--select", "test_type:unit", "--threads", "2"])
    assert results, "no dbt unit test ran"
    assert all(r.node.resource_type == "unit_test" for r in results)
    print(f"{len(results)} dbt unit tests passed on Spark")


def test_a_whole_table_mart_builds_again_over_its_own_lake_folder(spark_dbt: SparkDbt,
                                                                   spark_models: list[str]) -> None:
    """fct_cloud_cost_daily is rebuilt whole by every build (not a day's partitions): its second build must replace
    the files of its lake folder. A plain table failed there on Spark: dbt drops the external table, its files stay,
    and CREATE TABLE AS SELECT refuses the non-empty location, so a second build of any day failed."""
    assert "model.kubeledger.fct_cloud_cost_daily" in spark_models
    results = spark_dbt("whole-table rebuild", ["run", "--empty", "--select", "fct_cloud_cost_daily"])
    assert [r.node.name for r in results] == ["fct_cloud_cost_daily"]


def test_unit_tests_compare_within_the_tolerance_and_fail_on_spark(spark_dbt: SparkDbt, tmp_path) -> None:
    """The tolerance probe (tests/fixtures/tolerance_probe.py) on Spark, through the project's unit materialization there
    (macros/unit_test_spark.sql: the model's rows computed once into a table): what passes on DuckDB passes, what
    fails fails, and the rows' tables are dropped after each test."""
    from pyspark.sql import SparkSession

    assert unit_test_statuses(probe_project(tmp_path / "probe", with_macro=True), target="spark") == EXPECTED
    spark = SparkSession.getActiveSession()
    assert [r.tableName for r in spark.sql("show tables in tolerance_probe").collect() if "__ut_" in r.tableName] == []
