"""dbt decides which carbon zones and Boavizta instances are fetched (int_nodes_required_lookups, built before
the carbon-intensity and Boavizta extracts).

Regressions of a Python copy of the enrichment that knew fewer rules than dbt: a node without providerID in a
cluster configured `provider: aws, region: eu-west-1` (zone IE from the cluster config), and a GKE node carrying
only the zone label `europe-west1-b` (region europe-west1 from the zone, zone BE). Both zones must be fetched from
the (stand-in) Electricity Maps API and used by the marts, not the flagged default intensity; the provider-less
node's instance type must get its embodied impacts (the bundled Boavizta table) too.
"""

from __future__ import annotations

import json
import subprocess
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from pipelines.settings import load_settings
from pipelines.warehouse.connection import open_warehouse
from tests.fixtures.carbon_standins import EM_TOKEN, EMState, electricitymaps_standin, em_value
from tests.fixtures.pipeline_workdir import cli_args, cli_env

pytestmark = pytest.mark.integration

DAY = date(2026, 1, 10)
HOURS = [datetime(DAY.year, DAY.month, DAY.day) + timedelta(hours=h) for h in range(24)]
TOKEN_ENV = "KL_TEST_EM_TOKEN"
# (cluster, node, provider_id, instance type, labels): what each node carries in raw.node_hours
NODES = [
    ("eu", "n-no-provider-id", None, "m5.large", {}),
    ("gke", "g-zone-label-only", "gce://proj/europe-west1-b/g-zone-label-only", "n2-standard-4",
     {"topology.kubernetes.io/zone": "europe-west1-b"}),
]
EXPECTED_ZONE = {"eu": "IE", "gke": "BE"}


def _config(workdir: Path, url: str) -> Path:
    path = workdir / "kubeledger.yaml"
    # the Prometheus URLs are never called: `rebuild` builds from the raw rows landed below
    path.write_text(f"""
warehouse: {{path: wh/w.duckdb, serving_path: wh/s.duckdb, parquet_path: wh/parquet}}
clusters:
  - name: eu
    source: prometheus
    prometheus: {{url: "http://127.0.0.1:9"}}
    provider: aws
    region: eu-west-1
  - name: gke
    source: prometheus
    prometheus: {{url: "http://127.0.0.1:9"}}
carbon: {{provider: electricitymaps, base_url: "{url}", token_env: {TOKEN_ENV}, timeout_s: 5}}
quality: {{min_hour_coverage: 0.01}}
schedule: {{start_date: "{DAY - timedelta(days=3)}"}}
""")
    return path


def _land_nodes(config: Path) -> None:
    con = open_warehouse(load_settings(str(config)))
    try:
        for cluster, node, provider_id, instance_type, labels in NODES:
            for hour in HOURS:
                con.execute(
                    "insert into raw.node_hours (cluster, hour_ts, node, provider_id, instance_type, region, zone, "
                    "labels, cpu_capacity_cores, ram_capacity_bytes, gpu_capacity, cpu_allocatable_cores, "
                    "ram_allocatable_bytes, running_minutes, _source, _extracted_at) "
                    "values (?, ?, ?, ?, ?, null, null, ?, 4, 16 * 2^30, 0, 4, 16 * 2^30, 60, 'test', now())",
                    [cluster, hour, node, provider_id, instance_type, json.dumps(labels)])
    finally:
        con.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, EMState]:
    workdir = tmp_path_factory.mktemp("zone-lookups")
    with electricitymaps_standin(EMState(zones={"IE", "BE", "DE"})) as (url, state):
        config = _config(workdir, url)
        _land_nodes(config)
        proc = subprocess.run(cli_args(workdir, "rebuild", "--start", DAY.isoformat(), "--end", DAY.isoformat()),
                              cwd=workdir, env=cli_env(**{TOKEN_ENV: EM_TOKEN}), capture_output=True, text=True,
                              timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return workdir / "wh" / "w.duckdb", state


def test_zones_resolved_by_dbt_are_fetched(built):
    _, state = built
    assert {r["params"]["zone"] for r in state.requests} == {"IE", "BE"}


def test_fetched_intensity_is_used_by_the_marts(built):
    warehouse, _ = built
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute(
            "select cluster, carbon_zone, intensity_source, carbon_intensity_g_per_kwh "
            "from marts.fct_node_energy_daily where usage_date = ? order by cluster", [DAY]).fetchall()
        raw = dict(con.execute("select zone, count(*) from raw.carbon_intensity_hours where provider = "
                               "'electricitymaps' group by zone").fetchall())
    finally:
        con.close()
    assert raw == {"IE": 24, "BE": 24}
    assert [r[0] for r in rows] == ["eu", "gke"]
    for cluster, zone, source, intensity in rows:
        assert zone == EXPECTED_ZONE[cluster]
        assert source == "provider_hourly"  # not a flagged default
        # the node's energy is the same every hour, so the energy-weighted intensity is the plain mean
        assert intensity == pytest.approx(sum(em_value(zone, h) for h in HOURS) / 24, rel=1e-9)


def test_instance_types_of_both_nodes_get_embodied_impacts(built):
    warehouse, _ = built
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cached = con.execute("select provider, instance_type, status from raw.boavizta_impacts order by 1").fetchall()
        fallback = con.execute("select cluster, embodied_g_per_hour from marts.fct_node_energy_daily "
                               "where usage_date = ? order by cluster", [DAY]).fetchall()
    finally:
        con.close()
    assert cached == [("aws", "m5.large", "ok"), ("gcp", "n2-standard-4", "ok")]
    # the bundled table's values (kg/h), not the flagged 100 kg / 4 years fallback
    assert fallback == [("eu", pytest.approx(0.457)), ("gke", pytest.approx(0.758))]
