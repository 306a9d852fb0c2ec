"""The carbon-intensity providers by name, for the extract: the classes that `CARBON_PROVIDERS` of
pipelines/registry.py names (the settings validation reads the same registry for the allowed `carbon.provider`).

Every provider lands raw.carbon_intensity_hours rows for the zones the nodes need (`extract`); the API providers
fetch them over HTTP (http.py), the demo generates them, and `none` lands nothing so the models use the built-in
annual zone values (seeds) and flag it (builtin.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

import duckdb

from pipelines.registry import CARBON_PROVIDERS, resolve
from pipelines.sources.base import ExtractResult

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pipelines.settings import CarbonSettings, ClusterSettings


class CarbonProvider(Protocol):
    name: str

    def extract(self, zones: list[str], hours: list[datetime], con: duckdb.DuckDBPyConnection | None = None,
                clusters: Iterable[ClusterSettings] | None = None) -> ExtractResult: ...


PROVIDERS: dict[str, type] = {name: resolve(entry) for name, entry in CARBON_PROVIDERS.items()}
PROVIDER_NAMES: tuple[str, ...] = tuple(PROVIDERS)


def make_provider(settings: CarbonSettings) -> CarbonProvider:
    try:
        cls = PROVIDERS[settings.provider]
    except KeyError:
        raise ValueError(f"carbon.provider {settings.provider!r} is not one of {', '.join(PROVIDER_NAMES)}") from None
    return cls(settings)
