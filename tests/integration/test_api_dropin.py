"""Existing clients unchanged: the requests Kubecost, OpenCost, ACK and Grafana clients send answer 200 on a daily
store with days missing, each with the days it covers and a `warning` that says what was left out and why.

The warehouse has 6 materialised days in the last 30 (relative to today, so relative windows are real)."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.serving.query.windows import answerable_days, parse_window
from tests.fixtures.api_client import get_json, serve_api
from tests.fixtures.asset_fixture import build_asset_warehouse

pytestmark = pytest.mark.integration

TODAY = datetime.now(UTC).date()
AGO = (1, 2, 4, 8, 15, 29)
DAYS = tuple(sorted(TODAY - timedelta(days=n) for n in AGO))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("dropin") / "serving.duckdb"
    build_asset_warehouse(path, DAYS)
    con = duckdb.connect(str(path))
    try:  # namespace labels, to check that OpenCost's merge reaches `labels`
        con.execute("UPDATE marts.fct_allocation_daily SET namespace_labels = "
                    "'{\"team\": \"t-' || namespace || '\", \"app\": \"from-namespace\"}' WHERE namespace IS NOT NULL")
    finally:
        con.close()
    with serve_api(path) as base:
        yield base


def get(base: str, route: str, **params: Any) -> tuple[int, Any]:
    return get_json(base, route, **params)


def covered(body: dict[str, Any]) -> set[date]:
    """Days with data in a day-stepped answer."""
    out = set()
    for s in body["data"]:
        for a in s.values():
            out.add(date.fromisoformat((a["window"] if "window" in a else a)["start"][:10]))  # ACK: start/end
    return out


def expected_days(window: str) -> set[date]:
    span = answerable_days(parse_window(window))
    if span.empty:
        return set()
    days = {span.start.date() + timedelta(days=i) for i in range((span.end - span.start).days)}
    return days & set(DAYS)


def _pair(first: date, end: date) -> str:
    return f"{first}T00:00:00Z,{end}T00:00:00Z"


GRAFANA = f"{TODAY - timedelta(days=10)}T13:00:00Z,{TODAY - timedelta(days=1)}T13:00:00Z"
WINDOWS = ["1h", "7d", "1d", "24h", "today", "week", "month", "lastweek", "30d", GRAFANA,
           _pair(TODAY - timedelta(days=30), TODAY)]


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("route", ["/model/allocation", "/allocation", "/allocation/compute", "/v2/allocation"])
def test_every_window_answers_200_with_the_days_it_covers(base: str, route: str, window: str) -> None:
    status, body = get(base, route, window=window, aggregate="namespace", step="1d")
    assert status == 200, body
    want = expected_days(window)
    assert covered(body) == want, (window, sorted(covered(body)), sorted(want))
    span = answerable_days(parse_window(window))
    if span.empty or want != {span.start.date() + timedelta(days=i) for i in range((span.end - span.start).days)}:
        assert body.get("warning"), (window, body)  # something was left out: it is said
    if window in ("1h", "today"):
        assert "no complete UTC day" in body["warning"]
    if window == GRAFANA:
        assert "partial day" in body["warning"]


def test_a_month_with_six_days_materialised_names_the_missing_ones(base: str) -> None:
    window = _pair(TODAY - timedelta(days=30), TODAY)
    status, body = get(base, "/model/allocation", window=window, aggregate="cluster")
    assert status == 200
    assert len(body["data"]) == 1 and body["data"][0]
    assert "24 of the 30 day(s)" in body["warning"], body["warning"]
    assert str(TODAY - timedelta(days=3)) in body["warning"]


@pytest.mark.parametrize(("route", "params", "check"), [
    ("/allocation", {"resolution": "1m"}, lambda b: "resolution: ignored" in b["warning"]),
    ("/allocation", {"accumulateBy": "day"}, lambda b: len(b["data"]) == 7),
    ("/allocation", {"idle": "true"}, lambda b: any("__idle__" in s for s in b["data"])),
    ("/allocation", {"sharelb": "true", "chartType": "costovertime"}, lambda b: "sharelb: ignored" in b["warning"]),
    ("/model/allocation", {"includeIdle": "false"}, lambda b: all("__idle__" not in s for s in b["data"])),
    ("/model/allocation", {"idle": "false", "includeIdle": "true"},
     lambda b: all("__idle__" not in s for s in b["data"])),  # both given: Kubecost's own name wins
    ("/model/allocation", {"costMetric": "daily", "accumulate": "true"}, lambda b: "costMetric" in b["warning"]),
    ("/model/allocation", {"someNewParam": "1"}, lambda b: "someNewParam" in b["warning"]),
    ("/model/allocation", {"filterLabels": "app:app1"}, lambda b: set(b["data"][0]) - {"__idle__"} == {"namespace1"}),
])
def test_upstream_parameters_are_accepted(base: str, route: str, params: dict[str, str], check: Any) -> None:
    status, body = get(base, route, window="7d", aggregate="namespace", **params)
    assert status == 200, body
    assert check(body), body


def test_strict_mode_and_subday_steps_stay_400(base: str) -> None:
    status, body = get(base, "/model/allocation", window="7d", someNewParam="1", strict="true")
    assert status == 400 and body["message"].startswith("someNewParam: ")
    status, body = get(base, "/allocation", window="7d", step="1h")
    assert status == 400 and "daily" in body["message"]


def test_labels_carry_namespace_labels_with_pod_labels_winning(base: str) -> None:
    status, body = get(base, "/model/allocation", window="7d", aggregate="pod", accumulate="true")
    assert status == 200
    pod1 = body["data"][0]["pod1"]["properties"]
    assert pod1["labels"]["team"] == "t-namespace1"  # from the namespace
    assert pod1["labels"]["app"] == "app1"  # the pod's own label wins over the namespace's "from-namespace"
    assert pod1["namespaceLabels"]["app"] == "from-namespace"


def test_aggregated_metadata_is_the_labels_all_members_share(base: str) -> None:
    status, body = get(base, "/allocation", window="7d", aggregate="namespace", accumulate="true",
                       includeAggregatedMetadata="true")
    assert status == 200
    ns1 = body["data"][0]["namespace1"]["properties"]["labels"]
    assert ns1["team"] == "t-namespace1"
    status, plain = get(base, "/allocation", window="7d", aggregate="namespace", accumulate="true")
    assert "team" not in (plain["data"][0]["namespace1"]["properties"].get("labels") or {})


def test_proportional_asset_resource_costs(base: str) -> None:
    status, body = get(base, "/allocation", window="7d", aggregate="namespace", accumulate="true",
                       includeIdle="true", includeProportionalAssetResourceCosts="true")
    assert status == 200
    parc = body["data"][0]["namespace1"]["proportionalAssetResourceCosts"]
    assert parc and all(0 <= v["cpuPercentage"] <= 1.0 + 1e-9 for v in parc.values())
    assert all(v["type"] == "Node" and v["name"] for v in parc.values())


def test_readme_curl_examples_answer_200(base: str) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    urls = [line.split("'")[1] for line in readme.splitlines()
            if line.strip().startswith("curl ") and "127.0.0.1:9003" in line]
    assert urls, "the README has no curl example"
    for url in urls:
        path = url.split("127.0.0.1:9003", 1)[1]
        route, _, query = path.partition("?")
        params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        status, body = get(base, route, **params)
        assert status == 200, (url, body)
