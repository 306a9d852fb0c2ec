"""Prometheus extractor against a real Prometheus 2.42 serving the backfilled scenario (tests/fixtures/prom_scenario.py).

Tolerances:
- running minutes, run_start_s/run_end_s, requests, limits, capacities: exact (raw-sample counts and gauges).
- CPU core-seconds: rate() over [h, h+1) is exact for a series that covers the hour (the scenario's counters are
  linear inside an hour). A series born or ending inside the hour (pod start/end, restart -> new cgroup) makes
  rate() extrapolate by up to half a scrape interval (or to the counter's zero point), so each such edge may
  shift the result by at most one scrape interval of usage: tolerance = rate x 60 s x edges (+ 1e-6 relative).
- memory average/peak, CPU peak: 1 % relative (the gap hour's subquery points see one stale sample).
- network bytes: 1e-6 relative (constant byte rates over whole hours).
"""

from __future__ import annotations

import logging
import math
from datetime import timedelta
from typing import Any

import duckdb
import pytest

from pipelines.settings import ClusterSettings, PrometheusSettings, load_settings
from pipelines.sources.base import OPTIONAL_SERIES, SourceError
from pipelines.sources.metrics import extract_metrics
from pipelines.sources.prometheus import MAX_CHUNK_HOURS, PrometheusClient, _plan, extract_prometheus_hours
from pipelines.warehouse.connection import ensure_raw_schema
from pipelines.warehouse.landing import replace_partitions
from tests.fixtures.prom_coverage import LEGACY
from tests.fixtures.prom_scenario import DAY, HOURS, SCRAPE_S, VOLUME_FS_BYTES, volume_used_bytes

pytestmark = [pytest.mark.integration, pytest.mark.prometheus]

HOURS_LIST = [DAY + timedelta(hours=i) for i in range(HOURS)]


def _cluster(url: str, name: str = "small") -> ClusterSettings:
    return ClusterSettings(name=name, source="prometheus", prometheus=PrometheusSettings(
        url=url, cluster_label="cluster", scrape_interval_s=SCRAPE_S, retries=1, timeout_s=30))


@pytest.fixture(scope="module")
def extracted(prometheus_scenario: Any) -> Any:
    return extract_prometheus_hours(_cluster(prometheus_scenario.url), HOURS_LIST)


def _close(got: Any, want: Any, rel: float = 1e-9, abs_: float = 1e-9) -> bool:
    if want is None:
        return got is None or (isinstance(got, float) and math.isnan(got))
    return got is not None and not (isinstance(got, float) and math.isnan(got)) and \
        math.isclose(float(got), float(want), rel_tol=rel, abs_tol=abs_)


def test_container_rows_equal_known_values(extracted: Any, prometheus_scenario: Any) -> None:
    exp = prometheus_scenario.expected["small"]["containers"]
    frame = extracted.batches["container_hours"]
    got = {(r["hour_ts"].to_pydatetime(), r["pod_uid"], r["container"]): r for r in frame.to_dict("records")}
    assert set(got) == set(exp), "one row per (hour, pod uid, container) with samples in the hour"
    for key, want in exp.items():
        g = got[key]
        for col in ("namespace", "pod"):
            assert g[col] == want[col], (key, col)
        assert (g["node"] if isinstance(g["node"], str) else None) == want["node"], key
        for col in ("running_minutes", "run_start_s", "run_end_s", "cpu_request_cores", "ram_request_bytes",
                    "cpu_limit_cores"):
            assert _close(g[col], want[col]), (key, col, g[col], want[col])
        for col in ("cpu_usage_max_cores", "ram_usage_avg_bytes", "ram_usage_max_bytes"):
            assert _close(g[col], want[col], rel=0.01), (key, col, g[col], want[col])
        cpu = want["cpu_usage_core_seconds"]
        if cpu is None:
            assert _close(g["cpu_usage_core_seconds"], None), key
        else:
            tol = want["cpu_usage_max_cores"] * SCRAPE_S * want["cpu_series_edges"]
            assert _close(g["cpu_usage_core_seconds"], cpu, rel=1e-6, abs_=tol), (key, g["cpu_usage_core_seconds"], cpu)
        assert (frame["_source"] == "prometheus").all()


def test_ha_kube_state_metrics_is_deduplicated(extracted: Any) -> None:
    f = extracted.batches["container_hours"]
    web_a = f[(f["namespace"] == "team-a") & (f["pod"] == "web-1") & (f["container"] == "app")]
    assert web_a["running_minutes"].max() == 60.0           # two KSM replicas, never 120
    assert set(web_a["cpu_request_cores"]) == {0.25}          # max by, never summed
    assert f.duplicated(["hour_ts", "pod_uid", "container"]).sum() == 0


def test_same_name_pods_kept_apart_by_uid(extracted: Any) -> None:
    f = extracted.batches["container_hours"]
    h0 = f[(f["hour_ts"] == DAY) & (f["pod"] == "web-1") & (f["container"] == "app")]
    by_ns = {r["namespace"]: r for r in h0.to_dict("records")}
    assert set(by_ns) == {"team-a", "team-b"}
    assert by_ns["team-a"]["pod_uid"] != by_ns["team-b"]["pod_uid"]
    # team-b's cgroup paths use the systemd driver (underscores): its usage still maps to its own uid
    assert by_ns["team-a"]["cpu_usage_core_seconds"] == pytest.approx(0.5 * 3600)
    assert by_ns["team-b"]["cpu_usage_core_seconds"] == pytest.approx(0.2 * 3600)


def test_counter_reset_on_restart_is_handled(extracted: Any) -> None:
    f = extracted.batches["container_hours"]
    row = f[(f["hour_ts"] == DAY + timedelta(hours=1)) & (f["namespace"] == "team-a") & (f["pod"] == "web-1")
            & (f["container"] == "app")].iloc[0]
    # restart at 01:20 -> new cgroup series from ~0; rate per series then sum: no negative or doubled usage
    assert row["cpu_usage_core_seconds"] == pytest.approx(0.625 * 3600, abs=0.625 * SCRAPE_S * 2)
    assert row["cpu_usage_max_cores"] == pytest.approx(0.625, rel=0.01)


def test_pod_node_namespace_volume_service_rows(extracted: Any, prometheus_scenario: Any) -> None:
    exp = prometheus_scenario.expected["small"]
    pods = {(r["hour_ts"].to_pydatetime(), r["pod_uid"]): r for r in extracted.batches["pod_hours"].to_dict("records")}
    assert set(pods) == set(exp["pods"])
    for key, want in exp["pods"].items():
        g = pods[key]
        for col in ("namespace", "pod", "phase", "controller_kind", "controller_name", "owner_kind", "labels"):
            assert (g[col] if isinstance(g[col], str) else None) == want[col], (key, col)
        for col in ("network_transmit_bytes", "network_receive_bytes"):
            assert _close(g[col], want[col], rel=1e-6), (key, col, g[col], want[col])
    nodes = {(r["hour_ts"].to_pydatetime(), r["node"]): r for r in extracted.batches["node_hours"].to_dict("records")}
    assert set(nodes) == set(exp["nodes"])
    for key, want in exp["nodes"].items():
        for col, v in want.items():
            assert _close(nodes[key][col], v) if isinstance(v, float) else nodes[key][col] == v, (key, col)
    ns = extracted.batches["namespace_hours"]
    assert ns[(ns["namespace"] == "team-a")]["labels"].unique().tolist() == ['{"team": "a"}']
    vol = extracted.batches["volume_hours"]
    pv1 = vol[vol["pv"] == "pv-001"].set_index("hour_ts")
    assert (pv1["pvc"] == "data-web").all() and (pv1["pvc_request_bytes"] == 10 * 2**30).all()
    assert pv1["active_minutes"].tolist() == [exp["full_minutes"][h] for h in HOURS_LIST]
    pv2 = vol[vol["pv"] == "pv-002"]
    assert pv2["pvc"].isna().all() and (pv2["pv_capacity_bytes"] == 5 * 2**30).all()
    mounts = extracted.batches["pod_volume_hours"]
    assert set(mounts["pvc"]) == {"data-web"} and mounts["pod_uid"].nunique() == 1 and len(mounts) == HOURS
    stats = extracted.batches["volume_stats_hours"].set_index("hour_ts")  # the kubelet's, per claim (PV rightsizing)
    assert set(zip(stats["namespace"], stats["pvc"], strict=True)) == {("team-a", "data-web")} and len(stats) == HOURS
    want = [volume_used_bytes(i * 3600) for i in range(HOURS)]
    assert stats.loc[HOURS_LIST, "used_max_bytes"].tolist() == want
    assert stats.loc[HOURS_LIST, "used_avg_bytes"].tolist() == want
    assert (stats["capacity_bytes"] == VOLUME_FS_BYTES).all()
    svc = extracted.batches["service_hours"]
    assert set(svc["service"]) == {"web-lb"}  # ClusterIP services are not landed
    assert (svc["ingress"] == "203.0.113.10").all()
    assert set(svc["pod_uid"]) == {"0a1b2c3d-0000-4000-8000-00000000000a"}
    assert "gpu_hours" not in extracted.batches  # no DCGM metrics in the scenario


def test_query_count_bounded_and_independent_of_pod_count(prometheus_scenario: Any, extracted: Any) -> None:
    big = extract_prometheus_hours(_cluster(prometheus_scenario.url, "big"), HOURS_LIST)
    assert big.rows() > extracted.rows()  # 40 more pods ...
    assert big.metadata["queries"] == extracted.metadata["queries"]  # ... same number of requests
    plan = len(_plan([], False, SCRAPE_S))
    chunks = math.ceil(len(HOURS_LIST) / MAX_CHUNK_HOURS)
    assert extracted.metadata["queries"] == 1 + plan * chunks  # buildinfo + one request per query and chunk
    assert extracted.metadata["queries_per_hour"] <= plan
    assert extracted.metadata["left_open_ranges"] is False


def test_split_hours_give_the_same_rows(prometheus_scenario: Any, extracted: Any) -> None:
    cluster = _cluster(prometheus_scenario.url)
    client = PrometheusClient(cluster.prometheus, cluster.name)
    parts = [extract_prometheus_hours(cluster, [h], client) for h in (HOURS_LIST[0], HOURS_LIST[2])]
    full = extracted.batches["container_hours"]
    for part, h in zip(parts, (HOURS_LIST[0], HOURS_LIST[2]), strict=True):
        assert part.partitions == [{"cluster": "small", "hour_ts": h}]
        a = part.batches["container_hours"].sort_values(["pod_uid", "container"]).reset_index(drop=True)
        b = full[full["hour_ts"] == h].sort_values(["pod_uid", "container"]).reset_index(drop=True)
        assert a.drop(columns=["cpu_usage_core_seconds"]).equals(b.drop(columns=["cpu_usage_core_seconds"]))
    assert parts[1].metadata["queries"] == len(_plan([], False, SCRAPE_S))  # detection cached on the client


def test_hour_without_kube_state_metrics_is_an_error(prometheus_scenario: Any) -> None:
    with pytest.raises(SourceError, match="no kube-state-metrics data") as err:
        extract_prometheus_hours(_cluster(prometheus_scenario.url), [DAY - timedelta(hours=5)])
    assert "small" in str(err.value)


def test_hours_without_kube_state_metrics_are_left_out_not_zeroed(prometheus_scenario: Any) -> None:
    """A day with a gap: the hours with data land, the empty hour is not a partition (no zeros, and nothing
    landed for it before is deleted); the run fails only when no hour has data (above)."""
    empty, full = DAY - timedelta(hours=5), HOURS_LIST[0]
    result = extract_prometheus_hours(_cluster(prometheus_scenario.url), [empty, full])
    assert result.partitions == [{"cluster": "small", "hour_ts": full}]
    assert set(result.batches["node_hours"]["hour_ts"]) == {full}
    assert all(empty not in set(f["hour_ts"]) for f in result.batches.values() if "hour_ts" in f.columns)


def test_landing_twice_is_idempotent(extracted: Any) -> None:
    con = duckdb.connect()
    ensure_raw_schema(con)
    first = replace_partitions(con, extracted.batches, extracted.partitions)
    counts = {t: con.execute(f"select count(*) from raw.{t}").fetchone()[0] for t in first}  # noqa: S608
    second = replace_partitions(con, extracted.batches, extracted.partitions)
    again = {t: con.execute(f"select count(*) from raw.{t}").fetchone()[0] for t in first}  # noqa: S608
    assert first == second and counts == again
    assert counts["container_hours"] == len(extracted.batches["container_hours"])
    # NULL (not observed) stays NULL, never 0
    assert con.execute("select count(*) from raw.container_hours where pod = 'pending-1' "
                       "and cpu_usage_core_seconds is null and running_minutes = 0").fetchone()[0] == 2


# --- optional series: checked, not assumed (issue 11) ------------------------------------------------------------

def test_present_optional_series_are_counted(extracted: Any) -> None:
    cov = extracted.batches["metric_coverage_hours"]
    assert len(cov) == HOURS * len(OPTIONAL_SERIES) and set(cov["metric"]) == set(OPTIONAL_SERIES)
    by = cov.groupby("metric")["series_count"]
    assert set(by.get_group("kube_endpoint_address")) == {4}  # web-lb + web endpoints x two HA KSM replicas
    assert set(by.get_group("kube_service_spec_type")) == {4}
    assert extracted.metadata["absent_series"].keys() == {
        "kubecost_pod_network_egress_bytes_total", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"}
    # warned: egress classification is always needed; DCGM only where a node has GPUs (none here)
    warned = extracted.metadata["absent_warnings"]
    assert len(warned) == 1 and warned[0].startswith(f"cluster small: kubecost_pod_network_egress_bytes_total "
                                                     f"absent in {HOURS} hour(s)")


def test_absent_endpoint_series_is_recorded(prometheus_scenario: Any, caplog: pytest.LogCaptureFixture) -> None:
    hours = HOURS_LIST[:2]
    with caplog.at_level(logging.WARNING, logger="pipelines.sources.prometheus"):
        res = extract_prometheus_hours(_cluster(prometheus_scenario.url, LEGACY), hours)
    # the check costs no request: buildinfo + one request per planned query
    assert res.metadata["queries"] == 1 + len(_plan([], False, SCRAPE_S))
    cov = res.batches["metric_coverage_hours"]
    counts = {(r.hour_ts.to_pydatetime(), r.metric): r.series_count for r in cov.itertuples()}
    assert set(counts) == {(h, m) for h in hours for m in OPTIONAL_SERIES}
    for h in hours:
        assert counts[(h, "kube_endpoint_address")] == 0
        assert counts[(h, "kube_service_spec_type")] == 2  # the LoadBalancer x two HA KSM replicas
    assert res.metadata["absent_series"]["kube_endpoint_address"] == [h.isoformat() for h in hours]
    assert "kube_service_spec_type" not in res.metadata["absent_series"]
    warned = [w for w in res.metadata["absent_warnings"] if "kube_endpoint_address" in w]
    assert warned == [f"cluster {LEGACY}: kube_endpoint_address absent in 2 hour(s) from {hours[0].isoformat()}; "
                      f"{OPTIONAL_SERIES['kube_endpoint_address']}"]
    assert any(r.getMessage() == warned[0] for r in caplog.records)
    svc = res.batches["service_hours"]
    assert len(svc) == 2 and set(svc["service"]) == {"web-lb"} and svc["pod_uid"].isna().all()

    con = duckdb.connect()
    ensure_raw_schema(con)
    replace_partitions(con, res.batches, res.partitions)
    assert con.execute("select hour_ts from raw.metric_coverage_hours where metric = 'kube_endpoint_address' "
                       "and series_count = 0 order by 1").fetchall() == [(h,) for h in hours]


def test_absent_series_reach_the_extract_summary(prometheus_scenario: Any, tmp_path: Any) -> None:
    """What the raw_metrics asset puts in its materialisation metadata (`absent_series`) and logs (`warnings`)."""
    cfg = tmp_path / "kubeledger.yaml"
    cfg.write_text(f"""
warehouse: {{path: {tmp_path / 'w.duckdb'}}}
clusters:
  - name: {LEGACY}
    source: prometheus
    prometheus: {{url: "{prometheus_scenario.url}", cluster_label: cluster, scrape_interval_s: {SCRAPE_S},
                  retries: 1, timeout_s: 30}}
""")
    settings = load_settings(str(cfg))
    con = duckdb.connect()
    ensure_raw_schema(con)
    summary = extract_metrics(settings, con, HOURS_LIST[:1])
    absent = summary["absent_series"][LEGACY]
    assert absent["kube_endpoint_address"] == [HOURS_LIST[0].isoformat()]
    assert any(w["cluster"] == LEGACY and "kube_endpoint_address absent" in w["warning"]
               for w in summary["warnings"])
    assert summary["tables"]["metric_coverage_hours"] == len(OPTIONAL_SERIES)
