"""Hourly grid carbon intensity into raw.carbon_intensity_hours, from the provider the settings name.

Rules (SOURCES.md §6-7, METHOD.md B4/B10): hour-start naive UTC timestamps; a null provider value stays NULL
(never 0); the provider's estimation flags are kept; a failing zone-window is recorded in metadata and written
nowhere, so dbt falls back to the built-in zone value for those hours and flags it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import duckdb

from pipelines.sources.base import ExtractResult

from .electricitymaps import ElectricityMapsClient
from .http import TABLE, CarbonClient, HttpCarbonClient, ZoneFetch, extract_with_client
from .providers import PROVIDER_NAMES, PROVIDERS, CarbonProvider, make_provider
from .wattnet import WattnetClient, load_wattnet_zone_map

if TYPE_CHECKING:
    from pipelines.settings import CarbonSettings

__all__ = [
    "PROVIDERS", "PROVIDER_NAMES", "TABLE", "CarbonClient", "CarbonProvider", "ElectricityMapsClient",
    "HttpCarbonClient", "WattnetClient", "ZoneFetch", "extract_carbon_intensity", "load_wattnet_zone_map",
    "make_provider",
]


def extract_carbon_intensity(settings: CarbonSettings, zones: list[str], hours: list[datetime],
                             con: duckdb.DuckDBPyConnection | None = None, client: CarbonClient | None = None,
                             *, now: datetime | None = None) -> ExtractResult:
    """Rows for `zones` x `hours` from `client`, else from the configured provider (see http.extract_with_client
    for the cache and refresh rules of the API providers)."""
    if client is not None:
        return extract_with_client(client, zones, hours, con, now=now)
    provider = make_provider(settings)
    if isinstance(provider, HttpCarbonClient):
        return extract_with_client(provider, zones, hours, con, now=now)
    return provider.extract(zones, hours, con)
