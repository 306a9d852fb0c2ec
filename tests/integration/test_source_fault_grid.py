"""Every failure mode against every HTTP enrichment client, over real HTTP (stand-ins behind the fault proxy):
the fetch never raises, each failure is a JSON-safe record of the right kind, a source-wide failure trips the source
after one request, and the time budget stops a slow source. The whole-job behaviour of the same modes is in
tests/faults/ (one `kubeledger materialize` per mode); this grid covers each provider × mode in seconds, which the
job-level matrix alternates between Electricity Maps and Wattnet.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import duckdb
import pytest

from pipelines.settings import BoaviztaSettings, CarbonSettings, PricingSettings, Settings
from pipelines.sources.boavizta import extract_boavizta
from pipelines.sources.carbon.electricitymaps import ElectricityMapsClient
from pipelines.sources.carbon.http import extract_with_client
from pipelines.sources.carbon.wattnet import WattnetClient
from pipelines.sources.pricing import load_pricing
from pipelines.warehouse.connection import ensure_raw_schema
from tests.fixtures.boavizta_server import boavizta_url  # noqa: F401 - session fixture
from tests.fixtures.carbon_standins import (
    EM_TOKEN,
    EMState,
    WattnetState,
    electricitymaps_standin,
    wattnet_standin,
)
from tests.fixtures.fault_proxy import FaultProxy

pytestmark = pytest.mark.integration

START = datetime(2026, 3, 1)
HOURS = [START + timedelta(hours=h) for h in range(24)]
ZONES = ["DE", "FR"]

MODES: dict[str, tuple[tuple[str, dict[str, Any]], str]] = {  # mode -> (proxy fault, expected failure kind)
    "refused": (("refused", {}), "connection_refused"),
    "timeout": (("timeout", {}), "timeout"),
    "http_500": (("status", {"status": 500}), "http_5xx"),
    "http_503": (("status", {"status": 503}), "http_5xx"),
    "http_429": (("status", {"status": 429, "headers": {"Retry-After": "1"}}), "http_429"),
    "http_401": (("status", {"status": 401}), "http_401"),
    "http_403": (("status", {"status": 403}), "http_403"),
    "html": (("html", {}), "not_json"),
    "wrong_shape": (("wrong_shape", {}), "wrong_shape"),
    "truncated": (("truncated", {}), "truncated"),
    "truncated_json": (("truncated_json", {}), "not_json"),
}
SOURCE_WIDE = {"connection_refused", "timeout", "http_5xx", "http_429", "http_401", "http_403"}


@pytest.fixture(scope="module")
def em() -> Iterator[FaultProxy]:
    with electricitymaps_standin(EMState(zones={"DE", "FR"})) as (url, _), FaultProxy(url) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def wattnet() -> Iterator[FaultProxy]:
    with wattnet_standin(WattnetState(zones={"DE", "FR"})) as (url, _), FaultProxy(url) as proxy:
        yield proxy


def _client(provider: str, url: str, budget_s: float = 60.0) -> Any:
    settings = CarbonSettings(provider=provider, base_url=url, token_env="GRID_EM_TOKEN", timeout_s=1.0,
                              time_budget_s=budget_s)
    cls = ElectricityMapsClient if provider == "electricitymaps" else WattnetClient
    client = cls(settings, retries=1, backoff_factor=0.05)
    client.headers["auth-token"] = EM_TOKEN
    return client


@pytest.mark.parametrize("provider", ["electricitymaps", "wattnet"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_carbon_provider_fails_soft(provider: str, mode: str, em: FaultProxy, wattnet: FaultProxy) -> None:
    proxy = em if provider == "electricitymaps" else wattnet
    (fault, opts), kind = MODES[mode]
    proxy.set_fault(fault, **opts)
    try:
        result = extract_with_client(_client(provider, proxy.url), ZONES, HOURS)
    finally:
        proxy.clear()
    failures = result.metadata["failures"]
    json.dumps(failures, allow_nan=False)  # plain JSON: no datetime, no NaN
    assert result.rows() == 0
    assert failures and failures[0]["kind"] == kind, failures
    if kind in SOURCE_WIDE:  # the second zone is not asked: the source was tripped by the first
        assert [f["kind"] for f in failures[1:]] == ["skipped"] * (len(failures) - 1), failures
    else:
        assert {f["zone"] for f in failures if f["kind"] == kind} == set(ZONES), failures


@pytest.mark.parametrize("provider", ["electricitymaps", "wattnet"])
def test_one_zone_404_leaves_the_other_zones_whole(provider: str, em: FaultProxy, wattnet: FaultProxy) -> None:
    proxy = em if provider == "electricitymaps" else wattnet
    proxy.set_fault("status", status=404, match="zone=FR")
    try:
        result = extract_with_client(_client(provider, proxy.url), ZONES, HOURS)
    finally:
        proxy.clear()
    frame = result.batches["carbon_intensity_hours"]
    assert sorted(frame["zone"].unique()) == ["DE"] and len(frame) == 24
    assert [(f["zone"], f["kind"]) for f in result.metadata["failures"]] == [("FR", "http_404")]


@pytest.mark.parametrize("provider", ["electricitymaps", "wattnet"])
def test_missing_hours_are_recorded_as_partial(provider: str, em: FaultProxy, wattnet: FaultProxy) -> None:
    proxy = em if provider == "electricitymaps" else wattnet
    proxy.set_fault("drop_hours", hours={START + timedelta(hours=h) for h in (2, 3)})
    try:
        result = extract_with_client(_client(provider, proxy.url), ["DE"], HOURS)
    finally:
        proxy.clear()
    assert len(result.batches["carbon_intensity_hours"]) == 22
    assert [(f["kind"], f["hours_missing"]) for f in result.metadata["failures"]] == [("partial", 2)]


def test_retries_then_recovers(em: FaultProxy) -> None:
    """A 503 once, then the answer: retried within the call, nothing recorded as failed."""
    em.set_fault("status", status=503, count=1)
    try:
        client = _client("electricitymaps", em.url)
        result = extract_with_client(client, ["DE"], HOURS)
    finally:
        em.clear()
    assert result.metadata["failures"] == [] and len(result.batches["carbon_intensity_hours"]) == 24


def test_time_budget_stops_a_slow_source(em: FaultProxy) -> None:
    """A server that never answers, 1 s timeouts, a 1 s budget: one zone is asked, the rest are 'skipped'
    (tripped) and nothing takes longer than the budget plus one request's timeouts."""
    em.set_fault("timeout")
    t0 = datetime.now()
    try:
        result = extract_with_client(_client("electricitymaps", em.url, budget_s=1.0), ["DE", "FR", "IT-NO"], HOURS)
    finally:
        em.clear()
    assert (datetime.now() - t0).total_seconds() < 10
    assert [f["kind"] for f in result.metadata["failures"]] == ["timeout", "skipped", "skipped"]


def test_spent_budget_asks_nothing(em: FaultProxy) -> None:
    client = _client("electricitymaps", em.url, budget_s=1.0)
    client.budget.seconds = 0.0
    before = len(em.requests)
    fetched = client.fetch_hours("DE", START, START + timedelta(days=1))
    assert len(em.requests) == before and [f["kind"] for f in fetched.failures] == ["budget"]


BOAVIZTA_MODES = {k: v for k, v in MODES.items() if k not in ("truncated_json",)}


@pytest.fixture(scope="module")
def boavizta(boavizta_url: str) -> Iterator[FaultProxy]:  # noqa: F811 - the imported session fixture
    with FaultProxy(boavizta_url) as proxy:
        yield proxy


@pytest.mark.boavizta
@pytest.mark.parametrize("mode", sorted(BOAVIZTA_MODES))
def test_boavizta_fails_soft(mode: str, boavizta: FaultProxy) -> None:
    (fault, opts), kind = BOAVIZTA_MODES[mode]
    boavizta.set_fault(fault, **opts)
    try:
        result = extract_boavizta(BoaviztaSettings(url=boavizta.url, timeout_s=1.0),
                                  [("aws", "m5.large"), ("aws", "c5.xlarge")])
    finally:
        boavizta.clear()
    failures = result.metadata["failures"]
    json.dumps(failures, allow_nan=False)
    assert result.rows() == 0  # nothing cached: the next run asks again
    assert failures[0]["kind"] == kind, failures
    if kind in SOURCE_WIDE:
        assert failures[1]["kind"] == "skipped", failures


def test_broken_price_file_keeps_the_last_good_load(tmp_path) -> None:
    """A price file edited into an error: the run goes on with its last good rows, and says so."""
    sheet = tmp_path / "prices.csv"
    sheet.write_text("provider,region,instance_type,hourly_usd\naws,us-east-1,m5.large,0.0961\n")
    settings = Settings(pricing=PricingSettings(instance_sheet=str(sheet)))
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    ensure_raw_schema(con)
    assert load_pricing(settings, con)["problems"] == []
    sheet.write_text("<html><body>502 Bad Gateway</body></html>\n")
    summary = load_pricing(settings, con)
    assert [p.failure for p in summary["problems"]] == ["file"]
    assert "last good load (1 rows" in summary["problems"][0].message
    assert con.execute("select instance_type, hourly_usd from raw.price_sheet").fetchall() == [("m5.large", 0.0961)]
    fresh = duckdb.connect(str(tmp_path / "fresh.duckdb"))
    ensure_raw_schema(fresh)
    summary = load_pricing(settings, fresh)
    assert "default prices apply" in summary["problems"][0].message
    assert fresh.execute("select count(*) from raw.price_sheet").fetchone() == (0,)
