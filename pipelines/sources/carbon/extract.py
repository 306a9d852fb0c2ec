"""The carbon-intensity step: the zones the window's nodes need (dbt's int_nodes_required_lookups) from the
configured provider into raw.carbon_intensity_hours."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.sources import base
from pipelines.warehouse.lookups import CARBON_ZONE, required_lookups

from .providers import make_provider

if TYPE_CHECKING:
    from pipelines.settings import ClusterSettings, Settings


def extract_carbon(settings: Settings, con: duckdb.DuckDBPyConnection, hours: list[datetime],
                   clusters: Iterable[ClusterSettings] | None = None) -> dict[str, Any]:
    """Land hourly intensity for the zones in use. Outages are recorded, not raised: the models fall back."""
    zones = sorted(key for _, key in required_lookups(con, CARBON_ZONE))
    provider = make_provider(settings.carbon)
    if not hours:
        return {"rows": 0, "zones": zones, "provider": provider.name}
    result = provider.extract(zones, hours, con, clusters=list(clusters or settings.clusters))
    written = base.land(con, result)
    return {"rows": sum(written.values()), "zones": result.metadata.get("zones", zones), "provider": provider.name,
            "failures": result.metadata.get("failures", [])}
