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
- the files the configuration names (price files, Prometheus token and TLS files, kubeconfig) exist and are
  regular files.
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import MISSING, dataclass, field, fields
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import yaml

# the sources' registries own their names (pipelines/sources/metrics.py, pipelines/sources/carbon/providers.py)
from pipelines.sources.carbon.providers import PROVIDER_NAMES as CARBON_PROVIDERS
from pipelines.sources.metrics import METRICS_SOURCES

DEFAULT_CONFIG_NAME = "kubeledger.yaml"
# cluster names become partition paths (cluster=<name>/), Dagster tags and dbt vars: DNS-label-like, lowercase so
# two names never collide on a case-insensitive file system
CLUSTER_NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?")
ZONE_RE = re.compile(r"[A-Z]{2}(-[A-Z0-9]{1,8}){0,3}")
LABEL_KEY_RE = re.compile(r"[A-Za-z0-9_.\-/]{1,253}")
PROM_LABEL_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
HEADER_NAME_RE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}")  # RFC 7230 token
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # C0, DEL, C1, line separators
HEADER_VALUE_BAD_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")  # as CONTROL_RE; HTAB is allowed
# DuckDB size syntax (the units its memory_limit documents), or a share of the machine's memory
MEMORY_RE = re.compile(r"([0-9]{1,12}(?:\.[0-9]{1,6})?) ?(KB|MB|GB|TB|KiB|MiB|GiB|TiB|%)", re.IGNORECASE)
MEMORY_UNITS = {"kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
                "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}
MEMORY_MIN_BYTES = 64 * 1024**2
CRON_ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
CRON_FIELD_RE = re.compile(r"[0-9A-Za-z*?,/#-]{1,64}")
CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))  # minute, hour, day of month, month, day of week
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
    # first daily partition (YYYY-MM-DD, UTC); unset: the earliest raw hour, else 35 days before the first run
    start_date: str | None = None


@dataclass(frozen=True)
class WarehouseSettings:
    path: str = "warehouse/kubeledger.duckdb"
    serving_path: str = "warehouse/serving.duckdb"
    parquet_path: str = "warehouse/parquet"
    raw_retention_days: int = 35
    keep_run_folders: int = 3  # dbt target/log folders kept per dbt asset under <warehouse folder>/state/dbt/runs
    memory_limit: str = "4GB"
    threads: int = 2


@dataclass(frozen=True)
class DagsterSettings:
    storage: str = "sqlite"  # sqlite (files under the warehouse folder) | postgres (production)
    postgres_url_env: str = "KUBELEDGER_DAGSTER_PG_URL"  # holds postgresql://user:password@host:5432/db


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
    dagster: DagsterSettings = field(default_factory=DagsterSettings)
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

# Keys below are written with `clusters[]` for any cluster index.
_CHOICES: dict[str, tuple[str, ...]] = {
    "clusters[].source": tuple(METRICS_SOURCES),
    "clusters[].provider": PROVIDERS,
    "carbon.provider": CARBON_PROVIDERS,
    "carbon.emission_factor_type": ("lifecycle", "direct"),
    "pricing.custom_convention": ("hourly", "monthly"),
    "sharing.split": ("weighted", "even"),
    "sharing.idle_split": ("weighted", "even"),
    "energy.pue_source": ("greenkube", "ccf"),
    "dagster.storage": ("sqlite", "postgres"),
}


class NumberRange(NamedTuple):
    """The allowed values of one numeric key: [lo, hi] (lo excluded when `lo_open`), whole numbers if `integer`."""

    lo: float
    hi: float
    integer: bool = False
    lo_open: bool = False
    what: str = ""

    def describe(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        lo, hi = _fmt(self.lo), _fmt(self.hi)
        span = f"above {lo} up to {hi}" if self.lo_open else f"in {lo}..{hi}"
        return f"{kind} {span}" + (f" ({self.what})" if self.what else "")

    def contains(self, value: float) -> bool:
        return (self.lo < value if self.lo_open else self.lo <= value) and value <= self.hi


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def max_threads() -> int:
    """DuckDB threads allowed on this machine: 4 per CPU (at least 4)."""
    return max(4, (os.cpu_count() or 1) * 4)


# Every int and float key of the settings has an entry here (a unit test walks the dataclasses to make sure).
NUMBER_RANGES: dict[str, NumberRange] = {
    "clusters[].pue": NumberRange(1.0, 3.0, what="power usage effectiveness"),
    "clusters[].demo.nodes": NumberRange(1, 1000, integer=True, what="demo nodes"),
    "clusters[].demo.pods_per_node": NumberRange(1, 500, integer=True, what="demo pods per node"),
    "clusters[].demo.containers_per_pod": NumberRange(0, 20, integer=True, what="0 = a realistic mix of 1-2"),
    "clusters[].demo.seed": NumberRange(0, 2**32 - 1, integer=True, what="random seed"),
    "clusters[].prometheus.timeout_s": NumberRange(0, 3600, lo_open=True, what="seconds"),
    "clusters[].prometheus.retries": NumberRange(0, 20, integer=True, what="retries per request"),
    "clusters[].prometheus.scrape_interval_s": NumberRange(1, 3600, what="seconds"),
    "clusters[].prometheus.max_concurrency": NumberRange(1, 64, integer=True, what="parallel queries"),
    "clusters[].kubernetes.page_size": NumberRange(1, 10_000, integer=True, what="objects per list call"),
    "carbon.carry_forward_hours": NumberRange(0, 720, integer=True, what="hours"),
    "carbon.timeout_s": NumberRange(0, 3600, lo_open=True, what="seconds"),
    "boavizta.timeout_s": NumberRange(0, 3600, lo_open=True, what="seconds"),
    "pricing.cpu_discount_pct": NumberRange(0, 100, what="a percentage"),
    "pricing.ram_discount_pct": NumberRange(0, 100, what="a percentage"),
    "pricing.cluster_management_fee_per_hour": NumberRange(0, 1e6, what="USD per cluster-hour"),
    "sharing.monthly_overhead_usd": NumberRange(0, 1e9, what="USD per month"),
    "energy.default_intensity_g_per_kwh": NumberRange(0, 3000, what="g CO2e per kWh"),
    "quality.min_hour_coverage": NumberRange(0, 1, lo_open=True, what="a share of the day's hours"),
    "quality.max_estimated_share": NumberRange(0, 1, what="a share of CO2e"),
    "schedule.late_days": NumberRange(0, 31, integer=True, what="days re-materialised after yesterday"),
    "warehouse.raw_retention_days": NumberRange(1, 3650, integer=True, what="days"),
    "warehouse.keep_run_folders": NumberRange(0, 100, integer=True, what="dbt run folders kept per dbt asset"),
    "warehouse.threads": NumberRange(1, max_threads(), integer=True,
                                     what=f"DuckDB threads: up to 4 per CPU, at least 4; this machine has "
                                          f"{os.cpu_count() or 1} CPUs"),
}

_URL_KEYS = ("clusters[].prometheus.url", "clusters[].kubernetes.host", "carbon.base_url", "boavizta.url")
_ENV_KEYS = ("clusters[].prometheus.bearer_token_env", "clusters[].prometheus.basic_auth_password_env",
             "carbon.token_env", "dagster.postgres_url_env")
_BOOL_HINT = "YAML reads unquoted yes/no/on/off/true/false as a boolean"


class _DuplicateKey(Exception):
    def __init__(self, path: str, first_line: int, line: int) -> None:
        super().__init__(path)
        self.path, self.first_line, self.line = path, first_line, line


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping (PyYAML silently keeps the last one) and
    remembers the source text of every scalar that is not a string (`raw_scalars`, by dotted key), so errors can
    quote what was written (`yes`, `.nan`, `0123`) rather than what YAML made of it."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.raw_scalars: dict[str, str] = {}

    def construct_document(self, node: yaml.Node) -> Any:
        self._walk(node, "", set())
        return super().construct_document(node)

    def _walk(self, node: yaml.Node, path: str, visited: set[int]) -> None:
        if id(node) in visited:  # anchors/aliases: each node once (also stops recursive structures)
            return
        visited.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if path and node.tag != "tag:yaml.org,2002:str":
                self.raw_scalars[path] = node.value
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._walk(item, f"{path}[{i}]", visited)
        elif isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`: later keys may override it
                    self._walk(value_node, path, visited)
                    continue
                if not isinstance(key_node, yaml.ScalarNode):
                    continue  # a complex key: the constructor reports it
                key = self.construct_object(key_node)
                child = f"{path}.{key}" if path else str(key)
                line = key_node.start_mark.line + 1
                if key in first_line:
                    raise _DuplicateKey(child, first_line[key], line)
                first_line[key] = line
                self._walk(value_node, child, visited)


class _Ctx(NamedTuple):
    origin: str
    raw: dict[str, str]

    def shown(self, key: str, value: Any) -> str:
        """The value as written in the file when YAML turned it into something else (yes -> True)."""
        raw = self.raw.get(key)
        return raw if raw is not None and not isinstance(value, str) else repr(value)

    def error(self, key: str, message: str) -> SettingsError:
        return SettingsError(f"{self.origin}: {key or 'top level'}: {message}")


def _generic(key: str) -> str:
    return re.sub(r"\[\d+\]", "[]", key)


def _build(cls: type, data: Any, where: str, ctx: _Ctx) -> Any:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ctx.error(where, f"expected a mapping, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls) if f.name != "source_file"}
    for name in data:
        if not isinstance(name, str):
            shown = "null" if name is None else repr(name)
            raise ctx.error(where, f"key {shown} is not text ({_BOOL_HINT} and digits as a number); "
                                   f"allowed keys: {', '.join(sorted(known))}")
        if name not in known:
            raise ctx.error(f"{where}.{name}" if where else name,
                            f"unknown key; allowed keys: {', '.join(sorted(known))}")
    for f in known.values():
        if f.name not in data and f.default is MISSING and f.default_factory is MISSING:
            raise ctx.error(f"{where}.{f.name}" if where else f.name, "required key is missing")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        key = f"{where}.{name}" if where else name
        kwargs[name] = _coerce(str(known[name].type), value, key, ctx)
        choices = _CHOICES.get(_generic(key))
        if choices and kwargs[name] is not None and kwargs[name] not in choices:
            raise ctx.error(key, f"{ctx.shown(key, value)} is not allowed; use one of: {', '.join(choices)}")
    return cls(**kwargs)


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
    "DagsterSettings": DagsterSettings,
}


def _coerce(t: str, value: Any, key: str, ctx: _Ctx) -> Any:
    if t in _NESTED:
        return _build(_NESTED[t], value, key, ctx)
    if t.startswith("tuple[ClusterSettings"):
        if not isinstance(value, list) or not value:
            raise ctx.error(key, "expected a non-empty list of clusters")
        clusters = tuple(_build(ClusterSettings, item, f"{key}[{i}]", ctx) for i, item in enumerate(value))
        _check_clusters(clusters, key, ctx)
        return clusters
    if t.startswith("tuple[str"):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ctx.error(key, f"expected a list of strings (quote values; {_BOOL_HINT})")
        for i, v in enumerate(value):
            _check_text(f"{key}[{i}]", v, ctx)
            if key.endswith("shared_labels") and ":" not in v:
                raise ctx.error(key, f"{v!r} must look like 'label:value' (e.g. app:prometheus)")
        return tuple(value)
    if t.startswith("dict"):
        return _headers(value, key, ctx)
    if t == "bool":
        if not isinstance(value, bool):
            raise ctx.error(key, f"expected true or false, got {ctx.shown(key, value)}")
        return value
    if t in ("int", "float", "float | None"):
        if value is None and t.endswith("None"):
            return None
        return _number(value, key, t == "int", ctx)
    if _generic(key) == "schedule.start_date" and isinstance(value, date) and not isinstance(value, datetime):
        value = value.isoformat()  # YAML reads an unquoted 2026-01-01 as a date
    # text
    if value is None:
        if t.endswith("None"):
            return None
        raise ctx.error(key, "null is not allowed; write a value or remove the key to use the default")
    if not isinstance(value, str):
        raise ctx.error(key, f"{ctx.shown(key, value)} is not allowed: it is read as {_read_as(value)}, not text "
                             f"({_BOOL_HINT} and digits as a number); quote the value, e.g. "
                             f"{key.rsplit('.', 1)[-1]}: \"{ctx.shown(key, value)}\"")
    _check_text(key, value, ctx)
    return value


def _read_as(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {type(value).__name__}"


def _number(value: Any, key: str, integer: bool, ctx: _Ctx) -> float | int:
    spec = NUMBER_RANGES[_generic(key)]
    allowed = spec.describe()
    shown = ctx.shown(key, value)
    if isinstance(value, bool):
        raise ctx.error(key, f"{shown} is not allowed ({_BOOL_HINT}); use {allowed}")
    if not isinstance(value, (int, float)):
        raise ctx.error(key, f"{shown} is not allowed (not a number); use {allowed}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ctx.error(key, f"{shown} is not allowed (not a finite number); use {allowed}")
    if integer and not isinstance(value, int):
        raise ctx.error(key, f"{shown} is not allowed (not a whole number); use {allowed}")
    if not spec.contains(value):
        raise ctx.error(key, f"{shown} is not allowed; use {allowed}")
    return int(value) if integer else float(value)


def _check_text(key: str, value: str, ctx: _Ctx) -> None:
    """Text-wide rule (no control characters), then the key's own rule."""
    bad = CONTROL_RE.search(value)
    if bad:
        raise ctx.error(key, f"{value!r} is not allowed; use text without control characters "
                             f"(found {bad.group()!r})")
    generic = _generic(key)
    problem: str | None = None
    if generic == "clusters[].name" and not CLUSTER_NAME_RE.fullmatch(value):
        problem = ("use 1-63 lowercase letters, digits, '-', '_' or '.', starting and ending with a letter or "
                   "digit (it becomes a partition path and a Dagster tag)")
    elif generic == "clusters[].carbon_zone" and not ZONE_RE.fullmatch(value):
        problem = "use an Electricity Maps zone code (e.g. FR, US-CAL-CISO)"
    elif generic == "energy.carbon_zone_label" and not LABEL_KEY_RE.fullmatch(value):
        problem = "use a Kubernetes label key (letters, digits, '.', '_', '-', '/'; e.g. kubeledger.io/carbon-zone)"
    elif generic == "clusters[].prometheus.cluster_label" and not PROM_LABEL_NAME_RE.fullmatch(value):
        problem = "use a Prometheus label name matching [a-zA-Z_][a-zA-Z0-9_]* (e.g. cluster)"
    elif generic in _ENV_KEYS and not ENV_NAME_RE.fullmatch(value):
        problem = "use the name of an environment variable: letters, digits and '_', not starting with a digit " \
                  "(e.g. PROM_TOKEN)"
    elif generic in _URL_KEYS and value:
        problem = _url_problem(value)
    elif generic == "warehouse.memory_limit":
        problem = _memory_problem(value)
    elif generic == "schedule.daily_cron":
        problem = _cron_problem(value)
    elif generic == "schedule.start_date":
        problem = _start_date_problem(value)
    if problem:
        raise ctx.error(key, f"{value!r} is not allowed; {problem}")


def _url_problem(value: str) -> str | None:
    allowed = "use an http:// or https:// URL with a host (e.g. http://prometheus:9090)"
    if any(c.isspace() for c in value):
        return allowed + "; spaces are not allowed"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return f"{allowed} ({exc})"
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return allowed
    return None


def _memory_problem(value: str) -> str | None:
    allowed = ("use a DuckDB size: a number and one of KB, MB, GB, TB, KiB, MiB, GiB, TiB (e.g. 4GB, 512MiB), "
               "at least 64MiB, or a percentage of the machine's memory in 1..100 (e.g. 50%)")
    m = MEMORY_RE.fullmatch(value)
    if not m:
        return allowed
    number, unit = float(m.group(1)), m.group(2).lower()
    if unit == "%":
        return None if 1 <= number <= 100 else allowed
    return None if number * MEMORY_UNITS[unit] >= MEMORY_MIN_BYTES else allowed


_VALID_CRONS = {ScheduleSettings.daily_cron}  # known good: spares importing Dagster (~0.7 s) for the default


def _cron_problem(value: str) -> str | None:
    allowed = ("use a 5-field cron expression in UTC (minute hour day-of-month month day-of-week, e.g. "
               f"'30 1 * * *') or one of {', '.join(CRON_ALIASES)}")
    if value in _VALID_CRONS:
        return None
    if value.startswith("@"):
        if value not in CRON_ALIASES:
            return allowed
    else:
        parts = [p for p in value.split(" ") if p]
        if len(parts) != 5 or not all(CRON_FIELD_RE.fullmatch(p) for p in parts):
            return allowed
        # fast path for a plain out-of-range number ('61 * * * *') without importing Dagster
        for part, (lo, hi) in zip(parts, CRON_RANGES, strict=True):
            if part.isdigit() and not lo <= int(part) <= hi:
                return allowed
    # the full rules (ranges, names, steps) are Dagster's, which runs the schedule
    from dagster._utils.schedules import is_valid_cron_string

    try:
        valid = is_valid_cron_string(value)
    except Exception:  # noqa: BLE001 - whatever the parser trips on is not a valid cron
        valid = False
    if not valid:
        return allowed
    _VALID_CRONS.add(value)
    return None


def _start_date_problem(value: str) -> str | None:
    allowed = "use a day as YYYY-MM-DD (UTC), today or earlier, e.g. 2026-01-01"
    try:
        day = date.fromisoformat(value)
    except ValueError:
        return allowed
    if len(value) != 10 or day.year < 2000:
        return allowed
    if day > datetime.now(UTC).date():
        return f"{allowed}; it is in the future"
    return None


def _headers(value: Any, key: str, ctx: _Ctx) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ctx.error(key, "expected a mapping of header name to value (e.g. {X-Scope-OrgID: tenant-a})")
    out: dict[str, str] = {}
    for name, v in value.items():
        if not isinstance(name, str) or not HEADER_NAME_RE.fullmatch(name):
            raise ctx.error(key, f"header name {name!r} is not allowed; use an HTTP token: letters, digits and "
                                 "!#$%&'*+-.^_`|~ (e.g. X-Scope-OrgID)")
        hkey = f"{key}.{name}"
        if not isinstance(v, str):
            raise ctx.error(hkey, f"{ctx.shown(hkey, v)} is not allowed: the header value is read as "
                                  f"{_read_as(v)}, not text; quote it ({_BOOL_HINT} and digits as a number)")
        bad = HEADER_VALUE_BAD_RE.search(v)
        if bad or v != v.strip():
            found = f"found {bad.group()!r}" if bad else "found leading or trailing spaces"
            raise ctx.error(hkey, f"{v!r} is not allowed; use a header value without CR, LF or other control "
                                  f"characters and without leading or trailing spaces ({found})")
        out[name] = v
    return out


def _check_clusters(clusters: tuple[ClusterSettings, ...], key: str, ctx: _Ctx) -> None:
    names = [c.name for c in clusters]
    for i, c in enumerate(clusters):
        if c.name in names[:i]:
            raise ctx.error(f"{key}[{i}].name", f"{c.name!r} is configured twice; names must be unique")
        if c.source == "prometheus" and not c.prometheus.url:
            raise ctx.error(f"{key}[{i}].prometheus.url",
                            "required when source is 'prometheus' (e.g. http://prometheus:9090)")


def file_problem(path: Path) -> str | None:
    """Why `path` cannot be read as a file ("not found", "is a directory"...), or None when it can."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return "not found"
    except PermissionError:
        return "cannot be read (permission denied)"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a FIFO, socket or device)"
    if not os.access(path, os.R_OK):
        return "cannot be read (permission denied)"
    return None


def _check_files(s: Settings, ctx: _Ctx) -> None:
    """Files the configuration names must exist now, not when a step first opens them."""
    base = Path(s.source_file).parent if s.source_file else Path.cwd()
    checks: list[tuple[str, Path, str]] = []
    for name, what in (("instance_sheet", "an instance price sheet (CSV)"),
                       ("node_csv", "a Kubecost CSV price file"),
                       ("custom_file", "an OpenCost default.json-shaped price file")):
        value = getattr(s.pricing, name)
        if value:  # resolved as the pricing step resolves it: relative to this file's folder
            checks.append((f"pricing.{name}", s.resolve(value), f"point it at {what}; relative paths are "
                                                                f"relative to {base}"))
    for i, c in enumerate(s.clusters):
        if c.source == "prometheus":
            for name in ("bearer_token_file", "client_cert_file", "client_key_file", "ca_file"):
                value = getattr(c.prometheus, name)
                if value:  # opened as given by the Prometheus client
                    checks.append((f"clusters[{i}].prometheus.{name}", Path(value),
                                   "point it at an existing file"))
        k = c.kubernetes
        if k.enabled and not k.in_cluster and k.kubeconfig:
            for part in k.kubeconfig.split(os.pathsep):
                if part:
                    checks.append((f"clusters[{i}].kubernetes.kubeconfig", Path(part).expanduser(),
                                   "point it at an existing kubeconfig file"))
    for key, path, fix in checks:
        problem = file_problem(path)
        if problem:
            raise ctx.error(key, f"{path} {problem}; {fix}")


def _yaml_error(origin: str, exc: yaml.YAMLError) -> SettingsError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = "; ".join(str(x) for x in (exc.context, exc.problem) if x)
        return SettingsError(f"{origin}: {where}not valid YAML: {' '.join(what.split())}")
    return SettingsError(f"{origin}: not valid YAML: {' '.join(str(exc).split())}")


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
    loader = StrictLoader(text)
    try:
        data = loader.get_single_data() or {}
    except _DuplicateKey as dup:
        raise SettingsError(f"{origin}: {dup.path}: key given twice (lines {dup.first_line} and {dup.line}); "
                            "YAML would silently keep only the last one: keep one") from None
    except yaml.YAMLError as exc:
        raise _yaml_error(origin, exc) from exc
    except ValueError as exc:  # YAML reads an unquoted 2026-13-01 as a date and fails to build it
        raise SettingsError(f"{origin}: not valid YAML: a value written as a date is not a real date ({exc}); "
                            "write a real day as YYYY-MM-DD") from exc
    finally:
        loader.dispose()
    ctx = _Ctx(origin, loader.raw_scalars)
    settings = _build(Settings, data, "", ctx)
    settings = Settings(**{f.name: getattr(settings, f.name) for f in fields(Settings) if f.name != "source_file"},
                        source_file=str(candidate.resolve()))
    _check_files(settings, ctx)
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
    settings = _build(Settings, data, "", _Ctx(origin, {}))
    return Settings(**{f.name: getattr(settings, f.name) for f in fields(Settings) if f.name != "source_file"},
                    source_file=source_file)
