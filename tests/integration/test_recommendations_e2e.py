"""Recommendations end to end on the demo's `scenario: recommendations` cluster (pipelines/sources/demo_scenario.py).

A 7-day backfill through the real CLI, then: each planted case gets its recommendation on the last day (an
over-requested Deployment, an abandoned Deployment, an unmounted PVC, an over-provisioned node pool, a nightly
CronJob, a bursty Deployment with steady replicas; the default topology's claims that use a small share of their
volume), the well-sized Deployment gets none, and `kubeledger recommend` and the savings endpoints answer the mart.
The default topology's diurnal Deployments (checkout-web) get an off-peak scale-down and the bursty one an HPA,
both recomputed here in pandas.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import subprocess
from datetime import date, datetime, time, timedelta
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from pipelines.serving.query.recommendations import KINDS
from pipelines.serving.routes.savings import savings_routes
from pipelines.settings import load_settings
from tests.fixtures.pipeline_workdir import cli_args, cli_env, run_cli

pytestmark = pytest.mark.integration

CONFIG = (
    "warehouse:\n  path: wh/kubeledger.duckdb\n  serving_path: wh/serving.duckdb\n  parquet_path: wh/parquet\n"
    "clusters:\n  - name: demo\n    source: demo\n"
    "    demo: {nodes: 4, pods_per_node: 4, scenario: recommendations}\n"
)
FIRST, LAST = date(2026, 3, 1), date(2026, 3, 7)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    wd = tmp_path_factory.mktemp("recommendations")
    (wd / "kubeledger.yaml").write_text(CONFIG)
    run_cli(wd, "backfill", "--start", FIRST.isoformat(), "--end", LAST.isoformat(), timeout=1800)
    return wd


@pytest.fixture(scope="module")
def recs(workdir):
    con = duckdb.connect(str(workdir / "wh" / "serving.duckdb"), read_only=True)
    try:
        rel = con.execute("select * from marts.fct_recommendation_daily where usage_date = ?", [LAST])
        names = [d[0] for d in rel.description]
        return [dict(zip(names, r, strict=True)) for r in rel.fetchall()]
    finally:
        con.close()


def _one(recs, kind, target):
    found = [r for r in recs if r["kind"] == kind and r["target"] == target]
    assert len(found) == 1, (kind, target, sorted((r["kind"], r["target"]) for r in recs))
    return found[0]


def test_over_requested_deployment_is_rightsized(recs):
    r = _one(recs, "container_rightsizing", "showcase/deployment/oversized-api:app")
    assert r["current_cpu_request_cores"] == pytest.approx(2.0)
    assert 0.05 < r["recommended_cpu_request_cores"] < 0.5  # ~5 % use, x peak 1.5, x headroom 1.2
    assert r["recommended_ram_request_bytes"] < r["current_ram_request_bytes"] / 4
    assert r["saving_usd_per_month"] > 10 and r["saving_co2e_g_per_month"] > 0
    assert r["days_of_data"] == 7 and r["hours_covered"] == 168 and r["window_days"] == 7
    ev = json.loads(r["evidence"])
    assert ev["cpu_quantile"] == 0.95 and ev["cpu_headroom"] == 1.2
    assert r["recommended_cpu_request_cores"] == pytest.approx(max(ev["cpu_peak_quantile_cores"] * 1.2, 0.01))
    assert r["recommendation_id"] == "container_rightsizing:demo/showcase/deployment/oversized-api:app"


def test_abandoned_deployment_is_flagged(recs):
    r = _one(recs, "abandoned_workload", "showcase/deployment/abandoned-worker")
    assert r["saving_usd_per_month"] > 0 and r["saving_kwh_per_month"] > 0 and r["saving_co2e_g_per_month"] > 0
    assert json.loads(r["evidence"])["network_bytes_per_s_per_replica"] == 0


def test_idle_namespace_is_retired_whole(recs):
    """sandbox holds one forgotten Deployment all week: the namespace is the recommendation; the workload's own
    abandoned row stays visible but is superseded by it and counts nothing."""
    r = _one(recs, "idle_namespace", "sandbox")
    assert re.match(r"Delete namespace sandbox or scale it to zero: its \d+ pods? used \d+ micro-cores of CPU and 0 B/s",
                    r["action"]), r["action"]
    assert r["saving_usd_per_month"] > 0 and r["saving_co2e_g_per_month"] > 0 and r["stage"] == 1
    assert r["counted_usd_per_month"] == pytest.approx(r["saving_usd_per_month"])
    assert json.loads(r["evidence"])["network_bytes_per_s"] == 0 and r["days_of_data"] == 7
    inside = [x for x in recs if x["namespace"] == "sandbox" and x["kind"] != "idle_namespace"]
    assert {x["kind"] for x in inside} >= {"abandoned_workload"}
    assert all(x["superseded_by"] == r["recommendation_id"] and x["counted_usd_per_month"] == 0 for x in inside)
    assert not [x for x in recs if x["kind"] == "idle_namespace" and x["namespace"] != "sandbox"]


def test_unmounted_claim_is_flagged(recs):
    r = _one(recs, "unclaimed_volume", "showcase/orphan-data")
    assert r["saving_usd_per_month"] > 0
    assert r["action"].startswith("Delete claim showcase/orphan-data")


def test_oversized_volumes_are_rightsized(workdir, recs):
    """PV rightsizing, recomputed from the landed kubelet stats: the window's peak used bytes x 1.3 in whole GiB (at
    least 1) against the PV's capacity, kept where it is 20 % or more below; priced as fct_asset_daily prices the
    same PV (the default $0.04 per GiB-month, flagged default_price there and here), counted whole in stage 2."""
    window_start = datetime.combine(LAST - timedelta(days=6), time())
    con = duckdb.connect(str(workdir / "wh" / "kubeledger.duckdb"), read_only=True)
    try:
        peaks = con.execute(
            "select v.pv, s.namespace || '/' || s.pvc as target, max(s.used_max_bytes) as peak, "
            "max(v.pv_capacity_bytes) as capacity from raw.volume_stats_hours s join raw.volume_hours v "
            "on v.cluster = s.cluster and v.hour_ts = s.hour_ts and v.namespace = s.namespace and v.pvc = s.pvc "
            "where s.hour_ts >= ? and s.hour_ts < ? group by all",
            [window_start, datetime.combine(LAST + timedelta(days=1), time())]).df()
        assets = con.execute(
            "select asset_name, pv_cost / hours * 730 as monthly, price_source, is_estimated "
            "from marts.fct_asset_daily where usage_date = ? and asset_kind = 'volume'", [LAST]).df()
    finally:
        con.close()
    gib = 2.0**30
    peaks["recommended"] = [max(math.ceil(p * 1.3 / gib - 1e-9), 1) * gib for p in peaks["peak"]]
    expected = peaks[peaks["recommended"] < peaks["capacity"] * 0.8]
    rows = {r["target"]: r for r in recs if r["kind"] == "volume_rightsizing"}
    assert len(expected) >= 1 and set(rows) == set(expected["target"])
    assets = assets.set_index("asset_name")
    for _, e in expected.iterrows():
        r = rows[e["target"]]
        ev = json.loads(r["evidence"])
        assert ev["pv"] == e["pv"] and ev["recommended_bytes"] == e["recommended"]
        assert ev["peak_used_bytes"] == e["peak"] and ev["capacity_bytes"] == e["capacity"]
        # the PV's monthly cost in fct_asset_daily (the default $0.04 per GiB-month), for the GiB no longer provisioned
        asset = assets.loc[e["pv"]]
        assert r["saving_usd_per_month"] == pytest.approx(asset["monthly"] * (1 - e["recommended"] / e["capacity"]),
                                                          rel=1e-9)
        assert r["saving_usd_per_month"] == pytest.approx((e["capacity"] - e["recommended"]) / gib * 0.04, rel=1e-6)
        assert asset["price_source"] == "default" and asset["is_estimated"]
        assert "default_price" in r["estimation_reasons"].split(",")
        assert r["is_estimated"] and r["stage"] == 2 and r["superseded_by"] is None
        assert r["counted_usd_per_month"] == pytest.approx(r["saving_usd_per_month"], rel=1e-12)
        assert r["hours_covered"] == 168 and json.loads(r["evidence"])["hours_with_stats"] > 0
        assert r["action"].startswith(f"Shrink claim {e['target']} (volume {e['pv']}) from ")


def test_over_provisioned_pool_can_lose_a_node(recs):
    r = _one(recs, "idle_node_pool", "m5.xlarge@us-east-1d")
    ev = json.loads(r["evidence"])
    assert ev["nodes_max"] == 3 and ev["nodes_removable"] >= 1
    assert ev["nodes_needed"] + ev["nodes_removable"] == 3
    assert r["saving_usd_per_month"] > 100 and r["saving_co2e_g_per_month"] > 0


def test_nightly_cronjob_shifts_to_a_greener_hour(recs):
    r = _one(recs, "carbon_shift_time", "showcase/cronjob/nightly-export")
    ev = json.loads(r["evidence"])
    assert ev["typical_best_start_hour"] != 20 and ev["hours_per_day"] == 2
    assert ev["best_mean_intensity_g_per_kwh"] < ev["actual_mean_intensity_g_per_kwh"]
    assert r["saving_co2e_g_per_month"] > 0 and r["saving_usd_per_month"] == 0


def test_well_sized_workload_gets_nothing(recs):
    """Nothing to resize, retire or reschedule. Where it runs is another question: the demo cluster also has node
    pools in greener carbon zones, and a move to one of them, inside the cluster, is all it may get."""
    found = [(r["kind"], r["action"]) for r in recs if r["controller"] == "right-sized-web"]
    assert all(kind == "carbon_shift_zone" and "of this cluster" in action for kind, action in found), found


def test_zone_moves_make_sense(recs):
    """No DaemonSet is moved (kube-proxy, aws-node and node-exporter run on every node by design), a workload is
    judged per zone it runs in (its id names the zone it leaves), and a zone of its own cluster comes first."""
    moves = [r for r in recs if r["kind"] == "carbon_shift_zone"]
    assert moves, "the demo cluster spans zones of different intensity: some move should pay"
    assert not [r["target"] for r in moves if r["controller_kind"] == "DaemonSet"]
    for r in moves:
        evidence = json.loads(r["evidence"])
        assert r["target"].endswith("@" + evidence["carbon_zone"]), r["target"]
        assert evidence["other_cluster"] == r["cluster"], r["action"]  # one cluster here: its own zones only
        assert evidence["carbon_zone"] != evidence["other_zone"]


def test_recommend_cli_json_matches_the_mart(workdir, recs):
    proc = subprocess.run(cli_args(workdir, "recommend", "--format", "json", "--kind", "container_rightsizing"),
                          cwd=workdir, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    want = {r["recommendation_id"]: r for r in recs if r["kind"] == "container_rightsizing"}
    assert {r["id"] for r in rows} == set(want)
    for r in rows:
        assert r["savingUsdPerMonth"] == pytest.approx(want[r["id"]]["saving_usd_per_month"])
    bad = subprocess.run(cli_args(workdir, "recommend", "--window", "3d"), cwd=workdir, env=cli_env(),
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "recommendations.window_days" in bad.stderr


def test_request_sizing_v2_answers_from_the_mart(workdir, recs):
    settings = load_settings(str(workdir / "kubeledger.yaml"))
    route = savings_routes(settings)["/model/savings/requestSizingV2"]
    con = duckdb.connect(str(workdir / "wh" / "serving.duckdb"), read_only=True)
    try:
        window = "2026-03-01T00:00:00Z,2026-03-08T00:00:00Z"
        reply = route.fn(con.cursor(), {"window": window, "filter": 'namespace:"showcase"'})
    finally:
        con.close()
    assert reply.status == 200
    (row,) = [x for x in reply.payload if x["controllerName"] == "oversized-api"]
    want = _one(recs, "container_rightsizing", "showcase/deployment/oversized-api:app")
    assert row["recommendedRequest"]["cpu"] == f"{math.ceil(want['recommended_cpu_request_cores'] * 1000 - 1e-9)}m"
    assert row["latestKnownRequest"] == {"cpu": "2000m", "memory": "4096Mi"}
    assert row["monthlySavings"]["cpu"] + row["monthlySavings"]["memory"] == pytest.approx(
        want["saving_usd_per_month"])
    assert all(x["namespace"] == "showcase" for x in reply.payload)



def _off_peak_hours(warehouse: Path) -> pd.DataFrame:
    """The window's Deployment hours at the rightsized requests (where a rightsizing row changes them): replica-hours,
    summed peaks and requests, and the hour's allocation cost, memory kWh and CO2e at those requests."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        h = con.execute("select * from intermediate.int_workload_hours_recorded where controller_kind = 'Deployment' "
                        "and hour_ts >= ? and usage_date <= ?",
                        [datetime.combine(LAST - timedelta(days=6), time()), LAST]).df()
        sized = con.execute("select namespace, controller, container, recommended_cpu_request_cores as cpu, "
                            "recommended_ram_request_bytes as ram from intermediate.int_container_requests_rightsized "
                            "where usage_date = ? and controller_kind = 'Deployment'", [LAST]).df()
    finally:
        con.close()
    h = h.merge(sized, on=["namespace", "controller", "container"], how="left")
    h["cpu_req"] = h["cpu"].fillna(h["cpu_request_cores"]) * h["run_h"]
    h["ram_req"] = h["ram"].fillna(h["ram_request_bytes"]) * h["run_h"]
    new_cpu = h[["cpu_req", "cpu_usage_core_hours"]].max(axis=1)
    new_ram = h[["ram_req", "ram_usage_byte_hours"]].max(axis=1)
    h["cost"] = new_cpu * h["cpu_price_usd"] + new_ram / 2**30 * h["ram_price_usd"] + h["gpu_cost"]
    h["kwh"] = (h["energy_memory_kwh"] * new_ram / h["ram_byte_hours"]).where(h["ram_byte_hours"] != 0)
    h["g"] = h["kwh"] * h["carbon_intensity_g_per_kwh"] * h["pue"] + \
        (h["co2e_embodied_g"] * new_cpu / h["cpu_core_hours"]).where(h["cpu_core_hours"] != 0)
    g = h.groupby(["namespace", "controller", "hour_ts"]).agg(
        run_h=("run_h", "sum"), containers=("container", "nunique"), cpu_peak=("cpu_usage_max_cores", "sum"),
        ram_peak=("ram_usage_max_bytes", "sum"), cpu_req=("cpu_req", "sum"), ram_req=("ram_req", "sum"),
        cost=("cost", "sum"), kwh=("kwh", "sum"), g=("g", "sum")).reset_index()
    g["pods"] = g["run_h"] / g["containers"]
    g["replicas"] = (g["pods"] + 0.5).apply(math.floor)
    g["needed"] = [max(math.ceil(r.cpu_peak * 1.2 * r.pods / r.cpu_req - 1e-9),
                       math.ceil(r.ram_peak * 1.2 * r.pods / r.ram_req - 1e-9), 1) for r in g.itertuples()]
    g["hour"], g["day"] = g["hour_ts"].dt.hour, g["hour_ts"].dt.date
    return g


def _off_peak_block(g: pd.DataFrame) -> tuple[list[int], int] | None:
    """The longest run of hours of the day quiet on all 7 days (across midnight), at least 4, and its largest need."""
    quiet = {hour for hour, x in g.groupby("hour") if x.loc[x["needed"] < x["replicas"], "day"].nunique() >= 7}
    if len(quiet) == 24:
        return None
    first_busy = min(set(range(24)) - quiet)
    best: list[int] = []
    run: list[int] = []
    for k in range(1, 25):  # from the first busy hour round the clock, so no run is cut at midnight
        hour = (first_busy + k) % 24
        if hour in quiet:
            run.append(hour)
        else:
            best, run = (run if len(run) > len(best) else best), []
    if len(best) < 4:
        return None
    return best, int(g.loc[g["hour"].isin(best), "needed"].max())


def test_off_peak_scale_down_recomputed(workdir, recs):
    """Every Deployment's off-peak scale-down, recomputed in pandas from the hourly history at the rightsized
    requests: the Deployments that get one, the block, the replicas and the monthly $, kWh and CO2e."""
    hours = _off_peak_hours(workdir / "wh" / "kubeledger.duckdb")
    want: dict[str, tuple[str, tuple[float, float, float]]] = {}
    for (ns, name), g in hours.groupby(["namespace", "controller"]):
        block = _off_peak_block(g)
        if block is None or g["replicas"].min() < 2:
            continue
        hours_of_block, n = block
        inside = g[g["hour"].isin(hours_of_block)]
        share = (inside["replicas"] - n).clip(lower=0) / inside["pods"]
        per_month = 730 / 24 / g["day"].nunique()
        saving = tuple(float((share * inside[c]).sum()) * per_month for c in ("cost", "kwh", "g"))
        if saving[0] > 0:
            start, end = hours_of_block[0], (hours_of_block[-1] + 1) % 24
            want[f"off_peak_scale_down:demo/{ns}/deployment/{name}"] = (
                f"Scale to {n} replicas (now {g['replicas'].min()}) from {start:02d}:00 to {end:02d}:00 UTC every day",
                saving)
    rows = {r["recommendation_id"]: r for r in recs if r["kind"] == "off_peak_scale_down"}
    assert want, "the demo's diurnal Deployments should have quiet nights"
    assert set(rows) == set(want)
    for rid, (action, saving) in want.items():
        r = rows[rid]
        assert r["action"].startswith(action), (r["action"], action)
        assert (r["saving_usd_per_month"], r["saving_kwh_per_month"], r["saving_co2e_g_per_month"]) == \
            pytest.approx(saving, rel=1e-9, abs=1e-9), rid
        assert r["stage"] == 2
        if r["superseded_by"] is None:  # counted on top of the rightsizing it is computed after
            assert r["counted_usd_per_month"] == pytest.approx(r["saving_usd_per_month"])


def test_hpa_candidate_recomputed(workdir, recs):
    """Every Deployment an HPA would size for less, recomputed in pandas from the hourly history at today's requests:
    the same replicas (>= 2) and CPU request per replica in every hour, p95 / p50 of its hourly CPU >= 2, per hour
    the replicas needed at a 70 % CPU target and for the summed memory peaks, and the replica-hours above that need
    x the hour's cost, memory kWh and CO2e, x 730 / the observed hours. The scenario's bursty-api is one; without the
    Kubernetes API it says hpa_not_checked, and it saves more than its rightsizing (no off-peak block: a burst every
    4 hours), so it counts and the rightsizing is superseded by it."""
    con = duckdb.connect(str(workdir / "wh" / "kubeledger.duckdb"), read_only=True)
    try:
        window = [datetime.combine(LAST - timedelta(days=6), time()), LAST]
        h = con.execute("select * from intermediate.int_workload_hours_recorded where controller_kind = 'Deployment' "
                        "and hour_ts >= ? and usage_date <= ?", window).df()
        observed = con.execute("select count(distinct hour_ts) from intermediate.int_node_hours_recorded "
                               "where hour_ts >= ? and usage_date <= ?", window).fetchone()[0]
    finally:
        con.close()
    h["cost"] = h["cpu_cost"] + h["ram_cost"] + h["gpu_cost"]
    h["g"] = h["energy_memory_kwh"] * h["carbon_intensity_g_per_kwh"] * h["pue"] + h["co2e_embodied_g"]
    h["cpu_req"], h["ram_req"] = h["cpu_request_cores"] * h["run_h"], h["ram_request_bytes"] * h["run_h"]
    g = h.groupby(["namespace", "controller", "hour_ts"]).agg(
        run_h=("run_h", "sum"), containers=("container", "nunique"), cpu=("cpu_usage_core_hours", "sum"),
        ram_peak=("ram_usage_max_bytes", "sum"), cpu_req=("cpu_req", "sum"), ram_req=("ram_req", "sum"),
        cost=("cost", "sum"), kwh=("energy_memory_kwh", "sum"), g=("g", "sum")).reset_index()
    g["pods"] = g["run_h"] / g["containers"]
    g = g[g["pods"] > 0].copy()
    g["replicas"] = (g["pods"] + 0.5).apply(math.floor)
    g["request"] = g["cpu_req"] / g["pods"]

    def need(r) -> int:
        cpu = math.ceil(r.cpu * r.pods / (r.cpu_req * 0.7) - 1e-9) if r.cpu_req > 0 else 1
        ram = math.ceil(r.ram_peak * r.pods / r.ram_req - 1e-9) if r.ram_req > 0 else 1
        return max(cpu, ram, 1)

    g["needed"] = [need(r) for r in g.itertuples()]
    want: dict[str, tuple[str, float, tuple[float, float, float]]] = {}
    for (ns, name), x in g.groupby(["namespace", "controller"]):
        p50, p95 = x["cpu"].quantile(0.5), x["cpu"].quantile(0.95)
        n = x["replicas"].min()
        if (n < 2 or x["replicas"].max() != n or x["request"].max() > x["request"].min() * 1.000001 or p50 <= 0
                or p95 < p50 * 2.0):
            continue
        share = (x["replicas"] - x["needed"]) / x["pods"]
        saving = tuple(float((share * x[c]).sum()) * 730 / observed for c in ("cost", "kwh", "g"))
        if saving[0] > 0:
            action = (f"Add a HorizontalPodAutoscaler: min {x['needed'].min()}, max {max(x['needed'].max(), n)} "
                      f"replicas, target 70% CPU (now a fixed {n})")
            want[f"hpa_candidate:demo/{ns}/deployment/{name}"] = (action, p95 / p50, saving)
    rows = {r["recommendation_id"]: r for r in recs if r["kind"] == "hpa_candidate"}
    bursty = "hpa_candidate:demo/showcase/deployment/bursty-api"
    assert bursty in want and set(rows) == set(want)
    for rid, (action, ratio, saving) in want.items():
        r = rows[rid]
        assert r["action"] == action, (r["action"], action)
        assert (r["saving_usd_per_month"], r["saving_kwh_per_month"], r["saving_co2e_g_per_month"]) == \
            pytest.approx(saving, rel=1e-9, abs=1e-9), rid
        ev = json.loads(r["evidence"])
        assert ev["burst_ratio"] == pytest.approx(ratio, rel=1e-9) and ev["hpa_checked"] is False
        assert "hpa_not_checked" in r["estimation_reasons"].split(",") and r["is_estimated"]
    r = rows[bursty]
    assert r["superseded_by"] is None and r["counted_usd_per_month"] == pytest.approx(r["saving_usd_per_month"])
    sizing = _one(recs, "container_rightsizing", "showcase/deployment/bursty-api:api")
    assert 0 < sizing["saving_usd_per_month"] < r["saving_usd_per_month"]
    assert sizing["superseded_by"] == bursty and sizing["counted_usd_per_month"] == 0
    assert not [x for x in recs if x["kind"] == "off_peak_scale_down" and x["controller"] == "bursty-api"]


ACTION_RE = re.compile(r"^Set requests to (\d+)m CPU and (\d+)Mi memory \(now (\d+m|none), (\d+Mi|none)\)$")


def test_text_api_and_csv_print_the_same_quantities(workdir, recs):
    """One rounding rule (Kubernetes quantities rounded up) for the action text, requestSizingV2 and the CSV:
    before, the text rounded to the nearest unit (195m / 741Mi) where the API rounded up (196m / 742Mi)."""
    rows = [r for r in recs if r["kind"] == "container_rightsizing"]
    assert rows
    settings = load_settings(str(workdir / "kubeledger.yaml"))
    con = duckdb.connect(str(workdir / "wh" / "serving.duckdb"), read_only=True)
    try:
        reply = savings_routes(settings)["/model/savings/requestSizingV2"].fn(
            con.cursor(), {"window": "2026-03-01T00:00:00Z,2026-03-08T00:00:00Z"})
    finally:
        con.close()
    api = {(x["namespace"], x["controllerName"], x["containerName"]): x for x in reply.payload}
    proc = subprocess.run(cli_args(workdir, "recommend", "--format", "csv", "--kind", "container_rightsizing"),
                          cwd=workdir, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    csv_rows = {r["id"]: r for r in csv.DictReader(io.StringIO(proc.stdout))}
    for r in rows:
        m = ACTION_RE.match(r["action"])
        assert m, r["action"]
        cpu, mem, cpu_now, mem_now = m.groups()
        # the rule itself, from the mart's raw numbers: up to the next whole unit, float error allowed
        assert int(cpu) == math.ceil(r["recommended_cpu_request_cores"] * 1000 - 1e-9), r
        assert int(mem) == math.ceil(r["recommended_ram_request_bytes"] / 2**20 - 1e-9), r
        x = api[(r["namespace"], r["controller"], r["container"])]
        assert (x["recommendedRequest"]["cpu"], x["recommendedRequest"]["memory"]) == (f"{cpu}m", f"{mem}Mi")
        assert (x["latestKnownRequest"]["cpu"] or "none", x["latestKnownRequest"]["memory"] or "none") == \
            (cpu_now, mem_now)
        c = csv_rows[r["recommendation_id"]]
        assert (c["cpuRecommended"], c["memoryRecommended"]) == (f"{cpu}m", f"{mem}Mi")
        assert (c["cpuLatest"] or "none", c["memoryLatest"] or "none") == (cpu_now, mem_now)


def _independent_total(warehouse: Path) -> tuple[dict[str, tuple[float, float, float]], dict[str, str]]:
    """The day's savings counted once, recomputed in pandas from the intermediate tables (not from the counting
    model): per recommendation id (usd, kWh, gCO2e) per month, and the ids another one supersedes."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        recs = con.execute("select * from marts.fct_recommendation_daily where usage_date = ?", [LAST]).df()
        parts = con.execute(
            "select recommendation_id, saving_cpu_usd_per_month as cpu_usd, saving_ram_usd_per_month as ram_usd, "
            "saving_kwh_per_month as kwh, saving_cpu_co2e_g_per_month as cpu_g, saving_ram_co2e_g_per_month "
            "as ram_g from intermediate.int_container_requests_rightsized where usage_date = ?", [LAST]
        ).df().set_index("recommendation_id")
        window_start = datetime.combine(LAST - timedelta(days=6), time())
        costs = con.execute(
            "select h.namespace, h.controller_kind, h.controller, h.container, "
            "n.instance_type || '@' || coalesce(n.availability_zone, 'no-zone') as pool, h.cpu_cost + h.ram_cost "
            "as cost from intermediate.int_workload_hours_recorded h join intermediate.int_node_hours_recorded n "
            "on n.cluster = h.cluster and n.hour_ts = h.hour_ts and n.node = h.node "
            "where h.hour_ts >= ? and h.usage_date <= ? and n.instance_type is not null",
            [window_start, LAST]).df()
    finally:
        con.close()
    controller = ["namespace", "controller_kind", "controller"]
    idle_namespaces = {r["namespace"]: r["recommendation_id"] for _, r in recs.iterrows()
                       if r["kind"] == "idle_namespace"}
    retired = {tuple(r[controller]): r["recommendation_id"] for _, r in recs.iterrows()
               if r["kind"] == "abandoned_workload"}
    unclaimed = {r["target"]: r["recommendation_id"] for _, r in recs.iterrows() if r["kind"] == "unclaimed_volume"}

    def retired_by(r: pd.Series) -> str | None:  # an idle namespace retires everything in it, before its workloads
        if r["kind"] not in ("idle_namespace", "unclaimed_volume") and r["namespace"] in idle_namespaces:
            return idle_namespaces[r["namespace"]]
        return retired.get(tuple(r[controller])) if r["kind"] != "abandoned_workload" else None

    counted: dict[str, tuple[float, float, float]] = {}
    superseded: dict[str, str] = {}
    for _, r in recs.iterrows():
        rid = r["recommendation_id"]
        if r["kind"] in ("container_rightsizing", "abandoned_workload") and retired_by(r):
            counted[rid], superseded[rid] = (0.0, 0.0, 0.0), retired_by(r)
        elif r["kind"] == "container_rightsizing":
            x = parts.loc[rid]
            counted[rid] = (max(x.cpu_usd, 0) + max(x.ram_usd, 0), max(x.kwh, 0), max(x.cpu_g, 0) + max(x.ram_g, 0))
        elif r["kind"] in ("off_peak_scale_down", "hpa_candidate") and retired_by(r):
            counted[rid], superseded[rid] = (0.0, 0.0, 0.0), retired_by(r)
        elif r["kind"] == "volume_rightsizing" and r["target"] in unclaimed:  # the volume is retired whole
            counted[rid], superseded[rid] = (0.0, 0.0, 0.0), unclaimed[r["target"]]
        elif r["kind"] in ("idle_namespace", "abandoned_workload", "unclaimed_volume", "off_peak_scale_down",
                           "hpa_candidate", "volume_rightsizing"):
            counted[rid] = tuple(max(r[f"saving_{q}_per_month"], 0.0) for q in ("usd", "kwh", "co2e_g"))
    _hpa_alternatives(recs, parts, counted, superseded)
    freed = _freed_on_pools(recs, costs, counted)
    for _, r in recs[recs["kind"] == "idle_node_pool"].iterrows():
        f = freed.get(r["target"], [0.0, 0.0, 0.0])
        counted[r["recommendation_id"]] = tuple(
            max(r[f"saving_{q}_per_month"] - f[i], 0.0) for i, q in enumerate(("usd", "kwh", "co2e_g")))
    _spot_after_sizing(recs, counted, superseded, retired_by)
    shifts = recs[recs["kind"].isin(["carbon_shift_time", "carbon_shift_zone"])]
    for _key, group in shifts.groupby(controller, dropna=False):
        live = group[[retired_by(r) is None for _, r in group.iterrows()]]
        best = (live.sort_values(["saving_co2e_g_per_month", "recommendation_id"], ascending=[False, True])
                .iloc[0]["recommendation_id"] if len(live) else None)
        for _, r in group.iterrows():
            rid = r["recommendation_id"]
            if retired_by(r):
                counted[rid], superseded[rid] = (0.0, 0.0, 0.0), retired_by(r)
            elif rid != best:
                counted[rid], superseded[rid] = (0.0, 0.0, 0.0), best
            else:
                counted[rid] = (0.0, 0.0, max(r["saving_co2e_g_per_month"], 0.0))
    return counted, superseded


def _spot_after_sizing(recs: pd.DataFrame, counted: dict[str, tuple[float, float, float]],
                       superseded: dict[str, str], retired_by) -> None:
    """Stage 5, cumulative: a spot_eligible row prices what stage 2 leaves of its workload's cost (its $ saving x
    max(1 - the controller's counted sizing $ / the workload's monthly cost, 0)); a retired controller none."""
    controller = ["namespace", "controller_kind", "controller"]
    sizing = recs[recs["kind"].isin(["container_rightsizing", "off_peak_scale_down", "hpa_candidate"])]
    for _, r in recs[recs["kind"] == "spot_eligible"].iterrows():
        rid = r["recommendation_id"]
        if retired_by(r):
            counted[rid], superseded[rid] = (0.0, 0.0, 0.0), retired_by(r)
            continue
        same = sizing[(sizing[controller] == r[controller]).all(axis=1)]["recommendation_id"]
        sized = sum(counted[s][0] for s in same)
        cost = json.loads(r["evidence"])["workload_cost_usd_per_month"]
        counted[rid] = (max(r["saving_usd_per_month"], 0.0) * max(1 - sized / cost, 0.0), 0.0, 0.0)


def _freed_on_pools(recs: pd.DataFrame, costs: pd.DataFrame,
                    counted: dict[str, tuple[float, float, float]]) -> dict[str, list[float]]:
    """What retiring and sizing free on each pool, by each workload's (or namespace's) cost share on it."""
    controller = ["namespace", "controller_kind", "controller"]
    by_namespace = costs.groupby(["namespace", "pool"])["cost"].sum()
    costs = costs[costs["controller"].notna()]
    by_container = costs.groupby([*controller, "container", "pool"])["cost"].sum()
    by_controller = costs.groupby([*controller, "pool"])["cost"].sum()
    freed: dict[str, list[float]] = {}
    for _, r in recs.iterrows():
        rid = r["recommendation_id"]
        if rid not in counted or not any(counted[rid]):
            continue
        key = tuple(r[controller])
        shares = (by_container.loc[(*key, r["container"])] if r["kind"] == "container_rightsizing"
                  else by_namespace.loc[r["namespace"]] if r["kind"] == "idle_namespace"
                  else by_controller.loc[key] if key in by_controller.index.droplevel("pool") else None)
        if shares is None or shares.empty:
            continue
        for pool, cost in shares.items():
            acc = freed.setdefault(pool, [0.0, 0.0, 0.0])
            for i in range(3):
                acc[i] += counted[rid][i] * cost / shares.sum()
    return freed


def _hpa_alternatives(recs: pd.DataFrame, parts: pd.DataFrame, counted: dict[str, tuple[float, float, float]],
                      superseded: dict[str, str]) -> None:
    """Per Deployment, its HPA against its rightsizing savings plus its off-peak scale-down: the larger $ counts
    (then the larger CO2e; a tie keeps the rightsizing), the other side is superseded by it; a request to raise (a
    risk fix) keeps the rightsizing and the HPA counts nothing."""
    controller = ["namespace", "controller_kind", "controller"]
    for _, h in recs[recs["kind"] == "hpa_candidate"].iterrows():
        if h["recommendation_id"] in superseded:  # retired
            continue
        same = recs[(recs[controller] == h[controller]).all(axis=1)
                    & recs["kind"].isin(["container_rightsizing", "off_peak_scale_down"])]
        rest = [rid for rid in same["recommendation_id"] if rid not in superseded]
        risky = [rid for rid in rest if rid in parts.index and (parts.loc[rid] < 0).any()]
        by_kind = {k: sorted(rid for rid in rest if rid.startswith(k + ":"))
                   for k in ("container_rightsizing", "off_peak_scale_down")}
        rest_usd, rest_g = sum(counted[rid][0] for rid in rest), sum(counted[rid][2] for rid in rest)
        hpa = counted[h["recommendation_id"]]
        if not risky and (hpa[0] > rest_usd or (hpa[0] == rest_usd and hpa[2] > rest_g)):
            for rid in rest:
                counted[rid], superseded[rid] = (0.0, 0.0, 0.0), h["recommendation_id"]
        else:
            counted[h["recommendation_id"]] = (0.0, 0.0, 0.0)
            winner = (sorted(risky) or by_kind["off_peak_scale_down"] or by_kind["container_rightsizing"] or [None])[-1]
            if winner:
                superseded[h["recommendation_id"]] = winner


def test_spot_eligible_recomputed(workdir, recs):
    """Each stateless Deployment with >= 2 replicas in every hour, no claim mounted and on-demand pods in its latest
    hour gets a spot_eligible row worth its on-demand hours' cost x (1 - spot / on-demand): the demo has no spot
    column in the sheet, so the provider's spotCPU / CPU and spotRAM / RAM ratios (flagged default_spot_price), and
    no Kubernetes API (pdb_not_checked). Recomputed in pandas from the hourly history."""
    con = duckdb.connect(str(workdir / "wh" / "kubeledger.duckdb"), read_only=True)
    try:
        window_start = datetime.combine(LAST - timedelta(days=6), time())
        hours = con.execute(
            "select h.namespace, h.controller_kind, h.controller, h.container, h.hour_ts, h.run_h, h.cpu_cost, "
            "h.ram_cost, h.gpu_cost, h.mounts_volume, n.is_spot, n.provider "
            "from intermediate.int_workload_hours_recorded h "
            "left join intermediate.int_node_hours_recorded n on n.cluster = h.cluster and n.hour_ts = h.hour_ts "
            "and n.node = h.node where h.hour_ts >= ? and h.usage_date <= ? "
            "and h.controller_kind in ('Deployment', 'ReplicaSet')", [window_start, LAST]).df()
        observed = con.execute("select count(distinct hour_ts) from intermediate.int_node_hours_recorded "
                               "where hour_ts >= ? and usage_date <= ?", [window_start, LAST]).fetchone()[0]
        prices = {r[0]: r[1:] for r in con.execute(
            "select provider, spot_cpu_usd / cpu_usd, spot_ram_usd / ram_usd, spot_gpu_usd / gpu_usd "
            "from intermediate.int_resource_prices_resolved").fetchall()}
        sheet_spot = con.execute("select count(*) from intermediate.int_instance_prices_resolved "
                                 "where spot_hourly_usd > 0").fetchone()[0]
    finally:
        con.close()
    assert sheet_spot == 0  # the demo prices spot with the per-resource ratios only
    want: dict[str, float] = {}
    for (ns, kind, name), g in hours.groupby(["namespace", "controller_kind", "controller"]):
        per_hour = g.groupby("hour_ts").agg(run_h=("run_h", "sum"), containers=("container", "nunique"),
                                            on_demand=("is_spot", lambda s: (~s.fillna(False)).sum()))
        replicas = (per_hour["run_h"] / per_hour["containers"]).round()
        latest = per_hour.sort_index().iloc[-1]
        if (replicas.min() < 2 or g["mounts_volume"].any() or latest["on_demand"] == 0
                or (g["provider"] == "onprem").any()):
            continue
        od = g[~g["is_spot"].fillna(False)]
        ratio = od["provider"].map(lambda p: prices.get(p, prices["default"]))
        spot = sum(c * r[0] + m * r[1] + u * r[2] for c, m, u, r in
                   zip(od["cpu_cost"], od["ram_cost"], od["gpu_cost"], ratio, strict=True))
        saving = (od["cpu_cost"] + od["ram_cost"] + od["gpu_cost"]).sum() - spot
        if saving > 0:
            want[f"spot_eligible:demo/{ns}/{kind.lower()}/{name}"] = saving * 730 / observed
    rows = {r["recommendation_id"]: r for r in recs if r["kind"] == "spot_eligible"}
    assert want and set(rows) == set(want)
    for rid, saving in want.items():
        r = rows[rid]
        assert r["saving_usd_per_month"] == pytest.approx(saving, rel=1e-9), rid
        assert (r["saving_kwh_per_month"], r["saving_co2e_g_per_month"]) == (0, 0)
        assert {"default_spot_price", "pdb_not_checked"} <= set(r["estimation_reasons"].split(","))
        assert json.loads(r["evidence"])["pdb_checked"] is False
    # the StatefulSet of the scenario (a claim mounted) is never a candidate
    assert not any(r["controller_kind"] == "StatefulSet" for r in rows.values())


def test_report_cli_and_api_print_one_total_counted_once(workdir, recs):
    """The non-overlapping total, recomputed independently, is the number the report, `kubeledger recommend`
    (table and JSON) and /model/savings print. The scenario has the overlaps that were double counted: the
    abandoned worker is also oversized, and the removable node's pool carries the oversized API."""
    assert {r["kind"] for r in recs} == set(KINDS)  # every kind at once
    counted, superseded = _independent_total(workdir / "wh" / "kubeledger.duckdb")
    total = sum(c[0] for c in counted.values())
    assert set(counted) == {r["recommendation_id"] for r in recs}
    for r in recs:  # row by row, the mart counts what the recomputation counts
        assert (r["counted_usd_per_month"], r["counted_kwh_per_month"], r["counted_co2e_g_per_month"]) == \
            pytest.approx(counted[r["recommendation_id"]], rel=1e-9, abs=1e-9), r["recommendation_id"]
        assert r["superseded_by"] == superseded.get(r["recommendation_id"])
    abandoned = _one(recs, "abandoned_workload", "showcase/deployment/abandoned-worker")
    assert any(s == abandoned["recommendation_id"] for s in superseded.values())  # its rightsizing is moot
    pool = next(r for r in recs if r["kind"] == "idle_node_pool" and r["target"].startswith("m5.xlarge@"))
    api_row = _one(recs, "container_rightsizing", "showcase/deployment/oversized-api:app")
    assert api_row["recommendation_id"] in (pool["depends_on"] or "").split(",")
    assert pool["counted_usd_per_month"] < pool["saving_usd_per_month"]  # the overlap is no longer added twice
    standalone = sum(max(r["saving_usd_per_month"], 0) for r in recs)
    assert total < standalone

    settings = load_settings(str(workdir / "kubeledger.yaml"))
    con = duckdb.connect(str(workdir / "wh" / "serving.duckdb"), read_only=True)
    try:
        reply = savings_routes(settings)["/model/savings"].fn(con.cursor(), {})
    finally:
        con.close()
    api_total = reply.payload["data"]["kubeledger"]["total"]
    assert api_total["countedUsdPerMonth"] == pytest.approx(total, rel=1e-9)

    table = subprocess.run(cli_args(workdir, "recommend"), cwd=workdir, env=cli_env(), capture_output=True,
                           text=True, timeout=120)
    assert table.returncode == 0, table.stderr
    m = re.search(r"counted once \(retire, rightsize, re-pack, shift, spot\): \$([\d.]+),", table.stdout)
    assert m and m.group(1) == f"{total:.2f}", table.stdout[-2000:]
    as_json = subprocess.run(cli_args(workdir, "recommend", "--format", "json"), cwd=workdir, env=cli_env(),
                             capture_output=True, text=True, timeout=120)
    assert sum(r["countedUsdPerMonth"] for r in json.loads(as_json.stdout)) == pytest.approx(total, rel=1e-9)

    page = Path(run_cli(workdir, "report", "--date", LAST.isoformat()).stdout.strip().splitlines()[-1]).read_text()
    m = re.search(r'data-metric="recommendation_total_usd" data-value="([^"]+)"', page)
    assert m and float(m.group(1)) == pytest.approx(total, rel=1e-9)
