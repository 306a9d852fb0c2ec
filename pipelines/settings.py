"""The one settings object: read from kubeledger.yaml (or $KUBELEDGER_CONFIG), secrets from the environment.

Every validation error names the file, the key and what is allowed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

DEFAULT_CONFIG_NAME = "kubeledger.yaml"
CLUSTER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
ZONE_RE = re.compile(r"^[A-Z]{2}(-[A-Z0-9]{1,8}){0,3}$")
LABEL_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-/]{1,253}$")
PROVIDERS = ("aws", "gcp", "azure", "alibaba", "oracle", "ovhcloud", "scaleway", "onprem")


class SettingsError(ValueError):
    """A configuration problem; the message names the file, the key and the fix."""


@dataclass(frozen=True)
class PrometheusSettings:
    url: str = ""
    bearer_token_env: str | None = None
    bearer_token_file: str | None = None
    basic_auth_username: str | None = None
    basic_auth_password_env: str | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    ca_file: str | None = None
    verify_tls: bool = True
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 120.0
    retries: int = 4
    cluster_label: str | None = None  # e.g. "cluster" on multi-cluster stores
    cluster_label_value: str | None = None
    scrape_interval_s: float = 60.0
    max_concurrency: int = 4

    def bearer_token(self) -> str | None:
        if self.bearer_token_env:
            value = os.environ.get(self.bearer_token_env)
            if value:
                return value.strip()
        if self.bearer_token_file:
            return Path(self.bearer_token_file).read_text().strip()
        return None

    def basic_auth(self) -> tuple[str, str] | None:
        if not self.basic_auth_username:
            return None
        password = os.environ.get(self.basic_auth_password_env or "", "")
        return (self.basic_auth_username, password)


@dataclass(frozen=True)
class KubernetesSettings:
    enabled: bool = False
    in_cluster: bool = False
    context: str | None = None
    kubeconfig: str | None = None
    host: str | None = None  # explicit API URL (tests, proxies)
    verify_tls: bool = True
    page_size: int = 500


@dataclass(frozen=True)
class DemoSettings:
    nodes: int = 12
    pods_per_node: int = 8
    containers_per_pod: int = 0  # 0 = the generator's realistic mix (1-2)
    seed: int = 42


@dataclass(frozen=True)
class ClusterSettings:
    name: str
    source: str = "demo"  # demo | prometheus
    provider: str | None = None  # default provider when providerID is missing
    region: str | None = None
    carbon_zone: str | None = None  # per-cluster override (on-prem)
    pue: float | None = None
    demo: DemoSettings = field(default_factory=DemoSettings)
    prometheus: PrometheusSettings = field(default_factory=PrometheusSettings)
    kubernetes: KubernetesSettings = field(default_factory=KubernetesSettings)


@dataclass(frozen=True)
class CarbonSettings:
    provider: str = "demo"  # demo | electricitymaps | wattnet | none
    base_url: str | None = None
    token_env: str = "ELECTRICITYMAPS_TOKEN"
    emission_factor_type: str = "lifecycle"
    carry_forward_hours: int = 0
    timeout_s: float = 30.0
    verify_tls: bool = True

    def token(self) -> str | None:
        return os.environ.get(self.token_env) or None


@dataclass(frozen=True)
class BoaviztaSettings:
    url: str | None = None  # None = the bundled Boavizta 2.5.0 table
    timeout_s: float = 30.0
    verify_tls: bool = True


@dataclass(frozen=True)
class PricingSettings:
    custom_file: str | None = None  # OpenCost default.json shape
    custom_convention: str = "hourly"  # hourly | monthly (OpenCost ConfigMap, divided by 730)
    instance_sheet: str | None = None  # provider,region,instance_type,hourly_usd[,spot_hourly_usd]
    node_csv: str | None = None  # Kubecost CSV pricing schema
    cpu_discount_pct: float = 0.0
    ram_discount_pct: float = 0.0
    cluster_management_fee_per_hour: float = 0.0


@dataclass(frozen=True)
class SharingSettings:
    shared_namespaces: tuple[str, ...] = ()
    shared_labels: tuple[str, ...] = ()  # "key:value"
    monthly_overhead_usd: float = 0.0
    split: str = "weighted"  # weighted | even (shared costs)
    share_idle: bool = False
    idle_split: str = "weighted"  # weighted | even
    idle_by_node: bool = False


@dataclass(frozen=True)
class EnergySettings:
    pue_source: str = "greenkube"  # greenkube | ccf
    memory: bool = False
    gpu: bool = False
    storage: bool = False
    carbon_zone_label: str = "kubeledger.io/carbon-zone"
    default_intensity_g_per_kwh: float = 500.0


@dataclass(frozen=True)
class QualitySettings:
    min_hour_coverage: float = 0.9
    max_estimated_share: float = 0.5


@dataclass(frozen=True)
class ScheduleSettings:
    daily_cron: str = "30 1 * * *"  # UTC; leaves late samples time to land
    late_days: int = 2


@dataclass(frozen=True)
class WarehouseSettings:
    path: str = "warehouse/kubeledger.duckdb"
    serving_path: str = "warehouse/serving.duckdb"
    parquet_path: str = "warehouse/parquet"
    raw_retention_days: int = 35
    memory_limit: str = "4GB"
    threads: int = 2


@dataclass(frozen=True)
class Settings:
    warehouse: WarehouseSettings = field(default_factory=WarehouseSettings)
    clusters: tuple[ClusterSettings, ...] = (ClusterSettings(name="demo"),)
    carbon: CarbonSettings = field(default_factory=CarbonSettings)
    boavizta: BoaviztaSettings = field(default_factory=BoaviztaSettings)
    pricing: PricingSettings = field(default_factory=PricingSettings)
    sharing: SharingSettings = field(default_factory=SharingSettings)
    energy: EnergySettings = field(default_factory=EnergySettings)
    quality: QualitySettings = field(default_factory=QualitySettings)
    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)
    source_file: str | None = None

    def cluster(self, name: str) -> ClusterSettings:
        for c in self.clusters:
            if c.name == name:
                return c
        allowed = ", ".join(c.name for c in self.clusters)
        raise SettingsError(f"cluster {name!r} is not configured; configured clusters: {allowed}")

    def resolve(self, path: str) -> Path:
        """Paths in the file are relative to the file's folder (or the working directory without a file)."""
        p = Path(path)
        if p.is_absolute():
            return p
        base = Path(self.source_file).parent if self.source_file else Path.cwd()
        return (base / p).resolve()

    @property
    def warehouse_path(self) -> Path:
        return self.resolve(os.environ.get("KUBELEDGER_WAREHOUSE") or self.warehouse.path)

    @property
    def serving_path(self) -> Path:
        return self.resolve(os.environ.get("KUBELEDGER_SERVING") or self.warehouse.serving_path)

    @property
    def parquet_path(self) -> Path:
        return self.resolve(self.warehouse.parquet_path)


# --- parsing -------------------------------------------------------------------------------------------

_CHOICES: dict[str, tuple[str, ...]] = {
    "clusters[].source": ("demo", "prometheus"),
    "clusters[].provider": PROVIDERS,
    "carbon.provider": ("demo", "electricitymaps", "wattnet", "none"),
    "carbon.emission_factor_type": ("lifecycle", "direct"),
    "pricing.custom_convention": ("hourly", "monthly"),
    "sharing.split": ("weighted", "even"),
    "sharing.idle_split": ("weighted", "even"),
    "energy.pue_source": ("greenkube", "ccf"),
}


def _build(cls: type, data: Any, where: str, origin: str) -> Any:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SettingsError(f"{origin}: {where or 'top level'}: expected a mapping, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls) if f.name != "source_file"}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise SettingsError(
            f"{origin}: {where + '.' if where else ''}{unknown[0]}: unknown key; allowed keys: {', '.join(sorted(known))}"
        )
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        f = known[name]
        key = f"{where}.{name}" if where else name
        kwargs[name] = _coerce(f.type, value, key, origin)
        choice_key = re.sub(r"\[\d+\]", "[]", key)
        if choice_key in _CHOICES and kwargs[name] is not None and kwargs[name] not in _CHOICES[choice_key]:
            raise SettingsError(
                f"{origin}: {key}: {value!r} is not allowed; use one of: {', '.join(_CHOICES[choice_key])}"
            )
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required key is missing
        raise SettingsError(f"{origin}: {where or 'top level'}: {exc}") from exc


_NESTED = {
    "PrometheusSettings": PrometheusSettings,
    "KubernetesSettings": KubernetesSettings,
    "DemoSettings": DemoSettings,
    "WarehouseSettings": WarehouseSettings,
    "CarbonSettings": CarbonSettings,
    "BoaviztaSettings": BoaviztaSettings,
    "PricingSettings": PricingSettings,
    "SharingSettings": SharingSettings,
    "EnergySettings": EnergySettings,
    "QualitySettings": QualitySettings,
    "ScheduleSettings": ScheduleSettings,
}


def _coerce(type_name: Any, value: Any, key: str, origin: str) -> Any:
    t = str(type_name)
    for nested_name, nested_cls in _NESTED.items():
        if t == nested_name:
            return _build(nested_cls, value, key, origin)
    if t.startswith("tuple[ClusterSettings"):
        if not isinstance(value, list) or not value:
            raise SettingsError(f"{origin}: {key}: expected a non-empty list of clusters")
        clusters = tuple(_build(ClusterSettings, item, f"{key}[{i}]", origin) for i, item in enumerate(value))
        names = [c.name for c in clusters]
        for i, c in enumerate(clusters):
            if not CLUSTER_NAME_RE.match(c.name):
                raise SettingsError(
                    f"{origin}: {key}[{i}].name: {c.name!r} is not allowed; use letters, digits, '.', '_' or '-' (max 63)"
                )
            if c.name in names[:i]:
                raise SettingsError(f"{origin}: {key}[{i}].name: {c.name!r} is configured twice; names must be unique")
            if c.source == "prometheus" and not c.prometheus.url:
                raise SettingsError(
                    f"{origin}: {key}[{i}].prometheus.url: required when source is 'prometheus' (e.g. http://prometheus:9090)"
                )
            if c.carbon_zone is not None and not ZONE_RE.match(c.carbon_zone):
                raise SettingsError(
                    f"{origin}: {key}[{i}].carbon_zone: {c.carbon_zone!r} is not an Electricity Maps zone code (e.g. FR, US-CAL-CISO)"
                )
            if c.pue is not None and not (1.0 <= c.pue <= 3.0):
                raise SettingsError(f"{origin}: {key}[{i}].pue: {c.pue} is outside 1.0..3.0")
        return clusters
    if t.startswith("tuple[str"):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SettingsError(f"{origin}: {key}: expected a list of strings")
        if key.endswith("shared_labels"):
            for v in value:
                if ":" not in v:
                    raise SettingsError(f"{origin}: {key}: {v!r} must look like 'label:value' (e.g. app:prometheus)")
        return tuple(value)
    if t.startswith("dict"):
        if not isinstance(value, dict):
            raise SettingsError(f"{origin}: {key}: expected a mapping of header name to value")
        return {str(k): str(v) for k, v in value.items()}
    if t == "bool":
        if not isinstance(value, bool):
            raise SettingsError(f"{origin}: {key}: expected true or false, got {value!r}")
        return value
    if t in ("int", "float", "float | None"):
        if value is None and t.endswith("None"):
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SettingsError(f"{origin}: {key}: expected a number, got {value!r}")
        if value < 0:
            raise SettingsError(f"{origin}: {key}: must not be negative, got {value!r}")
        return int(value) if t == "int" else float(value)
    if value is None:
        return None
    if not isinstance(value, (str, int, float)):
        raise SettingsError(f"{origin}: {key}: expected text, got {type(value).__name__}")
    return str(value)


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """Load settings from `path`, $KUBELEDGER_CONFIG, or ./kubeledger.yaml; defaults when none exists."""
    explicit = path or os.environ.get("KUBELEDGER_CONFIG")
    candidate = Path(explicit) if explicit else Path.cwd() / DEFAULT_CONFIG_NAME
    if not candidate.exists():
        if explicit:
            raise SettingsError(f"{candidate}: config file not found (set KUBELEDGER_CONFIG or pass --config)")
        return Settings()
    origin = str(candidate)
    try:
        data = yaml.safe_load(candidate.read_text()) or {}
    except yaml.YAMLError as exc:
        raise SettingsError(f"{origin}: not valid YAML: {exc}") from exc
    settings = _build(Settings, data, "", origin)
    _check_ranges(settings, origin)
    return Settings(**{f.name: getattr(settings, f.name) for f in fields(Settings) if f.name != "source_file"},
                    source_file=str(candidate.resolve()))


def _check_ranges(s: Settings, origin: str) -> None:
    for key, value in (("pricing.cpu_discount_pct", s.pricing.cpu_discount_pct),
                       ("pricing.ram_discount_pct", s.pricing.ram_discount_pct)):
        if not 0 <= value < 100:
            raise SettingsError(f"{origin}: {key}: {value} is outside 0..100 (a percentage)")
    if not 0 < s.quality.min_hour_coverage <= 1:
        raise SettingsError(f"{origin}: quality.min_hour_coverage: {s.quality.min_hour_coverage} is outside (0, 1]")
    if not LABEL_KEY_RE.match(s.energy.carbon_zone_label):
        raise SettingsError(f"{origin}: energy.carbon_zone_label: {s.energy.carbon_zone_label!r} is not a label key")
    if s.warehouse.raw_retention_days < 1:
        raise SettingsError(f"{origin}: warehouse.raw_retention_days: must be at least 1")
