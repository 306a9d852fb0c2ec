"""`kubeledger materialize --cluster` against the real, backfilled Prometheus scenario: raw tables and marts hold
values that follow from the scenario's inputs."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.fixtures.prom_scenario import DAY, NODES, SCRAPE_S

pytestmark = pytest.mark.integration

KUBELEDGER = str(Path(sys.executable).parent / "kubeledger")
GIB = 2**30


@pytest.fixture(scope="module")
def warehouse(prometheus_scenario: Any, tmp_path_factory) -> Path:
    wd = tmp_path_factory.mktemp("prom-pipeline")
    (wd / "kubeledger.yaml").write_text(f"""
warehouse: {{path: wh/w.duckdb, serving_path: wh/s.duckdb, parquet_path: wh/parquet}}
clusters:
  - name: small
    source: prometheus
    prometheus: {{url: "{prometheus_scenario.url}", cluster_label: cluster, cluster_label_value: small,
                  scrape_interval_s: {SCRAPE_S}, retries: 1, timeout_s: 60}}
  - name: big
    source: prometheus
    prometheus: {{url: "{prometheus_scenario.url}", cluster_label: cluster, cluster_label_value: big}}
carbon: {{provider: none}}
schedule: {{start_date: "2025-01-01"}}  # the scenario's day is older than the default first day
""")
    env = {**os.environ, "DO_NOT_TRACK": "1"}
    env.pop("DAGSTER_HOME", None)
    env.pop("KUBELEDGER_WAREHOUSE", None)
    proc = subprocess.run([KUBELEDGER, "--config", str(wd / "kubeledger.yaml"), "materialize", "--date",
                           DAY.date().isoformat(), "--cluster", "small"], cwd=wd, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return wd / "wh" / "w.duckdb"


def q(path: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def test_only_the_requested_cluster_is_extracted(warehouse):
    clusters = q(warehouse, "select distinct cluster from raw.container_hours")
    assert clusters == [("small",)]
    assert q(warehouse, "select count(distinct hour_ts) from raw.node_hours")[0][0] == 24


def test_allocation_follows_from_the_scenario(warehouse, prometheus_scenario):
    exp = prometheus_scenario.expected["small"]
    rows = {(r[0], r[1]): r[2:] for r in q(warehouse, """
        select pod_uid, container, minutes, cpu_core_hours, cpu_core_request_average, ram_byte_request_average,
               controller_kind, controller, node
        from marts.fct_allocation_daily where cluster = 'small' and allocation_kind = 'workload'""")}
    by_container: dict[tuple[str, str], dict[str, float]] = {}
    for (_hour, uid, name), e in exp["containers"].items():
        agg = by_container.setdefault((uid, name), {"minutes": 0.0, "core_hours": 0.0, "req": None})
        run_h = e["running_minutes"] / 60.0
        agg["minutes"] += e["running_minutes"]
        if run_h > 0:
            usage = (e["cpu_usage_core_seconds"] or 0.0) / 3600.0
            agg["core_hours"] += max((e["cpu_request_cores"] or 0.0) * run_h, usage)
            agg["req"] = e["cpu_request_cores"]
    charged = {k: v for k, v in by_container.items() if v["minutes"] > 0}
    assert set(rows) == set(charged)  # the pending pod never ran and is not charged
    for key, e in charged.items():
        minutes, core_hours, req_avg, _ram_req, kind, controller, node = rows[key]
        assert minutes == pytest.approx(e["minutes"])
        # rate() extrapolation at series edges moves usage by at most one scrape of usage per edge
        assert core_hours == pytest.approx(e["core_hours"], rel=0.02, abs=0.02)
        assert req_avg == pytest.approx(e["req"] or 0.0)
        assert kind == "deployment" or kind == "cronjob"
    web = rows[("0a1b2c3d-0000-4000-8000-00000000000a", "app")]
    assert web[5] == "web" and web[6] == "n0"


def test_node_costs_energy_and_idle_reconcile(warehouse, prometheus_scenario):
    expected_hours: dict[str, float] = {}
    for (_hour, node), e in prometheus_scenario.expected["small"]["nodes"].items():
        expected_hours[node] = expected_hours.get(node, 0.0) + e["running_minutes"] / 60.0
    nodes = {r[0]: r[1:] for r in q(warehouse, """
        select node, hours, vcpus, profile_source, min_watts_per_vcpu, max_watts_per_vcpu, energy_kwh
        from marts.fct_node_energy_daily where cluster = 'small'""")}
    assert set(nodes) == set(NODES)
    for node, hours in expected_hours.items():  # n2 joins at 01:30; the scrape gap at 03:10 costs 5 minutes
        assert nodes[node][0] == pytest.approx(hours)
    assert expected_hours["n2"] < expected_hours["n0"] < 24.0
    for _hours, vcpus, source, min_w, max_w, kwh in nodes.values():
        assert source == "ccf_microarchitecture" and (min_w, max_w) == (0.65, 4.26)  # m5 → Skylake
        assert vcpus * min_w * _hours / 1000 * (1 - 1e-9) <= kwh <= vcpus * max_w * _hours / 1000 * (1 + 1e-9)
    cluster = q(warehouse, """
        select node_compute_cost, workload_compute_cost + idle_cpu_cost + idle_ram_cost + idle_gpu_cost,
               idle_clamped, hour_coverage from marts.fct_cluster_daily where cluster = 'small'""")[0]
    assert cluster[3] == 1.0
    if cluster[2]:  # over-allocation is flagged and never subtracted: allocated ≥ asset
        assert cluster[1] >= cluster[0] * (1 - 1e-9)
    else:
        assert cluster[1] == pytest.approx(cluster[0], rel=1e-9)
    # m5.xlarge / m5.2xlarge priced from the shipped us-east-1 sheet, split by OpenCost normalisation
    assets = q(warehouse, """select asset_name, price_source, cpu_cost + ram_cost, hourly_price_usd, hours
                             from marts.fct_asset_daily where cluster = 'small' and asset_kind = 'node'""")
    for name, source, cost, price, hours in assets:
        assert source == "sheet"
        assert cost == pytest.approx(price * hours, rel=1e-9), name
