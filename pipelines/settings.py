"""The one settings object: read from kubeledger.yaml (or $KUBELEDGER_CONFIG), secrets from the environment.

Every validation error is one line naming the file, the key and what is allowed, raised while the file is loaded
(never minutes later inside dbt). What is checked:

- numbers: finite, of the right kind (a whole number where one is meant; never a boolean or text), within the
  documented range in `NUMBER_RANGES` (e.g. PUE 1..3, intensity 0..3000 g/kWh, discounts 0..100 %);
- text: really text (YAML reads unquoted yes/no/on/off as booleans and 0123 or 12:30 as numbers: quote them),
  without control characters; cluster names, zones, label keys, environment variable names, URLs (http/https
  with a host), header names and values, `warehouse.memory_limit` (DuckDB size) and `schedule.daily_cron`
  (what Dagster accepts) each have their own rule;
- the YAML itself: a key given twice in one mapping is an error (YAML would silently keep the last);
- `engine` (duckdb | spark) and the `lake` section (root folder or s3a:// gs:// abfss:// hdfs:// URI, Spark
  master URL, JVM driver memory, spark.* extra settings);
- the files the configuration names (price files, Prometheus token and TLS files, kubeconfig) exist and are
  regular files;
- the places a run writes (warehouse.path, serving_path, parquet_path, a local lake.root, and the state, reports
  and Dagster folders kept next to the warehouse file) could be created: not under a file or device, a folder where
  a folder is meant, a DuckDB file (or nothing yet) where a file is; permissions are check-config's, since the API
  reads the same file from a read-only volume;
- a control character anywhere in the file is named with its line and column.

Where: the dataclasses and defaults in settings_models.py (each numeric key's range beside its default,
`ranged`), what each key allows in settings_rules.py (the ranges read from the dataclasses; the
carbon.provider and clusters[].source choices are the names of pipelines/registry.py), the strict reading in
settings_validation.py; this module loads a file and re-exports the names, so callers import everything from
`pipelines.settings`.
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path

import yaml

from pipelines.settings_models import (
    ApiSettings,
    BillingSettings,
    BoaviztaSettings,
    CarbonSettings,
    ClusterSettings,
    DagsterSettings,
    DemoSettings,
    EnergySettings,
    KubernetesSettings,
    LakeSettings,
    NumberRange,
    PricingSettings,
    PrometheusSettings,
    QualitySettings,
    RecommendationSettings,
    ScheduleSettings,
    Settings,
    SettingsError,
    SharingSettings,
    SparkSettings,
    WarehouseSettings,
    max_threads,
)
from pipelines.settings_rules import (
    NUMBER_RANGES,
    PROVIDERS,
    carbon_provider_choices,
    file_problem,
)
from pipelines.settings_validation import (
    _NESTED,
    MAX_YAML_DEPTH,
    DuplicateKeyError,
    Location,
    StrictLoader,
    ValidationContext,
    build,
    check_files,
    check_locations,
    written_locations,
    yaml_error,
)

__all__ = [
    "DEFAULT_CONFIG_NAME", "NUMBER_RANGES", "PROVIDERS", "ApiSettings", "BillingSettings", "BoaviztaSettings", "CarbonSettings", "ClusterSettings",
    "DagsterSettings", "DemoSettings", "EnergySettings", "KubernetesSettings", "LakeSettings", "NumberRange", "PricingSettings",
    "PrometheusSettings", "QualitySettings", "RecommendationSettings", "ScheduleSettings", "Settings", "SettingsError", "SharingSettings",
    "SparkSettings", "StrictLoader", "WarehouseSettings", "_NESTED", "carbon_provider_choices", "file_problem", "load_settings",
    "Location", "max_threads", "settings_from_json", "settings_to_json", "written_locations",
]

DEFAULT_CONFIG_NAME = "kubeledger.yaml"


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """Load settings from `path`, $KUBELEDGER_CONFIG, or ./kubeledger.yaml; defaults when none exists."""
    explicit = path or os.environ.get("KUBELEDGER_CONFIG")
    candidate = Path(explicit) if explicit else Path.cwd() / DEFAULT_CONFIG_NAME
    origin = str(candidate)
    problem = file_problem(candidate)
    if problem == "not found" and not explicit:
        return Settings()
    if problem == "not found":
        raise SettingsError(f"{origin}: config file not found (set KUBELEDGER_CONFIG or pass --config)")
    if problem:
        raise SettingsError(f"{origin}: the config file {problem}; point --config or KUBELEDGER_CONFIG at a "
                            "YAML file")
    try:
        text = candidate.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{origin}: cannot read the config file as UTF-8 text: {exc}") from exc
    try:
        loader = StrictLoader(text)
    except yaml.YAMLError as exc:  # the reader refuses a control character before anything is parsed
        raise yaml_error(origin, exc, text) from None
    try:
        data = loader.get_single_data() or {}
    except DuplicateKeyError as dup:
        raise SettingsError(f"{origin}: {dup.path}: key given twice (lines {dup.first_line} and {dup.line}); "
                            "YAML would silently keep only the last one: keep one") from None
    except yaml.YAMLError as exc:
        raise yaml_error(origin, exc, text) from exc
    except RecursionError:  # PyYAML composes nested collections recursively
        raise SettingsError(f"{origin}: not valid YAML for kubeledger: lists or mappings nested more than "
                            f"{MAX_YAML_DEPTH} levels deep; no key of kubeledger.yaml nests more than 4 levels") from None
    except ValueError as exc:  # YAML reads an unquoted 2026-13-01 as a date and fails to build it
        raise SettingsError(f"{origin}: not valid YAML: a value written as a date is not a real date ({exc}); "
                            "write a real day as YYYY-MM-DD") from exc
    finally:
        loader.dispose()
    ctx = ValidationContext(origin, loader.raw_scalars)
    settings = build(Settings, data, "", ctx)
    settings = Settings(**{f.name: getattr(settings, f.name) for f in fields(Settings) if f.name != "source_file"},
                        source_file=str(candidate.resolve()))
    check_files(settings, ctx)
    check_locations(settings, ctx)
    return settings


# --- snapshots: a run uses the settings it was launched with ------------------------------------------

def settings_to_json(settings: Settings) -> str:
    """The settings as JSON, to pin a run to them (settings_from_json rebuilds and re-validates them)."""
    import json
    from dataclasses import asdict

    return json.dumps(asdict(settings), sort_keys=True)


def settings_from_json(text: str, origin: str = "pinned settings") -> Settings:
    import json

    data = json.loads(text)
    source_file = data.pop("source_file", None)
    settings = build(Settings, data, "", ValidationContext(origin, {}))
    return Settings(**{f.name: getattr(settings, f.name) for f in fields(Settings) if f.name != "source_file"},
                    source_file=source_file)
