"""Smoke tests for the benchmark (bench/): the table and reconciliation code, and one tiny end-to-end run."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import duckdb
import pytest

from bench.report import format_queries, format_reconciliation, format_table, reconcile
from bench.runner import StageResult, run_stage

DAY = date(2025, 3, 3)


def _marts(path, node_cost=10.0, workload=7.0, idle=3.0, clamped=False, node_kwh=2.0, alloc_kwh=(1.5, 0.5)):
    con = duckdb.connect(str(path))
    con.execute("create schema marts")
    con.execute("create table marts.fct_cluster_daily (usage_date date, cluster varchar, workload_compute_cost double, "
                "idle_cpu_cost double, idle_ram_cost double, idle_gpu_cost double, node_compute_cost double, "
                "idle_clamped boolean)")
    con.execute("insert into marts.fct_cluster_daily values (?, 'c', ?, ?, 0, 0, ?, ?)",
                [DAY, workload, idle, node_cost, clamped])
    con.execute("create table marts.fct_allocation_daily (usage_date date, cluster varchar, allocation_kind varchar, "
                "energy_cpu_kwh double, energy_memory_kwh double, energy_gpu_kwh double)")
    con.execute("insert into marts.fct_allocation_daily values (?, 'c', 'workload', ?, 0, 0), (?, 'c', 'idle', ?, 0, 0),"
                " (?, 'c', 'unmounted', 99, 0, 0)", [DAY, alloc_kwh[0], DAY, alloc_kwh[1], DAY])
    con.execute("create table marts.fct_node_energy_daily (usage_date date, cluster varchar, energy_kwh double)")
    con.execute("insert into marts.fct_node_energy_daily values (?, 'c', ?)", [DAY, node_kwh])
    con.close()


def test_reconciliation_pass_and_fail(tmp_path):
    ok = tmp_path / "ok.duckdb"
    _marts(ok)
    r = reconcile(ok, DAY, date(2025, 3, 4))
    assert r.passed and r.cluster_days == 1
    assert "PASS" in format_reconciliation("tiny", r)

    bad = tmp_path / "bad.duckdb"
    _marts(bad, workload=6.0)  # 6 + 3 != 10
    r = reconcile(bad, DAY, date(2025, 3, 4))
    assert not r.passed and "compute cost" in r.problems[0]
    assert "FAIL" in format_reconciliation("tiny", r)

    clamped = tmp_path / "clamped.duckdb"
    _marts(clamped, workload=12.0, idle=0.0, clamped=True)  # a bench cluster fits its nodes: clamping is a FAIL
    r = reconcile(clamped, DAY, date(2025, 3, 4))
    assert not r.passed and r.clamped_days == 1 and "idle_clamped" in r.problems[0]
    assert reconcile(clamped, DAY, date(2025, 3, 4), allow_clamped=True).passed  # the 12-node feature block

    energy = tmp_path / "energy.duckdb"
    _marts(energy, alloc_kwh=(1.5, 0.4))
    r = reconcile(energy, DAY, date(2025, 3, 4))
    assert not r.passed and "energy" in r.problems[0]

    empty = tmp_path / "empty.duckdb"
    _marts(empty)
    assert not reconcile(empty, date(2025, 1, 1), date(2025, 1, 2)).passed  # no rows is a FAIL, never a PASS


def test_table_formatting():
    stages = [StageResult("generate", 1.0, 100.0, {"rows_out": 1000, "seconds": 0.9}),
              StageResult("dbt staging", 2.0, 200.0, {"rows_in": 1000, "rows_out": 1000, "seconds": 0.5}),
              StageResult("dbt marts", 4.0, 400.0, {"rows_in": 2000, "rows_out": 50, "seconds": 3.0})]
    text = format_table("tiny", stages)
    assert "dbt transform" in text and "6.00" in text and "1,000" in text
    q = StageResult("query", 1.0, 50.0, {"rows_in": 10, "queries": {"window=1d&aggregate=namespace": {
        "p50": 0.01, "p95": 0.02, "keys": 3, "n": 20}}})
    assert "window=1d&aggregate=namespace" in format_queries(q)


def test_generate_stage_in_child(tmp_path):
    params = {"workdir": str(tmp_path), "nodes": 3, "ppn": 2, "cpp": 1, "day": DAY.isoformat(), "hours": 2}
    r = run_stage("generate", "generate", params, tmp_path / "logs")
    assert r.rows_out > 0 and r.peak_rss_mib > 10 and r.wall_s > 0


@pytest.mark.slow
@pytest.mark.integration
def test_bench_end_to_end_tiny(tmp_path, capsys):
    from bench.__main__ import main

    rc = main(["--scales", "10", "--pods-per-node", "3", "--containers-per-pod", "1", "--hours", "2",
               "--queries", "2", "--rerun", "--workdir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    # reconciled after the re-run too: the rebuilt day replaced its rows, nothing doubled
    assert "reconciliation 10 nodes: PASS" in out
    assert "re-run ÷ first build" in out
    for stage in ("generate", "load", "dbt seed", "dbt transform", "dbt transform (re-run)", "publish"):
        assert stage in out


def _one_mart(path: Path, cost: float) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA marts")
    con.execute("CREATE TABLE marts.fct_cluster_daily AS SELECT DATE '2025-03-03' AS usage_date, 'bench' AS cluster, "
                "CAST(? AS DOUBLE) AS total_cost", [cost])
    con.close()


def test_baseline_comparison_finds_a_changed_number(tmp_path: Path) -> None:
    from bench.__main__ import compare_to_baseline

    for name, cost in (("before", 100.0), ("same", 100.0 * (1 + 1e-12)), ("changed", 100.001)):
        (tmp_path / name / "scale-10").mkdir(parents=True)
        _one_mart(tmp_path / name / "scale-10" / "kubeledger.duckdb", cost)
    same, text = compare_to_baseline(tmp_path / "before", "scale-10", tmp_path / "same")
    assert same and "IDENTICAL" in text, text
    same, text = compare_to_baseline(tmp_path / "before", "scale-10", tmp_path / "changed")
    assert not same and "DIFFERENT" in text and "fct_cluster_daily" in text, text
    same, text = compare_to_baseline(tmp_path / "missing", "scale-10", tmp_path / "same")
    assert not same and "no " in text


def test_target_lines_print_the_targets_as_the_issues_write_them():
    """Issue 26's table (the 5,000-node day load → publish ≤ 60 s and ≤ 3 GiB, the 1,000-node model time ≤ 5 s,
    transform ÷ scan pass ≤ 8×, landing ≥ 2 M rows/s) and issue 25's small day (warm ≤ 15 s, setup ≤ 2 s)."""
    from bench.__main__ import target_lines
    from bench.demo_e2e import format_demo_e2e
    from bench.report import summary_row

    def day(scale: int, secs: float, rss: float, model: float, scan: float, rate: float) -> dict:
        stages = [StageResult(name, secs, rss, {"rows_out": 10, "rows_per_s": rate} if name == "load" else {})
                  for name in ("load", "dbt seed", "lookups", "publish")]
        stages += [StageResult("dbt transform", secs, rss, {"seconds": model}),
                   StageResult("scan pass", 1.0, 50.0, {"seconds": scan})]
        return summary_row(scale, stages, None, None)

    fast = target_lines([day(5000, 10.0, 2048.0, 4.0, 1.0, 3e6), day(1000, 1.0, 500.0, 4.0, 1.0, 3e6)], None, 1)
    assert "5,000-node day (load → publish) 50.0 s, peak RSS 2.00 GiB (target ≤ 60 s, ≤ 3 GiB" in fast[0]
    assert fast[0].endswith(": met") and "1,000-node model time 4.0 s (target ≤ 5 s): met" in fast
    assert "1,000-node transform ÷ scan pass 4.0× model time (target ≤ 8×): met" in fast
    assert "5,000-node landing 3.00 M rows/s (target ≥ 2 M): met" in fast
    slow = target_lines([day(5000, 20.0, 4096.0, 90.0, 1.0, 5e5), day(1000, 2.0, 500.0, 17.8, 1.0, 5e5)], None, 1)
    assert slow[0].endswith("NOT MET") and "1,000-node model time 17.8 s (target ≤ 5 s): NOT MET" in slow
    assert "1,000-node transform ÷ scan pass 17.8× model time (target ≤ 8×): NOT MET" in slow
    assert "5,000-node landing 0.50 M rows/s (target ≥ 2 M): NOT MET" in slow
    no_publish = summary_row(5000, [StageResult("dbt transform", 1.0, 1.0, {"seconds": 1.0})], None, None)
    assert target_lines([no_publish], None, 1)[0].endswith("not measured (a stage of the day did not run)")

    warm = StageResult("warm materialize", 14.0, 900.0, {"load_before": 0.1, "load_after": 0.2, "stages": [
        "setup: ok in 2.5 s (Dagster instance and definitions)", "transform: ok in 9.0 s"]})
    text = format_demo_e2e([warm])
    assert "15 ok" in text and "Dagster setup 2.5 s (target ≤ 2 s): MISS" in text
