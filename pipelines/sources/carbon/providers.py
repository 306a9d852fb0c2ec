"""The carbon-intensity provider registry: one name -> class list, read by the settings validation and the extract.

Every provider lands raw.carbon_intensity_hours rows for the zones the nodes need (`extract`); the API providers
fetch them over HTTP (http.py), the demo generates them, and `none` lands nothing so the models use the built-in
annual zone values (seeds) and flag it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import duckdb

from pipelines.sources.base import ExtractResult

from .electricitymaps import ElectricityMapsClient
from .http import TABLE, empty_frame
from .wattnet import WattnetClient

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pipelines.settings import CarbonSettings, ClusterSettings


class CarbonProvider(Protocol):
    name: str

    def extract(self, zones: list[str], hours: list[datetime], con: duckdb.DuckDBPyConnection | None = None,
                clusters: Iterable[ClusterSettings] | None = None) -> ExtractResult: ...


class BuiltInZoneValues:
    """`none`: no hourly source; the models use the built-in annual value of each zone, flagged as a fallback."""

    name = "none"

    def __init__(self, settings: CarbonSettings) -> None:
        self.settings = settings

    def extract(self, zones: list[str], hours: list[datetime], con: duckdb.DuckDBPyConnection | None = None,
                clusters: Any = None) -> ExtractResult:
        return ExtractResult(batches={TABLE: empty_frame()}, partitions=[],
                             metadata={"provider": self.name, "skipped": "no hourly provider configured"})


class DemoCarbon:
    """`demo`: a deterministic diurnal curve per zone (pipelines/sources/demo.py), for the zones the nodes need
    plus those of the demo clusters' topology."""

    name = "demo"

    def __init__(self, settings: CarbonSettings) -> None:
        self.settings = settings

    def extract(self, zones: list[str], hours: list[datetime], con: duckdb.DuckDBPyConnection | None = None,
                clusters: Iterable[ClusterSettings] | None = None) -> ExtractResult:
        from pipelines.sources.demo import demo_carbon_intensity, demo_zones

        wanted = set(zones)
        for cluster in clusters or ():
            if cluster.source == "demo":
                wanted.update(demo_zones(cluster))
        return demo_carbon_intensity(sorted(wanted), hours)


PROVIDERS: dict[str, type] = {
    "demo": DemoCarbon,
    "electricitymaps": ElectricityMapsClient,
    "wattnet": WattnetClient,
    "none": BuiltInZoneValues,
}
PROVIDER_NAMES: tuple[str, ...] = tuple(PROVIDERS)


def make_provider(settings: CarbonSettings) -> CarbonProvider:
    try:
        cls = PROVIDERS[settings.provider]
    except KeyError:
        raise ValueError(f"carbon.provider {settings.provider!r} is not one of {', '.join(PROVIDER_NAMES)}") from None
    return cls(settings)
