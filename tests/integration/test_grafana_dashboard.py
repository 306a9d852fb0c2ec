"""deploy/grafana/kubeledger-dashboard.json: a valid Grafana dashboard on the Infinity datasource whose every URL,
with the template variables filled in, is answered 200 by the real API server on a small warehouse — for a
midnight-aligned range inside the warehouse's days and for a Grafana-style range that is not."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.api_client import serve_api
from tests.fixtures.asset_fixture import build_asset_warehouse

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "kubeledger-dashboard.json"
INFINITY = "yesoreyeram-infinity-datasource"
RANGES = {
    "midnight": ("2024-03-10T00:00:00.000Z", "2024-03-14T00:00:00.000Z"),
    "grafana": ("2024-03-09T13:20:00.000Z", "2024-03-13T18:45:12.345Z"),  # partial first and last days
}


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("serving") / "serving.duckdb"
    build_asset_warehouse(path)
    with serve_api(path) as base:
        yield base


def targets(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for p in dashboard["panels"] for t in p.get("targets", [])]


def variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard["templating"]["list"]}


def expand(url: str, base: str, rng: tuple[str, str], values: dict[str, str]) -> str:
    out = url.replace("${kubeledger}", base).replace("${__from:date:iso}", rng[0]).replace("${__to:date:iso}", rng[1])
    for name, value in values.items():
        out = out.replace(f"${{{name}}}", value).replace(f"${name}", value)
    assert "$" not in out, f"unsubstituted template variable in {out}"
    return out


def fetch(url: str) -> tuple[int, Any]:
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.urlencode(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    try:
        with urllib.request.urlopen(urllib.parse.urlunsplit(parts._replace(query=query)),  # noqa: S310 - local
                                    timeout=30) as resp:
            return resp.status, json.loads(resp.read().decode())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read().decode())


def test_dashboard_structure(dashboard: dict[str, Any]) -> None:
    assert dashboard["title"] and dashboard["uid"] and isinstance(dashboard["schemaVersion"], int)
    assert len(dashboard["panels"]) >= 6
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for p in dashboard["panels"]:
        assert p["type"] in ("timeseries", "stat", "table", "piechart", "barchart", "text"), p["type"]
        assert {"x", "y", "w", "h"} <= set(p["gridPos"]) and p["title"]
        assert p["targets"], p["title"]
    var = variables(dashboard)
    assert var["datasource"]["type"] == "datasource" and var["datasource"]["query"] == INFINITY
    assert var["kubeledger"]["type"] in ("textbox", "constant") and var["kubeledger"]["query"].startswith("http")
    for t in targets(dashboard):
        assert t["datasource"] == {"type": INFINITY, "uid": "${datasource}"}
        assert t["type"] == "json" and t["source"] == "url" and t["parser"] == "backend"
        assert t["url"].startswith("${kubeledger}/") and t["root_selector"] and t["columns"]
        assert all({"selector", "text", "type"} <= set(c) for c in t["columns"])
        assert t["refId"]
    urls = " ".join(t["url"] for t in targets(dashboard))
    assert "${__from:date:iso},${__to:date:iso}" in urls
    assert all(key in urls for key in ("accumulate=day", "/model/assets", "topline", "clusterInfo", "/model/savings"))
    fields = {c["selector"] for t in targets(dashboard) for c in t["columns"]}
    assert {"totalCost", "energyKwh", "co2eTotalG", "idleShare", "estimatedShare"} <= fields
    # the savings panels read the one total the report and the CLI print, risk fixes apart
    assert {"countedUsdPerMonth", "countedCo2eGPerMonth", "riskFixUsdPerMonth"} <= fields


def _combinations(dashboard: dict[str, Any]) -> list[dict[str, str]]:
    custom = {n: [o["value"] for o in v["options"]] for n, v in variables(dashboard).items() if v["type"] == "custom"}
    combos: list[dict[str, str]] = [{}]
    for name, options in custom.items():
        combos = [{**c, name: o} for c in combos for o in options]
    return combos


@pytest.mark.parametrize("range_name", sorted(RANGES))
def test_every_dashboard_url_is_answered(dashboard: dict[str, Any], base: str, range_name: str) -> None:
    rng = RANGES[range_name]
    seen = 0
    for values in _combinations(dashboard):
        for t in targets(dashboard):
            url = expand(t["url"], base, rng, values)
            status, body = fetch(url)
            assert status == 200, (url, body)
            assert body["code"] == 200 and body["data"] is not None
            if range_name == "grafana" and "/model/savings" in url:
                # the savings total reads each cluster's newest whole day in the range; this fixture's warehouse
                # has no recommendation mart, and the warning says so
                assert "fct_recommendation_daily" in body["warning"], body["warning"]
            elif range_name == "grafana" and "window=" in url:
                assert "2024-03-09" in body["warning"] and "partial day" in body["warning"], body["warning"]
            seen += 1
    assert seen >= len(targets(dashboard))


def test_root_selectors_yield_the_columns(dashboard: dict[str, Any], base: str) -> None:
    """With a JSONata engine at hand (pip install jsonata-python), every root selector gives rows that carry
    every column the panel reads."""
    jsonata = pytest.importorskip("jsonata")
    for t in targets(dashboard):
        _, body = fetch(expand(t["url"], base, RANGES["grafana"], {"aggregate": "namespace"}))
        rows = jsonata.Jsonata(t["root_selector"]).evaluate(body)
        rows = rows if isinstance(rows, list) else [rows]
        assert rows, t["root_selector"]
        for c in t["columns"]:
            path = c["selector"].split(".")
            for row in rows:
                value: Any = row
                for part in path:
                    value = value.get(part) if isinstance(value, dict) else None
                assert value is not None, (t["root_selector"], c["selector"], row)
                if c["type"] == "timestamp":
                    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", value)
