"""Checks on the generated dbt seeds (seeds/*.csv) against METHOD.md examples. Pure csv, fast."""

from __future__ import annotations

import csv
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "seeds"
SHARED = ROOT.parent / "shared" / "data"


def load(name: str) -> list[dict[str, str]]:
    with (SEEDS / f"{name}.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def profile(provider: str, key: str) -> dict[str, str] | None:
    rows = [
        r for r in load("power_instance_profiles") if r["provider"] == provider and r["instance_key"] == key
    ]
    assert len(rows) <= 1
    return rows[0] if rows else None


def test_method_b8_examples():
    m5 = profile("aws", "m5.large")
    assert m5 is not None and m5["processors"] == "Skylake"
    assert float(m5["min_watts_per_vcpu"]) == pytest.approx(0.65)
    assert float(m5["max_watts_per_vcpu"]) == pytest.approx(4.26)
    assert 2 * float(m5["min_watts_per_vcpu"]) == pytest.approx(1.30)
    assert 2 * float(m5["max_watts_per_vcpu"]) == pytest.approx(8.52)

    e2 = profile("gcp", "e2")
    assert e2 is not None and e2["match_kind"] == "family" and e2["processor_count"] == "4"
    assert float(e2["min_watts_per_vcpu"]) == pytest.approx(0.7075)
    assert float(e2["max_watts_per_vcpu"]) == pytest.approx(3.595)

    d2s = profile("azure", "d2s v3")
    assert d2s is not None and d2s["instance_key_original"] == "D2s v3"
    assert float(d2s["min_watts_per_vcpu"]) == pytest.approx(0.75)
    assert float(d2s["max_watts_per_vcpu"]) == pytest.approx(4.165)

    # m6i.* are 'Unknown' in CCF: no invented profile, they fall to the provider average
    assert not [r for r in load("power_instance_profiles") if r["instance_key"].startswith("m6i.")]
    aws_avg = [r for r in load("power_provider_averages") if r["provider"] == "aws"][0]
    assert (float(aws_avg["min_watts_per_vcpu"]), float(aws_avg["max_watts_per_vcpu"])) == (0.74, 3.5)


def test_no_unknown_processors_in_profiles():
    for r in load("power_instance_profiles"):
        assert "Unknown" not in r["processors"].split(";")
        assert r["profile_version"] == "ccf-app"


def test_row_counts():
    assert len(load("power_provider_averages")) == 6
    assert len(load("load_balancer_prices")) == 6
    assert len(load("pue_by_region")) == 8
    assert len(load("wattnet_zone_map")) == 60
    assert len(load("boavizta_instances")) == 2212
    assert len(load("region_carbon_zones")) == 122  # 125 CCF rows less the three 'Unknown' placeholders
    assert len(load("gpu_instance_map")) == 70  # 38 aws-gpu + 32 azure-gpu rows
    assert len(load("gpu_power_profiles")) == 12
    # 519 aws + 518 azure + 15 gcp keys, less all-Unknown (195) and Ice Lake / Graviton 1 (131)
    assert len(load("power_instance_profiles")) == 726
    opencost = load("opencost_prices")
    assert {r["provider"] for r in opencost} == {
        "default",
        "aws",
        "gcp",
        "azure",
        "alibaba",
        "oracle",
        "opencost_builtin",
    }


def test_prices():
    oc = {(r["provider"], r["price_key"]): float(r["hourly_usd"]) for r in load("opencost_prices")}
    assert oc[("default", "CPU")] == 0.031611
    assert oc[("default", "storage")] == pytest.approx(0.04 / 730, rel=1e-6)
    assert oc[("opencost_builtin", "spotGPU")] == 0.308
    assert oc[("oracle", "LoadBalancer")] == 0.0113
    assert ("gcp", "GPU") not in oc
    sheet = {(r["provider"], r["region"], r["instance_type"]): r for r in load("instance_prices")}
    assert float(sheet[("aws", "us-east-1", "m5.large")]["hourly_usd"]) == 0.096
    for key in [
        ("aws", "us-east-1", "c5.2xlarge"),
        ("aws", "us-east-1", "g4dn.xlarge"),
        ("gcp", "europe-west1", "n2-standard-4"),
        ("gcp", "europe-west1", "e2-standard-8"),
        ("azure", "westeurope", "Standard_D4s_v3"),
    ]:
        assert key in sheet


def test_carbon_seeds():
    zones = {(r["provider"], r["region"]): r["electricitymaps_zone"] for r in load("region_carbon_zones")}
    assert zones[("aws", "us-east-1")] == "US-MIDA-PJM"
    assert zones[("gcp", "europe-west1")] == "BE"
    assert zones[("azure", "westeurope")] == "NL"
    assert zones[("azure", "eastus")] == "US-MIDA-PJM"  # CCF spells it 'EastUS'
    assert zones[("aws", "ap-east-1")] == ""  # known-unmapped kept
    intensity = {r["zone"]: r for r in load("zone_annual_intensity")}
    assert intensity["BE"]["source"] == "ccf-region-factor"
    assert float(intensity["BE"]["g_per_kwh"]) == pytest.approx(110.0)
    assert intensity["IT-SIC"]["source"] == "boavizta-country-factor"
    assert float(intensity["FR"]["g_per_kwh"]) == pytest.approx(53.793333, abs=1e-6)
    wattnet = {r["wattnet_zone"]: r["electricitymaps_zone"] for r in load("wattnet_zone_map")}
    assert wattnet["IT_NORTH"] == "IT-NO" and wattnet["SE3"] == "SE-SE3" and wattnet["DK1"] == "DK-DK1"
    assert wattnet["NO1"] == "NO-NO1" and wattnet["FR"] == "FR"
    boa = {(r["provider"], r["instance_type"]): r for r in load("boavizta_instances")}
    m5 = boa[("aws", "m5.large")]
    assert float(m5["embedded_kg_per_hour"]) == pytest.approx(0.000457)
    assert float(m5["lifetime_hours"]) == 52560


def test_macro_gcp_type_keys_match_ccf():
    """The macro keeps the full machine type for the GCP keys CCF lists per type (shared-core)."""
    macro = (ROOT / "dbt_project" / "macros" / "instance_keys.sql").read_text(encoding="utf-8")
    listed = set(re.findall(r"'([a-z0-9]+-[a-z0-9]+)'", macro.split("when 'gcp'")[1].split("else")[0]))
    path = SHARED / "ccf-derived" / "ccf_instance_type_processors.csv"
    if not path.is_file():
        pytest.skip("shared/data not available")
    with path.open(newline="", encoding="utf-8") as fh:
        ccf = {
            r["instance_type_or_family"].lower()
            for r in csv.DictReader(fh)
            if r["provider"] == "gcp" and "-" in r["instance_type_or_family"]
        }
    assert listed == ccf


def test_seeds_up_to_date():
    if not SHARED.is_dir():
        pytest.skip("shared/data not available")
    spec = importlib.util.spec_from_file_location("derive_seeds", ROOT / "scripts" / "derive_seeds.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["derive_seeds"] = mod  # dataclasses need the module registered
    spec.loader.exec_module(mod)
    assert mod.main(["--shared", str(SHARED), "--out", str(SEEDS), "--check"]) == 0
