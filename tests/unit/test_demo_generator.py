"""The demo generator: deterministic, complete raw tables, every feature the models must handle, idempotent landing."""

from __future__ import annotations

import json
from datetime import datetime

import duckdb
import numpy as np
import pandas as pd
import pytest

from pipelines.settings import ClusterSettings, DemoSettings
from pipelines.sources import demo
from pipelines.sources.base import OPTIONAL_SERIES
from pipelines.sources.demo import demo_carbon_intensity, demo_zones, extract_demo_hours
from pipelines.warehouse.connection import ensure_raw_schema
from pipelines.warehouse.landing import METRICS_TABLES, replace_partitions, table_columns

DAY = [datetime(2026, 3, 1, h) for h in range(24)]
CLUSTER = ClusterSettings(name="demo")


@pytest.fixture(scope="module")
def day() -> dict[str, pd.DataFrame]:
    return extract_demo_hours(CLUSTER, DAY).batches


@pytest.fixture()
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    ensure_raw_schema(c)
    return c


def _hour(frame: pd.DataFrame, h: datetime) -> pd.DataFrame:
    return frame[frame["hour_ts"] == h].reset_index(drop=True)


def test_same_hour_twice_is_identical() -> None:
    h = [datetime(2026, 3, 1, 14)]
    first = extract_demo_hours(CLUSTER, h).batches
    demo._topology.cache_clear()  # the cache must not be what makes it deterministic
    second = extract_demo_hours(CLUSTER, h).batches
    for table in METRICS_TABLES:
        pd.testing.assert_frame_equal(first[table], second[table])


def test_hour_alone_equals_hour_in_a_batch(day: dict[str, pd.DataFrame]) -> None:
    for h in (DAY[0], DAY[14], DAY[23]):
        alone = extract_demo_hours(CLUSTER, [h]).batches
        for table in METRICS_TABLES:
            pd.testing.assert_frame_equal(alone[table], _hour(day[table], h), check_dtype=False,
                                          obj=f"{table} {h}")


def test_other_seed_or_cluster_differs() -> None:
    h = [DAY[10]]
    base = extract_demo_hours(CLUSTER, h).batches["pod_hours"]
    other = ClusterSettings(name="demo", demo=DemoSettings(seed=7))
    assert set(base["pod_uid"]).isdisjoint(extract_demo_hours(other, h).batches["pod_hours"]["pod_uid"])
    renamed = extract_demo_hours(ClusterSettings(name="demo-2"), h).batches["pod_hours"]
    assert set(base["pod_uid"]).isdisjoint(renamed["pod_uid"])


def test_every_raw_column_present_and_typed(day: dict[str, pd.DataFrame], con: duckdb.DuckDBPyConnection) -> None:
    for table in METRICS_TABLES:
        frame = day[table]
        assert set(frame.columns) == set(table_columns(con, table)) - {"_extracted_at"}, table
        assert len(frame), table
        assert str(frame["hour_ts"].dtype).startswith("datetime64"), table
        assert (frame["cluster"] == "demo").all() and (frame["_source"] == "demo").all()
        types = dict(con.execute(
            "select column_name, data_type from information_schema.columns "
            "where table_schema = 'raw' and table_name = ?", [table]).fetchall())
        for col in frame.columns:
            if types[col] == "DOUBLE":
                assert pd.api.types.is_float_dtype(frame[col]), (table, col)
    ci = demo_carbon_intensity(["FR"], DAY[:2]).batches["carbon_intensity_hours"]
    assert set(ci.columns) == set(table_columns(con, "carbon_intensity_hours")) - {"_extracted_at"}


def test_partitions_cover_each_hour() -> None:
    result = extract_demo_hours(CLUSTER, DAY[:3])
    assert result.partitions == [{"cluster": "demo", "hour_ts": h} for h in DAY[:3]]


def test_default_cluster_has_every_feature(day: dict[str, pd.DataFrame]) -> None:
    nodes, pods, cont = day["node_hours"], day["pod_hours"], day["container_hours"]
    labels = nodes["labels"].map(json.loads)
    # nodes: GPU, on-prem, spot, providers, real capacities
    gpu = nodes[nodes["instance_type"] == "g4dn.xlarge"]
    assert (gpu["gpu_capacity"] == 1).all() and (gpu["gpu_model"] == "Tesla T4").all()
    onprem = nodes[nodes["instance_type"] == "custom-bare-metal"]
    assert onprem["provider_id"].isna().all()
    assert labels[onprem.index].map(lambda d: d.get("kubeledger.io/carbon-zone") == "FR").all()
    assert labels.map(lambda d: d.get("eks.amazonaws.com/capacityType") == "SPOT").any()
    assert labels.map(lambda d: d.get("cloud.google.com/gke-spot") == "true").any()
    assert {p.split(":")[0] for p in nodes["provider_id"].dropna()} == {"aws", "gce", "azure"}
    shapes = nodes.drop_duplicates("instance_type").set_index("instance_type")
    for itype, (cpu, gib, _, _) in demo.INSTANCE_TYPES.items():
        assert shapes.loc[itype, "cpu_capacity_cores"] == cpu
        assert shapes.loc[itype, "ram_capacity_bytes"] == gib * 2**30
    assert (nodes["cpu_allocatable_cores"] < nodes["cpu_capacity_cores"]).all()
    assert (nodes["ram_allocatable_bytes"] < nodes["ram_capacity_bytes"]).all()
    # the scale-away node: 20 minutes in hour 14, gone afterwards, its pods end with it
    counts = nodes.groupby("node")["running_minutes"].agg(["count", "sum"])
    gone = counts[counts["count"] == 15].index
    assert len(gone) == 1
    sa = nodes[nodes["node"] == gone[0]].set_index("hour_ts")["running_minutes"]
    assert sa[DAY[14]] == 20 and sa[DAY[13]] == 60
    assert cont[(cont["node"] == gone[0]) & (cont["hour_ts"] > DAY[14])].empty
    assert (cont[(cont["node"] == gone[0]) & (cont["hour_ts"] == DAY[14])]["run_end_s"] <= 1200).all()
    # controllers
    ds = pods[(pods["namespace"] == "kube-system") & (pods["controller_kind"] == "DaemonSet")]
    assert ds.groupby("hour_ts")["node"].nunique().min() == nodes.groupby("hour_ts")["node"].nunique().min()
    cron = pods[pods["controller_kind"] == "CronJob"]
    assert cron["pod_uid"].nunique() == 4 and (cron["owner_kind"] == "Job").all()
    assert (pods.loc[pods["controller_kind"] == "Deployment", "owner_kind"] == "ReplicaSet").all()
    assert (pods["controller_kind"] == "StatefulSet").any()
    bare = pods[pods["owner_kind"].isna()]
    assert len(bare) and bare["controller_kind"].isna().all()
    same_name = pods.drop_duplicates("pod_uid").groupby("pod")["namespace"].nunique()
    assert (same_name > 1).any()
    assert pods.groupby("pod_uid")["pod"].nunique().max() == 1  # a uid keeps its name
    # running intervals
    full = cont[cont["running_minutes"] == 60]
    assert (full["run_start_s"] == 0).all() and (full["run_end_s"] == 3600).all()
    part = cont[(cont["running_minutes"] > 0) & (cont["running_minutes"] < 60)]
    assert len(part) and ((part["run_end_s"] - part["run_start_s"]) == part["running_minutes"] * 60).all()
    # pending pod: requests, zero running minutes, no usage
    pend = cont.merge(pods[pods["phase"] == "Pending"][["hour_ts", "pod_uid"]])
    assert len(pend) == 24 and (pend["running_minutes"] == 0).all()
    assert pend["cpu_usage_core_seconds"].isna().all() and pend["cpu_request_cores"].notna().all()
    assert pend["run_start_s"].isna().all()
    # requests and usage
    running = cont[cont["running_minutes"] > 0]
    assert (running["cpu_request_cores"].isna() & running["ram_request_bytes"].isna()).any()
    usage_cores = running["cpu_usage_core_seconds"] / (running["running_minutes"] * 60)
    assert (usage_cores > running["cpu_request_cores"]).any()
    assert (running["cpu_usage_core_seconds"] <= running["running_minutes"] * 60 * running["cpu_usage_max_cores"]).all()
    assert (running["ram_usage_avg_bytes"] <= running["ram_usage_max_bytes"]).all()
    assert running["cpu_usage_core_seconds"].notna().all()
    # GPU pod and DCGM rows
    assert (cont["gpu_request"] == 1).any()
    assert len(day["gpu_hours"]) == 24 and day["gpu_hours"]["pod"].notna().all()
    assert day["gpu_hours"]["util_avg"].between(0, 1).all()
    # classified egress only in some namespaces
    assert pods["egress_internet_bytes"].notna().any() and pods["egress_internet_bytes"].isna().any()
    # namespaces
    assert {"kube-system", "monitoring", "team-a", "team-b", "payments"} <= set(day["namespace_hours"]["namespace"])


def test_volumes_and_services(day: dict[str, pd.DataFrame]) -> None:
    vols, mounts, svc = day["volume_hours"], day["pod_volume_hours"], day["service_hours"]
    assert {"gp3", "pd-ssd", "managed-csi"} <= set(vols["storage_class"])
    claimed = vols[vols["pvc"].notna()]
    assert (claimed["pv_capacity_bytes"] >= claimed["pvc_request_bytes"]).all()
    assert vols[vols["pvc"].isna()]["namespace"].isna().all() and vols["pvc"].isna().any()  # released PV
    per_hour = mounts.groupby(["hour_ts", "namespace", "pvc"]).size()
    assert (per_hour == 2).any()  # one claim mounted by two pods at once
    hours_mounted = mounts.groupby(["namespace", "pvc"])["hour_ts"].nunique()
    assert (hours_mounted < 24).any()  # a claim with unmounted hours
    lb = svc[svc["service_type"] == "LoadBalancer"]
    assert lb["ingress"].notna().all() and lb.groupby("service")["pod_uid"].count().gt(1).any()
    assert lb["pod_uid"].isna().any()  # a LoadBalancer selecting no pod at some hours
    assert set(lb["pod_uid"].dropna()) <= set(day["pod_hours"]["pod_uid"])


def test_optional_series_coverage(day: dict[str, pd.DataFrame]) -> None:
    """The demo simulates KSM >= 2.6, network-costs and dcgm-exporter: every optional series is there every hour."""
    cov = day["metric_coverage_hours"]
    assert len(cov) == 24 * len(OPTIONAL_SERIES) and set(cov["metric"]) == set(OPTIONAL_SERIES)
    assert (cov["series_count"] > 0).all()
    assert extract_demo_hours(CLUSTER, DAY[:2]).metadata["absent_series"] == {}


def test_burst_hour_exceeds_node_capacity_in_demand(day: dict[str, pd.DataFrame]) -> None:
    c = day["container_hours"].merge(day["node_hours"][["hour_ts", "node", "cpu_capacity_cores"]])
    use = c["cpu_usage_core_seconds"].fillna(0) / 3600
    c["demand"] = np.fmax(c["cpu_request_cores"].fillna(0) * c["running_minutes"] / 60, use)
    c["use"] = use
    g = c.groupby(["hour_ts", "node"]).agg(demand=("demand", "sum"), use=("use", "sum"),
                                           cap=("cpu_capacity_cores", "first"))
    util = g["use"] / g["cap"]
    assert ((g["demand"] / g["cap"]) > 1).sum() >= 1
    assert util.between(0.05, 0.8).mean() > 0.9 and (util <= 1).all()


def test_landing_twice_is_idempotent(con: duckdb.DuckDBPyConnection) -> None:
    hours = DAY[13:16]
    result = extract_demo_hours(CLUSTER, hours)
    carbon = demo_carbon_intensity(demo_zones(CLUSTER), hours)
    counts = []
    for _ in range(2):
        replace_partitions(con, result.batches, result.partitions)
        replace_partitions(con, carbon.batches, carbon.partitions)
        counts.append({t: con.execute(f"select count(*) from raw.{t}").fetchone()[0]  # noqa: S608
                       for t in (*METRICS_TABLES, "carbon_intensity_hours")})
    assert counts[0] == counts[1]
    assert counts[0] == {t: len(f) for t, f in (result.batches | carbon.batches).items()}
    nulls = con.execute("select count(*) from raw.container_hours where cpu_request_cores is null").fetchone()[0]
    assert nulls > 0  # NaN lands as NULL, not 0


def test_carbon_curve_and_gap() -> None:
    zones = ["FR", "DE", "BE", "US-MIDA-PJM", "XX"]
    result = demo_carbon_intensity(zones, DAY)
    ci = result.batches["carbon_intensity_hours"]
    assert len(result.partitions) == len(zones) * 24
    assert len(ci) == len(zones) * 24 - 1
    assert ci[(ci["zone"] == "BE") & (ci["hour_ts"] == DAY[13])].empty
    means = ci.groupby("zone")["carbon_intensity_g_per_kwh"].mean()
    assert 35 < means["FR"] < 65 and 300 < means["DE"] < 400 and 250 < means["XX"] < 350
    assert ci.groupby("zone")["carbon_intensity_g_per_kwh"].std().gt(0).all()  # diurnal, not flat
    assert (ci["provider"] == "demo").all() and (ci["emission_factor_type"] == "lifecycle").all()
    assert (~ci["is_estimated"]).all() and (ci["coverage"] == 1.0).all()
    pd.testing.assert_frame_equal(ci, demo_carbon_intensity(zones, DAY).batches["carbon_intensity_hours"])


def test_demo_zones() -> None:
    assert demo_zones(CLUSTER) == ["BE", "FR", "IE", "NL", "US-MIDA-PJM"]


def test_small_and_exact_container_counts() -> None:
    tiny = ClusterSettings(name="tiny", demo=DemoSettings(nodes=1, pods_per_node=2, containers_per_pod=3))
    b = extract_demo_hours(tiny, [DAY[12]]).batches
    assert len(b["node_hours"]) == 1
    assert (b["container_hours"].groupby("pod_uid").size() == 3).all()


def test_scales_to_1000_nodes() -> None:
    big = ClusterSettings(name="big", demo=DemoSettings(nodes=1000, pods_per_node=30, containers_per_pod=2))
    b = extract_demo_hours(big, [DAY[9]]).batches
    assert len(b["node_hours"]) == 1000
    assert 29_000 <= len(b["pod_hours"]) <= 31_500
    assert len(b["container_hours"]) == 2 * len(b["pod_hours"])
    assert b["pod_hours"]["pod_uid"].is_unique
    assert b["node_hours"]["node"].is_unique
    assert b["node_hours"]["provider_id"].dropna().is_unique
