"""The fault matrix for Prometheus, the primary source, through the real job against the session's real
Prometheus (backfilled scenario) behind a fault-injecting proxy.

- A whole outage (every failure mode) fails the day in one line naming the cause; nothing is published; a
  later re-run picks the day up.
- Missing hours inside a day publish while the hour coverage stays at or above `quality.min_hour_coverage`
  (default 90 %): coverage < 100 % in fct_cluster_daily, every allocation row of the day carries the reason
  `partial_hour_coverage`, the ledger says `metrics` partial, and nothing is allocated or charged for the hours
  without samples. Below the threshold the day is not published.
Each test runs the pipeline itself: the behaviour under test is the job's.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.faults.conftest import built_template, query, warm_copy
from tests.fixtures.fault_proxy import FaultProxy
from tests.fixtures.pipeline_workdir import built_once, cli_args, cli_env, run_temp
from tests.fixtures.prom_scenario import DAY, SCRAPE_S
from tests.integration.conftest import prometheus_scenario  # noqa: F401 - session fixture

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.prometheus]

DAY_S = DAY.date().isoformat()


def _config(url: str) -> str:
    return f"""
warehouse: {{path: wh/w.duckdb, serving_path: wh/s.duckdb, parquet_path: wh/parquet}}
clusters:
  - name: small
    source: prometheus
    prometheus: {{url: "{url}", cluster_label: cluster, cluster_label_value: small,
                  scrape_interval_s: {SCRAPE_S}, retries: 1, timeout_s: 3}}
carbon: {{provider: none}}
schedule: {{start_date: "2025-01-01"}}
"""


def _materialize(wd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cli_args(wd, "materialize", "--date", DAY_S), cwd=wd, env=cli_env(), capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="session")
def prom_proxy(prometheus_scenario: Any) -> Iterator[FaultProxy]:  # noqa: F811 - the imported session fixture
    with FaultProxy(prometheus_scenario.url) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def prom_template(prom_proxy: FaultProxy, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warm workdir with the scenario day built and published through the (healthy) proxy, once per pytest run
    (built_once; each test writes its own config with its worker's proxy)."""
    return built_once(run_temp(tmp_path_factory), "prom-faults-template",
                      lambda wd: built_template(wd, _config(prom_proxy.url), _materialize))


@pytest.fixture
def prom_workdir(prom_template: Path, prom_proxy: FaultProxy, tmp_path: Path) -> Iterator[Path]:
    with warm_copy(prom_template, tmp_path, prom_proxy) as wd:
        (wd / "kubeledger.yaml").write_text(_config(prom_proxy.url))  # this worker's proxy, not the builder's
        yield wd


def _published_hours(wd: Path) -> list[tuple]:
    return query(wd / "wh" / "s.duckdb", "select hours_covered, total_cost from marts.fct_cluster_daily "
                                         "where usage_date = ?", [DAY.date()])


OUTAGES = {
    "refused": ("refused", {}),
    "timeout": ("timeout", {}),
    "http_500": ("status", {"status": 500}),
    "http_503": ("status", {"status": 503}),
    "http_429": ("status", {"status": 429, "headers": {"Retry-After": "1"}}),
    "http_401": ("status", {"status": 401}),
    "http_403": ("status", {"status": 403}),
    "html": ("html", {}),
    "wrong_shape": ("wrong_shape", {}),
    "truncated": ("truncated", {}),
}


@pytest.mark.parametrize("mode", sorted(OUTAGES))
def test_whole_outage_fails_the_day_in_one_line_and_a_rerun_picks_it_up(mode: str, prom_proxy: FaultProxy,
                                                                        prom_workdir: Path) -> None:
    before = _published_hours(prom_workdir)
    # the serving copy of the template is the day as published before the outage: it must stay as it was
    fault, opts = OUTAGES[mode]
    prom_proxy.set_fault(fault, **opts)
    proc = _materialize(prom_workdir)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    failed = [ln for ln in out.splitlines() if ln.startswith("kubeledger: job")]
    assert len(failed) == 1 and "raw_metrics" in failed[0] and "not built or published" in failed[0], out[-3000:]
    assert "small" in failed[0], failed  # the line names the cluster whose source failed
    assert _published_hours(prom_workdir) == before  # nothing published over the good copy
    if mode == "refused":  # a later run, with Prometheus back, builds and publishes the day
        prom_proxy.clear()
        again = _materialize(prom_workdir)
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
        assert "1 day published" in again.stdout + again.stderr


def _forget_the_day(wd: Path) -> None:
    """The day's raw metrics as before its first run (the template landed all 24 hours): a re-run never deletes
    hours already landed from a Prometheus that has since lost them, so the partial day is a first run."""
    import duckdb

    from pipelines.warehouse.landing import METRICS_TABLES

    con = duckdb.connect(str(wd / "wh" / "w.duckdb"))
    try:
        for table in METRICS_TABLES:
            con.execute(f"delete from raw.{table} where cast(hour_ts as date) = ?", [DAY.date()])  # noqa: S608
    finally:
        con.close()


def _drop(prom_proxy: FaultProxy, hours: int) -> None:
    start = DAY.replace(hour=10)
    prom_proxy.set_fault("drop_hours", hours={start + timedelta(hours=h) for h in range(hours)})


def test_missing_hours_above_the_threshold_publish_with_coverage_below_one(prom_proxy: FaultProxy,
                                                                         prom_workdir: Path) -> None:
    full = _published_hours(prom_workdir)
    assert full and full[0][0] == 24, full
    _forget_the_day(prom_workdir)
    _drop(prom_proxy, 2)  # 22/24 = 91.7 % >= 90 %
    proc = _materialize(prom_workdir)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "1 day published" in out
    rows = _published_hours(prom_workdir)
    assert rows[0][0] == 22, rows
    assert rows[0][1] < full[0][1]  # no cost is invented for the hours without samples
    ledger = query(prom_workdir / "wh" / "w.duckdb", "select status, failure, cluster, message from "
                   "raw.source_health where source = 'metrics' and scope = ?", [DAY_S])
    assert ledger == [("degraded", "partial", "small", ledger[0][3])], ledger
    assert "2 of 24 hours" in ledger[0][3]
    assert len([ln for ln in out.splitlines() if "metrics (cluster small) degraded:" in ln]) == 1
    hours = query(prom_workdir / "wh" / "w.duckdb", "select count(distinct hour_ts) from raw.node_hours "
                  "where cluster = 'small' and cast(hour_ts as date) = ?", [DAY.date()])
    assert hours == [(22,)]
    # every published row of the day says its day is partial (A18.1), and the day's shares say all of it is
    flags = query(prom_workdir / "wh" / "s.duckdb", "select bool_and(is_estimated), bool_and(contains("
                  "estimation_reasons, 'partial_hour_coverage')), count(*) from marts.fct_allocation_daily "
                  "where cluster = 'small' and usage_date = ?", [DAY.date()])
    assert flags[0][:2] == (True, True) and flags[0][2] > 0, flags
    shares = query(prom_workdir / "wh" / "s.duckdb", "select cost_estimated_share, co2e_estimated_share "
                   "from marts.fct_cluster_daily where cluster = 'small' and usage_date = ?", [DAY.date()])
    assert shares == [(1.0, 1.0)], shares


def test_missing_hours_below_the_threshold_do_not_publish(prom_proxy: FaultProxy, prom_workdir: Path) -> None:
    before = _published_hours(prom_workdir)
    _forget_the_day(prom_workdir)
    _drop(prom_proxy, 4)  # 20/24 = 83 % < 90 %
    proc = _materialize(prom_workdir)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "hour_coverage" in out and "nothing was published" in out, out[-3000:]
    assert "Traceback" not in out
    assert _published_hours(prom_workdir) == before
