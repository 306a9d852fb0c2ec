"""The same dbt project on Apache Spark (local mode, pyspark in this process) over the Parquet lake gives the marts
the DuckDB engine gives, and the dbt unit tests pass on Spark.

The demo day is built by the normal pipeline on DuckDB (`kubeledger demo`); its raw tables are exported to a lake
with pipelines/warehouse/lake.py; `dbt seed` and `dbt build` (the daily build's vars) then run on the `spark`
target through one dbtRunner, so one JVM and one Spark session serve the module. The Spark marts' Parquet files
(<lake>/marts/<model>) are read back with DuckDB and compared with the DuckDB marts row for row: keys exactly,
doubles to 1e-9 relative, JSON text as JSON values (Spark writes 1.0E8 where DuckDB writes 100000000.0).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines import DBT_PROJECT_DIR
from pipelines.dagster_defs.dbt_args import daily_build_args, dbt_vars
from pipelines.settings import load_settings
from pipelines.warehouse.lake import export_raw_day

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
DAY = date(2026, 11, 28)
REL_TOL = 1e-9
ABS_TOL = 1e-12
# An idle row whose energy is a round-off residue (|energy_kwh| ~1e-17 kWh, a difference that is zero in exact
# arithmetic) has an intensity = weight / residue that depends on the summation order, on DuckDB as on Spark
# (/work/wt/compare.sh skips the column for the same reason): compared only where the energy is real.
RATIO_OF_ENERGY = {"carbon_intensity_g_per_kwh": "energy_kwh"}


def _require_spark() -> None:
    try:
        import dbt.adapters.spark  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"pyspark / dbt-spark not installed ({exc}); CI installs them (pip install dbt-spark[session])")
    if shutil.which("java") is None:
        pytest.skip("java not on PATH; CI installs openjdk-17-jre-headless")


class SparkDbt:
    """dbt on the `spark` target, every command in this process (one JVM, one Spark session)."""

    def __init__(self, tmp: Path) -> None:
        from dbt.cli.main import dbtRunner

        self.runner = dbtRunner()
        self.common = ["--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR),
                       "--target", "spark", "--target-path", str(tmp / "target"), "--log-path", str(tmp / "logs")]
        self.timings: dict[str, float] = {}

    def __call__(self, name: str, args: list[str]) -> list[Any]:
        start = time.monotonic()
        res = self.runner.invoke([*args, *self.common])
        self.timings[name] = time.monotonic() - start
        assert res.exception is None, res.exception
        results = [r for r in res.result if r.node.resource_type != "operation"]  # the on-run-start hook
        failed = [f"{r.node.unique_id}: {r.status}\n{r.message}" for r in results
                  if str(r.status) not in ("success", "pass")]
        assert not failed, "\n\n".join(failed)
        assert res.success
        return results


@pytest.fixture(scope="module")
def demo_day(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo day built on DuckDB by the CLI: its workdir (kubeledger.yaml, wh/kubeledger.duckdb)."""
    _require_spark()
    wd = tmp_path_factory.mktemp("duckdb-demo")
    (wd / "kubeledger.yaml").write_text(
        "warehouse:\n  path: wh/kubeledger.duckdb\n  serving_path: wh/serving.duckdb\n  parquet_path: wh/parquet\n")
    env = {**os.environ, "DO_NOT_TRACK": "1", "DAGSTER_HOME": str(wd / "dh"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("KUBELEDGER_WAREHOUSE", None)
    (wd / "dh").mkdir()
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "--config", str(wd / "kubeledger.yaml"), "demo",
                           "--date", DAY.isoformat()], cwd=wd, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return wd


@pytest.fixture(scope="module")
def spark_build(demo_day: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, SparkDbt]]:
    """The demo day's raw tables exported to a lake, then seeds + the daily build on Spark: (lake root, runner)."""
    tmp = tmp_path_factory.mktemp("spark")
    lake = tmp / "lake"
    con = duckdb.connect(str(demo_day / "wh" / "kubeledger.duckdb"), read_only=True)
    try:
        exported = export_raw_day(con, lake, DAY)
    finally:
        con.close()
    assert exported["container_hours"] > 0
    env = {"KUBELEDGER_LAKE": str(lake), "KUBELEDGER_SPARK_DIR": str(tmp / "spark"),
           "SPARK_LOCAL_IP": "127.0.0.1", "DO_NOT_TRACK": "1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        dbt = SparkDbt(tmp)
        settings = load_settings(demo_day / "kubeledger.yaml")
        start = datetime(DAY.year, DAY.month, DAY.day)
        variables = dbt_vars(settings, start, start + timedelta(days=1))
        dbt("seed", ["seed"])
        dbt("build", daily_build_args(variables))
        yield lake, dbt
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        print("spark timings (s):", {k: round(v, 1) for k, v in dbt.timings.items()})


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


def test_marts_equal_duckdb(demo_day: Path, spark_build: tuple[Path, SparkDbt]) -> None:
    lake, _ = spark_build
    con = duckdb.connect(str(demo_day / "wh" / "kubeledger.duckdb"), read_only=True)
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


def test_dbt_unit_tests_pass_on_spark(spark_build: tuple[Path, SparkDbt]) -> None:
    _, dbt = spark_build
    results = dbt("unit", ["test", "--select", "test_type:unit"])
    assert results, "no dbt unit test ran"
    assert all(r.node.resource_type == "unit_test" for r in results)
    print(f"{len(results)} dbt unit tests passed on Spark")
