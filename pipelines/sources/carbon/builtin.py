"""The two providers without an API: `none` (the built-in annual zone values) and `demo` (a generated curve)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.sources.base import ExtractResult

from .http import TABLE, empty_frame

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pipelines.settings import CarbonSettings, ClusterSettings


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
