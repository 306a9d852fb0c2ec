"""Carbon intensity extraction against local Electricity Maps / Wattnet stand-ins."""

from __future__ import annotations

import socket
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from pipelines import PROJECT_ROOT
from pipelines.settings import CarbonSettings
from pipelines.sources.carbon import (
    ElectricityMapsClient,
    WattnetClient,
    extract_carbon_intensity,
    load_wattnet_zone_map,
)
from pipelines.warehouse.landing import replace_partitions
from tests.fixtures.carbon_standins import (
    EM_TOKEN,
    EMState,
    WattnetState,
    electricitymaps_standin,
    em_value,
    wattnet_standin,
    wattnet_value,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 1, 1)
LATER = datetime(2026, 6, 1)  # "now" far after the fetched hours: nothing falls in the 48 h refresh window
TOKEN_ENV = "KL_TEST_EM_TOKEN"


def hours(start: datetime, n: int) -> list[datetime]:
    return [start + timedelta(hours=i) for i in range(n)]


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    c.execute("create schema raw")
    c.execute((ROOT / "sql/raw/30_carbon.sql").read_text())
    yield c
    c.close()


@pytest.fixture
def em_settings(monkeypatch: pytest.MonkeyPatch):
    def make(url: str, token: str | None = EM_TOKEN) -> CarbonSettings:
        if token is None:
            monkeypatch.delenv(TOKEN_ENV, raising=False)
        else:
            monkeypatch.setenv(TOKEN_ENV, token)
        return CarbonSettings(provider="electricitymaps", base_url=url, token_env=TOKEN_ENV, timeout_s=5)
    return make


def em_client(settings: CarbonSettings) -> ElectricityMapsClient:
    return ElectricityMapsClient(settings, retries=1, backoff_factor=0.01)


def test_em_chunks_25_days_into_10_day_calls_and_sends_token(em_settings) -> None:
    with electricitymaps_standin() as (url, state):
        settings = em_settings(url)
        want = hours(T0, 25 * 24)
        result = extract_carbon_intensity(settings, ["DE"], want, client=em_client(settings), now=LATER)
    calls = state.requests
    assert len(calls) == 3
    spans = [datetime.fromisoformat(c["params"]["end"][:-1]) - datetime.fromisoformat(c["params"]["start"][:-1])
             for c in calls]
    assert spans == [timedelta(days=10), timedelta(days=10), timedelta(days=5)]
    assert all(c["headers"].get("auth-token") == EM_TOKEN for c in calls)
    assert all("disableEstimations" not in c["params"] for c in calls)
    assert all(c["params"]["emissionFactorType"] == "lifecycle" for c in calls)
    frame = result.batches["carbon_intensity_hours"]
    # the stand-in includes each window's end hour: deduped to exactly one row per hour
    assert len(frame) == 25 * 24 and frame["hour_ts"].is_unique
    row = frame[frame["hour_ts"] == datetime(2026, 1, 3, 6)].iloc[0]
    assert row["carbon_intensity_g_per_kwh"] == em_value("DE", datetime(2026, 1, 3, 6))
    assert bool(row["is_estimated"]) and row["estimation_method"] == "TIME_SLICER_AVERAGE"
    assert row["emission_factor_type"] == "lifecycle"
    assert len(result.partitions) == 25 * 24
    assert result.metadata["failures"] == []


def test_em_401_is_recorded_without_rows_or_exception(em_settings, caplog: pytest.LogCaptureFixture) -> None:
    with electricitymaps_standin() as (url, state):
        settings = em_settings(url, token="wrong-token-value")
        result = extract_carbon_intensity(settings, ["DE"], hours(T0, 24), client=em_client(settings), now=LATER)
    assert state.requests[0]["headers"]["auth-token"] == "wrong-token-value"
    assert result.rows() == 0 and result.partitions == []
    [failure] = result.metadata["failures"]
    assert failure["zone"] == "DE" and failure["status"] == 401 and failure["error"] == "Invalid auth-token"
    assert "wrong-token-value" not in caplog.text  # the token is never logged


def test_em_unknown_zone_does_not_fail_other_zones(em_settings) -> None:
    with electricitymaps_standin() as (url, _):
        settings = em_settings(url)
        result = extract_carbon_intensity(settings, ["DE", "ZZ"], hours(T0, 6), client=em_client(settings), now=LATER)
    frame = result.batches["carbon_intensity_hours"]
    assert set(frame["zone"]) == {"DE"} and len(frame) == 6
    assert result.metadata["failed_zones"] == ["ZZ"]
    assert result.metadata["failures"][0]["status"] == 404
    assert "ZZ" in result.metadata["failures"][0]["error"]


def test_em_null_intensity_stays_null(em_settings, con) -> None:
    null_hour = T0 + timedelta(hours=3)
    with electricitymaps_standin(EMState(null_hours={("FR", null_hour)})) as (url, _):
        settings = em_settings(url)
        result = extract_carbon_intensity(settings, ["FR"], hours(T0, 6), client=em_client(settings), now=LATER)
    replace_partitions(con, result.batches, result.partitions)
    value = con.execute("select carbon_intensity_g_per_kwh from raw.carbon_intensity_hours where hour_ts = ?",
                        [null_hour]).fetchone()
    assert value == (None,)
    assert result.metadata["null_values"] == 1


def test_outage_is_recorded_not_raised(em_settings) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = em_settings(f"http://127.0.0.1:{port}/v3/")
    result = extract_carbon_intensity(settings, ["DE"], hours(T0, 24), client=em_client(settings), now=LATER)
    assert result.rows() == 0 and result.partitions == []
    [failure] = result.metadata["failures"]
    assert failure["zone"] == "DE" and failure["status"] is None and "ConnectionError" in failure["error"]


def test_server_errors_are_retried_then_recorded(em_settings) -> None:
    with electricitymaps_standin(EMState(force_status=503)) as (url, state):
        settings = em_settings(url)
        result = extract_carbon_intensity(settings, ["DE"], hours(T0, 24), client=em_client(settings), now=LATER)
    assert len(state.requests) == 2  # one try + one retry
    assert result.metadata["failures"][0]["status"] == 503 and result.rows() == 0


def test_cache_skips_landed_hours_but_refreshes_last_48h(em_settings, con) -> None:
    want = hours(T0, 72)
    with electricitymaps_standin() as (url, state):
        settings = em_settings(url)
        first = extract_carbon_intensity(settings, ["DE"], want, con=con, client=em_client(settings), now=LATER)
        replace_partitions(con, first.batches, first.partitions)
        n_first = len(state.requests)
        again = extract_carbon_intensity(settings, ["DE"], want, con=con, client=em_client(settings), now=LATER)
        assert len(state.requests) == n_first  # nothing re-fetched
        assert again.rows() == 0 and again.metadata["hours_cached_skipped"] == 72
        # "now" right after the range: the last 48 h are re-fetched (providers revise them), the first 24 h not
        recent = extract_carbon_intensity(settings, ["DE"], want, con=con, client=em_client(settings),
                                          now=T0 + timedelta(hours=72))
        call = state.requests[-1]["params"]
    assert recent.rows() == 48
    assert call["start"] == "2026-01-02T00:00:00Z" and call["end"] == "2026-01-04T00:00:00Z"


def test_cache_refetches_null_hours(em_settings, con) -> None:
    null_hour = T0 + timedelta(hours=2)
    with electricitymaps_standin(EMState(null_hours={("DE", null_hour)})) as (url, state):
        settings = em_settings(url)
        first = extract_carbon_intensity(settings, ["DE"], hours(T0, 6), con=con, client=em_client(settings), now=LATER)
        replace_partitions(con, first.batches, first.partitions)
        state.null_hours.clear()  # the provider fills the gap later
        second = extract_carbon_intensity(settings, ["DE"], hours(T0, 6), con=con, client=em_client(settings),
                                          now=LATER)
    assert [r["params"]["start"] for r in state.requests[1:]] == ["2026-01-01T02:00:00Z"]
    assert second.rows() == 1
    replace_partitions(con, second.batches, second.partitions)
    assert con.execute("select count(*) from raw.carbon_intensity_hours where carbon_intensity_g_per_kwh is null"
                       ).fetchone() == (0,)


def test_landing_is_idempotent(em_settings, con) -> None:
    with electricitymaps_standin() as (url, _):
        settings = em_settings(url)
        result = extract_carbon_intensity(settings, ["DE", "FR"], hours(T0, 30), client=em_client(settings), now=LATER)
    q = "select provider, zone, hour_ts, carbon_intensity_g_per_kwh, is_estimated from raw.carbon_intensity_hours order by all"
    replace_partitions(con, result.batches, result.partitions)
    once = con.execute(q).fetchall()
    replace_partitions(con, result.batches, result.partitions)
    assert con.execute(q).fetchall() == once and len(once) == 60


# --- Wattnet ----------------------------------------------------------------------------------------------


def wattnet_settings(url: str) -> CarbonSettings:
    return CarbonSettings(provider="wattnet", base_url=url, timeout_s=5)


def test_wattnet_hourly_average_coverage_preview_and_mapping(con) -> None:
    missing = datetime(2026, 1, 1, 1, 30)
    preview_from = datetime(2026, 1, 1, 3)
    state = WattnetState(missing_quarters={("IT_NORTH", missing)}, preview_from=preview_from)
    with wattnet_standin(state) as (url, _):
        settings = wattnet_settings(url)
        client = WattnetClient(settings, retries=0)
        result = extract_carbon_intensity(settings, ["IT-NO", "SE-SE3"], hours(T0, 4), client=client, now=LATER)
    params = [r["params"] for r in state.requests]
    assert {p["zone"] for p in params} == {"IT_NORTH", "SE3"}  # Electricity Maps codes mapped to Wattnet ids
    assert all(p["footprint_type"] == "carbon" and p["scope"] == "life-cycle" and p["aggregate"] == "false"
               for p in params)
    frame = result.batches["carbon_intensity_hours"].set_index(["zone", "hour_ts"])
    assert set(frame.index.get_level_values("zone")) == {"IT-NO", "SE-SE3"}  # rows use Electricity Maps codes
    full = frame.loc[("IT-NO", T0)]
    assert full["carbon_intensity_g_per_kwh"] == pytest.approx(wattnet_value("IT_NORTH", T0) + 6)
    assert full["coverage"] == 1.0 and not full["is_estimated"] and full["emission_factor_type"] == "lifecycle"
    gap = frame.loc[("IT-NO", datetime(2026, 1, 1, 1))]
    quarters = [datetime(2026, 1, 1, 1, m) for m in (0, 15, 45)]
    assert gap["carbon_intensity_g_per_kwh"] == pytest.approx(sum(wattnet_value("IT_NORTH", q) for q in quarters) / 3)
    assert gap["coverage"] == 0.75
    prev = frame.loc[("IT-NO", preview_from)]
    assert bool(prev["is_estimated"]) and prev["estimation_method"] == "preview" and prev["coverage"] == 1.0
    replace_partitions(con, result.batches, result.partitions)
    assert con.execute("select count(*) from raw.carbon_intensity_hours where provider = 'wattnet'").fetchone() == (8,)


def test_wattnet_unmapped_zone_and_400_are_recorded() -> None:
    with wattnet_standin() as (url, state):
        settings = wattnet_settings(url)
        client = WattnetClient(settings, retries=0)
        result = extract_carbon_intensity(settings, ["US-CAL-CISO"], hours(T0, 2), client=client, now=LATER)
        assert state.requests == []  # not covered: no request at all
        assert "not covered by Wattnet" in result.metadata["failures"][0]["error"]
        resp = client.session.get(url + "v1/footprints", params={"zone": "DE", "start": "2026-01-01T00:00:00Z"})
    assert resp.status_code == 400 and resp.json() == {"detail": "Both start and end datetimes must be provided."}


def test_wattnet_zone_map_covers_the_reference_zones(tmp_path: Path) -> None:
    mapping = load_wattnet_zone_map(tmp_path / "absent.csv")  # a missing seed falls back to the built-in map
    assert mapping["IT_NORTH"] == "IT-NO" and mapping["SE3"] == "SE-SE3"
    assert mapping["DK1"] == "DK-DK1" and mapping["NO1"] == "NO-NO1" and mapping["DE"] == "DE"
    ref = PROJECT_ROOT.parent / "shared" / "data" / "wattnet" / "wattnet_zones_entsoe_full.csv"
    if ref.exists():
        ids = [line.split(",")[0] for line in ref.read_text().splitlines()[1:] if line]
        unmapped = sorted(set(ids) - set(mapping))
        assert unmapped == ["IT_CALABRIA"]
    seed = tmp_path / "map.csv"
    seed.write_text("wattnet_zone,electricitymaps_zone\nIT_CALABRIA,IT-CALA\n")
    assert load_wattnet_zone_map(seed)["IT_CALABRIA"] == "IT-CALA"
