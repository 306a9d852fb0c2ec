"""Boavizta extraction against the real Boavizta API 2.5.0 (separate process) and the bundled table."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest
import requests

from pipelines import PROJECT_ROOT
from pipelines.settings import BoaviztaSettings
from pipelines.sources.boavizta import BUNDLED_SEED, BoaviztaClient, extract_boavizta
from pipelines.warehouse.landing import replace_partitions
from tests.fixtures.boavizta_server import boavizta_url  # noqa: F401

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SHARED_CSV = PROJECT_ROOT.parent / "shared" / "data" / "boavizta" / "boavizta_cloud_instances_v2.5.0.csv"


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    c.execute("create schema raw")
    c.execute((ROOT / "sql/raw/40_boavizta.sql").read_text())
    yield c
    c.close()


def counting_client(url: str) -> tuple[BoaviztaClient, list[str]]:
    calls: list[str] = []
    session = requests.Session()
    session.hooks["response"].append(lambda resp, *a, **k: calls.append(resp.url))
    return BoaviztaClient(url, session=session), calls


@pytest.mark.boavizta
def test_real_api_m5_large_unknown_type_and_cache(boavizta_url: str, con) -> None:  # noqa: F811
    settings = BoaviztaSettings(url=boavizta_url)
    client, calls = counting_client(boavizta_url)
    keys = [("aws", "m5.large"), ("aws", "zz9.huge")]
    first = extract_boavizta(settings, keys, con=con, client=client)
    assert first.metadata["failures"] == []
    rows = first.batches["boavizta_impacts"].set_index("instance_type")
    m5 = rows.loc["m5.large"]
    assert m5["status"] == "ok" and m5["_source"] == "boavizta-api" and m5["api_version"] == "2.5.0"
    assert m5["embedded_kg_per_hour"] == pytest.approx(0.000457, rel=1e-3)
    assert m5["lifetime_hours"] == 52560
    assert (m5["vcpu"], m5["memory_gb"]) == (2.0, 8.0)
    assert 5 < m5["avg_power_w"] < 20
    assert "End of life" in m5["warnings"]
    missing = rows.loc["zz9.huge"]
    assert missing["status"] == "not_found" and pd.isna(missing["embedded_kg_per_hour"])
    assert "not found" in missing["warnings"]
    assert first.partitions == [{"provider": "aws", "instance_type": "m5.large"},
                                {"provider": "aws", "instance_type": "zz9.huge"}]
    replace_partitions(con, first.batches, first.partitions)

    n = len(calls)
    second = extract_boavizta(settings, keys, con=con, client=client)
    assert len(calls) == n  # both cached, the not_found one included: no HTTP request at all
    assert second.rows() == 0 and second.partitions == [] and second.metadata["cached_skipped"] == 2
    assert con.execute("select count(*) from raw.boavizta_impacts").fetchone() == (2,)


def test_api_down_is_recorded_not_raised() -> None:
    settings = BoaviztaSettings(url="http://127.0.0.1:9")  # discard port: nothing answers
    client = BoaviztaClient(settings.url or "", timeout_s=2, retries=0)
    result = extract_boavizta(settings, [("aws", "m5.large")], client=client)
    assert result.rows() == 0 and result.partitions == []
    assert result.metadata["failures"][0]["instance_type"] == "m5.large"


@pytest.fixture
def bundled_seed(tmp_path: Path) -> Path:
    if BUNDLED_SEED.exists():
        return BUNDLED_SEED
    if not SHARED_CSV.exists():
        pytest.skip(f"neither {BUNDLED_SEED} nor {SHARED_CSV} exists")
    # seed not generated yet: derive one in the seed's column layout from the shared 2.5.0 table
    src = pd.read_csv(SHARED_CSV)
    seed = src.rename(columns={
        "embedded_gwp_kgco2e_per_hour": "embedded_kg_per_hour", "hours_life_time": "lifetime_hours",
        "avg_power_w_load0": "avg_power_w_0", "avg_power_w_load10": "avg_power_w_10",
        "avg_power_w_load50": "avg_power_w_50", "avg_power_w_load100": "avg_power_w_100",
    })[["provider", "instance_type", "vcpu", "memory_gb", "gpu_units", "embedded_kg_per_hour", "lifetime_hours",
        "avg_power_w_0", "avg_power_w_10", "avg_power_w_50", "avg_power_w_100"]]
    path = tmp_path / "boavizta_instances.csv"
    seed.to_csv(path, index=False)
    return path


def test_bundled_mode_matches_the_table(bundled_seed: Path, con) -> None:
    settings = BoaviztaSettings(url=None)
    keys = [("aws", "m5.large"), ("AWS", "m5.large"), ("gcp", "n2-standard-4"), ("aws", "zz9.huge")]
    result = extract_boavizta(settings, keys, con=con, bundled_path=bundled_seed)
    frame = result.batches["boavizta_impacts"].set_index(["provider", "instance_type"])
    assert len(frame) == 3  # provider names are case-insensitive
    table = pd.read_csv(bundled_seed).set_index(["provider", "instance_type"])
    for key in [("aws", "m5.large"), ("gcp", "n2-standard-4")]:
        assert frame.loc[key, "embedded_kg_per_hour"] == table.loc[key, "embedded_kg_per_hour"]
        assert frame.loc[key, "avg_power_w"] == table.loc[key, "avg_power_w_50"]
        assert frame.loc[key, "_source"] == "bundled" and frame.loc[key, "status"] == "ok"
    assert frame.loc[("aws", "m5.large"), "embedded_kg_per_hour"] == pytest.approx(0.000457)
    assert frame.loc[("aws", "m5.large"), "lifetime_hours"] == 52560
    assert frame.loc[("aws", "zz9.huge"), "status"] == "not_found"
    replace_partitions(con, result.batches, result.partitions)
    again = extract_boavizta(settings, keys, con=con, bundled_path=bundled_seed)
    assert again.rows() == 0
