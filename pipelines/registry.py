"""The registries of the sources: which metrics sources and carbon-intensity providers exist, by name, and where
each one's code lives ("module:attribute").

Pure data, so the settings validation reads the allowed names without importing pipelines.sources (whose modules
import the settings). pipelines.sources resolves an entry when it uses it: a demo run never imports the Prometheus
client. A new source or provider is one line here and its code under pipelines/sources/.
"""

from __future__ import annotations

import importlib
from typing import Any

# clusters[].source -> a function of (cluster, hours) returning an ExtractResult (pipelines/sources/metrics.py)
METRICS_SOURCES: dict[str, str] = {
    "demo": "pipelines.sources.demo:extract_demo_hours",
    "prometheus": "pipelines.sources.prometheus:extract_prometheus_hours",
}

# carbon.provider -> a class built from the CarbonSettings (pipelines/sources/carbon/providers.py)
CARBON_PROVIDERS: dict[str, str] = {
    "demo": "pipelines.sources.carbon.builtin:DemoCarbon",
    "electricitymaps": "pipelines.sources.carbon.electricitymaps:ElectricityMapsClient",
    "wattnet": "pipelines.sources.carbon.wattnet:WattnetClient",
    "none": "pipelines.sources.carbon.builtin:BuiltInZoneValues",
}


def resolve(entry: str) -> Any:
    """The object a registry entry names ("module:attribute"), importing its module."""
    module, attribute = entry.split(":")
    return getattr(importlib.import_module(module), attribute)
