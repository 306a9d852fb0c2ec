"""The carbon-intensity provider registry is the one list: settings validation allows exactly its names, and every
provider lands rows through the same `extract` call."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from pipelines.registry import resolve
from pipelines.settings import CarbonSettings, ClusterSettings, SettingsError, load_settings
from pipelines.sources.carbon import PROVIDER_NAMES, PROVIDERS, HttpCarbonClient, make_provider
from pipelines.sources.metrics import METRICS_SOURCES

HOURS = [datetime(2026, 1, 1) + timedelta(hours=h) for h in range(3)]


def test_settings_allow_exactly_the_registered_names(tmp_path: Path) -> None:
    for name in PROVIDER_NAMES:
        path = tmp_path / f"{name}.yaml"
        path.write_text(f"carbon:\n  provider: {name}\n")
        assert load_settings(str(path)).carbon.provider == name
    path = tmp_path / "bad.yaml"
    path.write_text("carbon:\n  provider: watttime\n")
    with pytest.raises(SettingsError, match=", ".join(PROVIDER_NAMES)):
        load_settings(str(path))


def test_cluster_sources_are_the_metrics_registry(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("clusters:\n  - name: a\n    source: otel\n")
    with pytest.raises(SettingsError, match=", ".join(METRICS_SOURCES)):
        load_settings(str(path))


def test_every_metrics_source_resolves() -> None:
    # the registry names its code as text (imported on use): a typo would surface only in a run of that source
    assert all(callable(resolve(entry)) for entry in METRICS_SOURCES.values())


def test_builtin_values_provider_lands_nothing() -> None:
    result = make_provider(CarbonSettings(provider="none")).extract(["DE"], HOURS)
    assert result.partitions == [] and result.rows() == 0


def test_demo_provider_adds_the_demo_topology_zones() -> None:
    cluster = ClusterSettings(name="d", source="demo")
    result = make_provider(CarbonSettings(provider="demo")).extract(["XX"], HOURS, clusters=[cluster])
    zones = set(result.batches["carbon_intensity_hours"]["zone"])
    assert "XX" in zones and len(zones) > 1


def test_api_providers_share_the_http_base() -> None:
    api = {name for name, cls in PROVIDERS.items() if issubclass(cls, HttpCarbonClient)}
    assert api == {"electricitymaps", "wattnet"}
