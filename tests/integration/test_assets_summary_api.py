"""Assets, asset carbon, allocation summaries/topline, clusterInfo and the unserved upstream endpoints, end to end
over the real API server on a hand-built serving copy (tests/fixtures/asset_fixture.py). Expected values are
computed from the fixture's own rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.api_client import get_json, serve_api
from tests.fixtures.asset_fixture import (
    DAYS,
    MISSING_DAY,
    asset_rows,
    build_asset_warehouse,
    energy_rows,
    window,
)

TOL = 1e-9
ALL_DAYS = window(DAYS[0], DAYS[-1])  # 2024-03-10..13, 2024-03-12 not materialised
TYPE = {"node": "Node", "volume": "Disk", "load_balancer": "LoadBalancer", "overhead": "ClusterManagement"}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path: Path = tmp_path_factory.mktemp("serving") / "serving.duckdb"
    build_asset_warehouse(path)
    with serve_api(path) as base:
        yield base


def get(base: str, route: str, **params: Any) -> tuple[int, Any]:
    return get_json(base, route, **params)


def ok(base: str, route: str, **params: Any) -> dict[str, Any]:
    status, body = get(base, route, **params)
    assert status == 200, body
    assert body["code"] == 200
    return body


def close(a: float, b: float) -> bool:
    return abs(a - b) < TOL * max(1.0, abs(b))


def expected_by(keys: tuple[str, ...]) -> dict[str, float]:
    want: dict[str, float] = {}
    for r in asset_rows():
        parts = {"type": TYPE[r["asset_kind"]], "cluster": r["cluster"]}
        k = "/".join(parts[x] for x in keys)
        want[k] = want.get(k, 0.0) + r["total_cost"]
    return want


def test_asset_totals_match_the_mart_per_type_and_cluster(api: str) -> None:
    body = ok(api, "/model/assets", window=ALL_DAYS, aggregate="type,cluster", accumulate="true")
    assert isinstance(body["data"], list) and len(body["data"]) == 1
    got = {k: a["totalCost"] for k, a in body["data"][0].items()}
    want = expected_by(("type", "cluster"))
    assert set(got) == set(want)
    for k, v in want.items():
        assert close(got[k], v), (k, got[k], v)
    assert MISSING_DAY.isoformat() in body["warning"]  # the gap is named, the answer is still 200
    node = body["data"][0]["Node/cluster2"]
    assert node["type"] == "Node" and node["properties"]["category"] == "Compute"
    assert node["properties"]["provider"] == "gcp" and node["assets"] == 3
    assert close(node["cpuCost"], sum(r["cpu_cost"] for r in asset_rows()
                                      if r["cluster"] == "cluster2" and r["asset_kind"] == "node"))


def test_kubecost_sets_and_opencost_object(api: str) -> None:
    daily = ok(api, "/model/assets", window=ALL_DAYS, aggregate="type", accumulate="day")["data"]
    assert isinstance(daily, list) and len(daily) == 4 and daily[2] == {}  # the missing day is an empty set
    for s, day in zip([daily[0], daily[1], daily[3]], DAYS, strict=True):
        assert close(sum(a["totalCost"] for a in s.values()),
                     sum(r["total_cost"] for r in asset_rows() if r["usage_date"] == day))
        assert all(a["window"]["start"] == f"{day}T00:00:00Z" for a in s.values())
    opencost = ok(api, "/assets", window=ALL_DAYS, aggregate="type")
    assert isinstance(opencost["data"], dict)
    want = expected_by(("type",))
    assert {k: round(a["totalCost"], 9) for k, a in opencost["data"].items()} == {
        k: round(v, 9) for k, v in want.items()}


def test_per_asset_keys_properties_and_node_fields(api: str) -> None:
    data = ok(api, "/assets", window=window(DAYS[0], DAYS[0]))["data"]
    assert len(data) == len(asset_rows((DAYS[0],)))
    key = "gcp/__undefined__/__undefined__/Compute/cluster2/Node/Kubernetes/fake://cluster2/node1/node1"
    node = data[key]
    assert node["properties"] == {"category": "Compute", "provider": "gcp", "service": "Kubernetes",
                                  "cluster": "cluster2", "name": "node1", "providerID": "fake://cluster2/node1"}
    assert node["nodeType"] == "e2-standard-8" and node["cpuCores"] == 8.0 and node["preemptible"] == 1.0
    assert node["minutes"] == 1440.0 and node["labels"] == {} and node["discount"] == 0.0
    assert node["priceSource"] == "sheet" and node["isEstimated"] is True
    assert node["start"] == "2024-03-10T00:00:00Z" and node["end"] == "2024-03-11T00:00:00Z"
    disk = next(a for a in data.values() if a["type"] == "Disk" and a["properties"]["cluster"] == "cluster1")
    assert disk["properties"]["provider"] == "aws"  # the cluster's node provider
    assert disk["volumeName"] == "pv-c1-data" and disk["properties"]["category"] == "Storage"
    mgmt = next(a for a in data.values() if a["type"] == "ClusterManagement")
    assert mgmt["properties"]["category"] == "Management" and mgmt["totalCost"] == 2.4
    lb = next(a for a in data.values() if a["type"] == "LoadBalancer")
    assert lb["properties"]["category"] == "Network" and lb["private"] is False


def test_asset_filters_and_legacy_filters(api: str) -> None:
    rows = asset_rows()
    got = ok(api, "/model/assets", window=ALL_DAYS, accumulate="true", aggregate="cluster",
             filter='assetType:"Node"+cluster:"cluster2"')["data"][0]
    assert list(got) == ["cluster2"]
    assert close(got["cluster2"]["totalCost"],
                 sum(r["total_cost"] for r in rows if r["cluster"] == "cluster2" and r["asset_kind"] == "node"))
    legacy = ok(api, "/model/assets", window=ALL_DAYS, accumulate="true", aggregate="type",
                filterTypes="disk,loadbalancer")["data"][0]
    assert set(legacy) == {"Disk", "LoadBalancer"}
    by_cat = ok(api, "/assets", window=ALL_DAYS, aggregate="category", filter='category!:"Compute"')["data"]
    assert set(by_cat) == {"Storage", "Network", "Management"}
    neg = ok(api, "/assets", window=ALL_DAYS, aggregate="type", filter='provider:"AWS"|name~:"pv-"')["data"]
    assert set(neg) == {"Node", "Disk", "LoadBalancer", "ClusterManagement"}


@pytest.mark.parametrize(("route", "params", "param"), [
    ("/model/assets", {"aggregate": "namespace"}, "aggregate"),
    ("/assets", {"filter": 'namespace:"a"'}, "filter"),
    ("/assets", {"filter": 'type:"Node'}, "filter"),
    ("/model/assets", {"accumulate": "hour"}, "accumulate"),
    ("/model/assets", {"limit": "-1"}, "limit"),
    ("/model/assets", {"format": "pdf"}, "format"),
    ("/assets/carbon", {"filter": "cluster="}, "filter"),
    ("/model/allocation/summary", {"aggregate": "nope"}, "aggregate"),
    ("/allocation/summary", {"filter": 'bogus:"x"'}, "filter"),
    ("/model/allocation/summary/topline", {"format": "csv"}, "format"),
    ("/allocation/summary/topline", {"step": "1h"}, "step"),
])
def test_bad_input_is_a_400_naming_the_parameter(api: str, route: str, params: dict[str, str], param: str) -> None:
    status, body = get(api, route, window=ALL_DAYS, **params)
    assert status == 400, body
    assert body["message"].startswith(f"{param}:"), body


def test_bad_window_and_unknown_parameters(api: str) -> None:
    for route in ("/model/assets", "/assets", "/assets/carbon", "/allocation/summary"):
        status, body = get(api, route, window="last-tuesday")
        assert status == 400 and body["message"].startswith("window:"), body
    body = ok(api, "/model/assets", window=ALL_DAYS, details="true", chartType="x")
    assert "details" in body["warning"] and "chartType" in body["warning"]
    status, body = get(api, "/model/assets", window=ALL_DAYS, chartType="x", strict="true")
    assert status == 400 and body["message"].startswith("chartType:")


def test_window_before_the_data_and_non_midnight_windows(api: str) -> None:
    body = ok(api, "/model/assets", window="2024-03-01T00:00:00Z,2024-03-03T00:00:00Z", accumulate="true")
    assert body["data"] == [{}] and "2024-03-01..2024-03-02" in body["warning"]
    body = ok(api, "/assets", window="2024-03-09T13:20:00Z,2024-03-11T06:00:00Z", aggregate="type")
    assert "2024-03-09" in body["warning"] and "2024-03-11" in body["warning"]
    assert close(sum(a["totalCost"] for a in body["data"].values()),
                 sum(r["total_cost"] for r in asset_rows() if r["usage_date"] == DAYS[0]))


def test_carbon_keys_match_node_assets(api: str) -> None:
    carbon = ok(api, "/assets/carbon", window=ALL_DAYS)["data"]
    nodes = {k for k, a in ok(api, "/assets", window=ALL_DAYS)["data"].items() if a["type"] == "Node"}
    assert set(carbon) == nodes
    total_g = sum(r["co2e_total_g"] for r in energy_rows())
    assert close(sum(c["co2e"] for c in carbon.values()), total_g / 1e6)
    assert close(sum(c["co2eTotalG"] for c in carbon.values()), total_g)
    node3 = next(c for k, c in carbon.items() if k.endswith("/node3"))
    assert node3["isEstimated"] and node3["estimationReasons"] == ["default_pue"]
    assert ok(api, "/model/assets/carbon", window=ALL_DAYS, filter='cluster:"cluster1"')["data"].keys() == {
        k for k in carbon if "/cluster1/" in k}


def test_assets_csv(api: str) -> None:
    status, text = get(api, "/model/assets", window=ALL_DAYS, aggregate="type", format="csv")
    assert status == 200 and isinstance(text, str)
    lines = text.strip().split("\n")
    assert lines[0].startswith("name,type,category") and len(lines) == 5


def _sum_sets(sets: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for s in sets:
        for k, a in s.items():
            out[k] = out.get(k, 0.0) + a["totalCost"]
    return out


@pytest.mark.parametrize(("summary", "allocation", "extra"), [
    ("/model/allocation/summary", "/model/allocation", {}),
    ("/allocation/summary", "/allocation", {}),
    ("/allocation/compute/summary", "/allocation/compute", {"includeIdle": "true"}),
    ("/model/allocation/summary", "/model/allocation", {"shareIdle": "true", "accumulate": "true"}),
])
def test_summary_totals_equal_allocation_totals(api: str, summary: str, allocation: str,
                                                extra: dict[str, str]) -> None:
    params = {"window": ALL_DAYS, "aggregate": "namespace", "step": "1d", **extra}
    if "accumulate" in extra:
        params.pop("step")
    alloc = ok(api, allocation, **params)
    summ = ok(api, summary, **params)
    data = summ["data"]
    assert set(data) == {"step", "sets", "window"}
    assert data["window"] == {"start": "2024-03-10T00:00:00Z", "end": "2024-03-14T00:00:00Z"}
    assert len(data["sets"]) == len(alloc["data"])
    for s, a in zip(data["sets"], alloc["data"], strict=True):
        assert set(s) == {"allocations", "window"} and set(s["allocations"]) == set(a)
        for k, item in s["allocations"].items():
            assert item["name"] == k and close(item["totalCost"], a[k]["totalCost"])
            assert "properties" not in item and {"cpuCoreRequestAverage", "ramByteUsageAverage", "sharedCost",
                                                 "externalCost", "totalEfficiency", "energyKwh", "co2eTotalG",
                                                 "isEstimated"} <= set(item)
    assert data["step"] == (4 if "accumulate" in extra else 1) * 86400 * 10**9
    assert MISSING_DAY.isoformat() in summ["warning"]


def test_topline_is_the_sum_of_the_summary(api: str) -> None:
    params = {"window": ALL_DAYS, "aggregate": "namespace", "accumulate": "day"}
    summ = ok(api, "/model/allocation/summary", **params)["data"]
    top = ok(api, "/model/allocation/summary/topline", **params)["data"]
    keys = {k for s in summ["sets"] for k in s["allocations"]}
    assert top["numResults"] == len(keys)
    total = top["combined"]["allocations"]["total"]
    assert total["name"] == "total" and top["combined"]["window"] == summ["window"]
    for f in ("cpuCost", "ramCost", "gpuCost", "pvCost", "networkCost", "loadBalancerCost", "sharedCost",
              "externalCost", "totalCost", "energyKwh", "co2eTotalG"):
        assert close(total[f], sum(a[f] for s in summ["sets"] for a in s["allocations"].values())), f
    assert close(top["combined"]["allocations"]["total"]["totalCost"],
                 sum(_sum_sets(ok(api, "/model/allocation", **params)["data"]).values()))
    # averages: side by side within a set, time-weighted across the 4 daily sets (one is empty)
    cpu = sum(a["cpuCoreRequestAverage"] for s in summ["sets"] for a in s["allocations"].values()) / 4
    assert close(total["cpuCoreRequestAverage"], cpu)
    oc = ok(api, "/allocation/summary/topline", **params)["data"]["combined"]["allocations"]["total"]
    assert oc["totalCost"] < total["totalCost"]  # OpenCost leaves idle out by default


def test_cluster_info(api: str) -> None:
    for route in ("/clusterInfo", "/model/clusterInfo"):
        data = ok(api, route)["data"]
        upstream = {k: v for k, v in data.items() if k != "kubeledgerClusters"}
        assert all(isinstance(v, str) for v in upstream.values()), upstream
        assert data["id"] == data["name"] == "cluster1" and data["provider"] == "aws"
        assert data["region"] == "us-east-1" and data["remoteReadEnabled"] == "false"
        assert data["thanosEnabled"] == "false" and data["clusterProfile"] == "production"
        clusters = data["kubeledgerClusters"]
        assert [c["name"] for c in clusters] == ["cluster1", "cluster2"]
        assert clusters[1]["provider"] == "gcp" and clusters[1]["region"] == "europe-west1"
        assert clusters[1]["firstDay"] == "2024-03-10" and clusters[1]["lastDay"] == "2024-03-13"


@pytest.mark.parametrize("route", ["/cloudCost/view/graph", "/cloudCost/view/totals",
                                   "/cloudCost/view/table", "/cloudCost/status", "/customCost/total",
                                   "/customCost/timeseries", "/customCost/status", "/model/cloudCost/view/graph"])
def test_unserved_endpoints_are_a_json_404(api: str, route: str) -> None:
    status, body = get(api, route, window="7d")
    assert status == 404 and body["code"] == 404
    assert "kubeledger does not serve" in body["message"] and body["reason"]


@pytest.mark.parametrize("route", ["/cloudCost", "/model/cloudCost"])
def test_cloud_cost_without_a_bill_is_a_200_with_empty_sets(api: str, route: str) -> None:
    status, body = get(api, route, window="7d", aggregate="service", accumulate="day")
    assert status == 200 and body["code"] == 200, body
    assert [s["cloudCosts"] for s in body["data"]["sets"]] == [{}] * 7
    assert "no billing source is configured" in body["warning"]
