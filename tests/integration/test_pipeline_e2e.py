"""End to end through the real CLI, Dagster, dbt (with its data and singular tests; the dbt unit tests are not part
of the daily build, tests/integration/test_dbt_unit_tests.py runs them) and DuckDB on the demo cluster."""

import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import duckdb
import pytest

from tests.fixtures.parquet_contract import parquet_contract_mismatches

pytestmark = pytest.mark.integration

KUBELEDGER = str(Path(sys.executable).parent / "kubeledger")
DAYS = [date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3)]


def run_cli(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DO_NOT_TRACK": "1"}
    env.pop("DAGSTER_HOME", None)
    env.pop("KUBELEDGER_WAREHOUSE", None)
    proc = subprocess.run([KUBELEDGER, "--config", str(workdir / "kubeledger.yaml"), *args], cwd=workdir,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


def day_totals(path: Path) -> dict:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "select usage_date, count(*), sum(total_cost), sum(energy_kwh), sum(co2e_total_g) "
            "from marts.fct_allocation_daily group by 1 order by 1").fetchall()
    finally:
        con.close()
    return {r[0]: r[1:] for r in rows}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    wd = tmp_path_factory.mktemp("e2e")
    (wd / "kubeledger.yaml").write_text(
        "warehouse:\n  path: wh/kubeledger.duckdb\n  serving_path: wh/serving.duckdb\n  parquet_path: wh/parquet\n"
        "clusters:\n  - name: demo\n    source: demo\n    demo: {nodes: 12, pods_per_node: 6}\n"
    )
    return wd


def test_three_days_then_one_again_leaves_three_identical_days(workdir):
    run_cli(workdir, "backfill", "--start", DAYS[0].isoformat(), "--end", DAYS[-1].isoformat())
    serving = workdir / "wh" / "serving.duckdb"
    first = day_totals(serving)
    assert sorted(first) == DAYS
    for rows, cost, kwh, co2e in first.values():
        assert rows > 50 and cost > 0 and kwh > 0 and co2e > 0

    run_cli(workdir, "materialize", "--date", DAYS[1].isoformat())
    second = day_totals(serving)
    assert sorted(second) == DAYS
    for day in DAYS:
        assert second[day][0] == first[day][0]
        for a, b in zip(second[day][1:], first[day][1:], strict=True):
            assert a == pytest.approx(b, rel=1e-12)


def test_marts_hold_real_numbers_that_reconcile(workdir):
    con = duckdb.connect(str(workdir / "wh" / "kubeledger.duckdb"), read_only=True)
    try:
        cluster = con.execute(
            "select hour_coverage, node_compute_cost, workload_compute_cost + idle_cpu_cost + idle_ram_cost "
            "+ idle_gpu_cost, idle_clamped, energy_kwh from marts.fct_cluster_daily where usage_date = ?",
            [DAYS[0]]).fetchone()
        coverage, asset, allocated, clamped, kwh = cluster
        assert coverage == 1.0
        if not clamped:
            assert allocated == pytest.approx(asset, rel=1e-9)
        nodes = con.execute(
            "select count(*), count(distinct profile_source), sum(energy_kwh) from marts.fct_node_energy_daily "
            "where usage_date = ?", [DAYS[0]]).fetchone()
        assert nodes[0] == 12 and nodes[1] >= 2 and nodes[2] == pytest.approx(kwh, rel=1e-9)
        flagged = con.execute(
            "select count(*) from marts.fct_allocation_daily where usage_date = ? and is_estimated "
            "and estimation_reasons like '%unknown_instance_type%'", [DAYS[0]]).fetchone()[0]
        assert flagged > 0  # the on-prem node of unknown type is flagged, never silently defaulted
        gap = con.execute(
            "select count(*) from marts.fct_node_energy_daily where usage_date = ? "
            "and estimation_reasons like '%zone_default_intensity%'", [DAYS[0]]).fetchone()[0]
        assert gap > 0  # the demo's missing BE hour falls back to the zone's annual value, flagged
    finally:
        con.close()


def test_parquet_export_is_partitioned_by_cluster_and_date(workdir):
    root = workdir / "wh" / "parquet" / "fct_allocation_daily"
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.parquet"))
    assert files == [f"cluster=demo/date={d.isoformat()}/data.parquet" for d in DAYS]
    n = duckdb.connect().sql(f"select count(*) from read_parquet('{root}/**/*.parquet', hive_partitioning = true) "  # noqa: S608
                   f"where cluster = 'demo'").fetchall()[0][0]
    assert n == sum(v[0] for v in day_totals(workdir / "wh" / "serving.duckdb").values())


def test_the_parquet_export_holds_the_contract_types(workdir):
    read, problems = parquet_contract_mismatches(workdir / "wh" / "parquet")
    assert read >= 3 * 5 and not problems, "\n".join(problems)  # three days of at least five marts
