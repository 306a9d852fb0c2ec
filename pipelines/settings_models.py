"""The settings dataclasses: every key of kubeledger.yaml with its default, and every numeric key's range beside it
(`ranged`). Frozen: a run never changes them.

Reading and validating the file is settings_validation.py's job, the allowed values settings_rules.py's (the ranges
read from here); import all of them through `pipelines.settings`. dbt_project.yml's vars are generated from these
defaults (`python -m pipelines.dagster_defs.dbt_project_vars`). Adding a setting: docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from pipelines.redaction import remember


class SettingsError(ValueError):
    """A configuration problem; the message names the file, the key and the fix."""


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


RANGE = "kubeledger.range"  # the metadata key of a numeric field's NumberRange


def ranged(default: Any, lo: float, hi: float, what: str, *, lo_open: bool = False) -> Any:
    """A numeric key: its default, the values it allows ([lo, hi], lo excluded when `lo_open`) and what it counts,
    which the error message shows ("use a number in 1..10 (<what>)"). Every int and float key is declared so;
    settings_rules.NUMBER_RANGES reads them all (whole numbers for an `int` field)."""
    return field(default=default, metadata={RANGE: NumberRange(lo, hi, lo_open=lo_open, what=what)})


def max_threads() -> int:
    """DuckDB threads allowed on this machine: 4 per CPU (at least 4)."""
    return max(4, (os.cpu_count() or 1) * 4)


@dataclass(frozen=True)
class PrometheusSettings:
    url: str = ""
    bearer_token_env: str | None = None
    bearer_token_file: str | None = None
    basic_auth_username: str | None = None
    basic_auth_password_env: str | None = None
    basic_auth_password_file: str | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    ca_file: str | None = None
    verify_tls: bool = True
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = ranged(120.0, 0, 3600, "seconds", lo_open=True)
    retries: int = ranged(4, 0, 20, "retries per request")
    cluster_label: str | None = None  # e.g. "cluster" on multi-cluster stores
    cluster_label_value: str | None = None
    scrape_interval_s: float = ranged(60.0, 1, 3600, "seconds")
    max_concurrency: int = ranged(4, 1, 64, "parallel queries")

    def bearer_token(self) -> str | None:
        # every secret read is remembered, so messages that echo it are redacted (pipelines/redaction.py)
        if self.bearer_token_env:
            value = os.environ.get(self.bearer_token_env)
            if value:
                return remember(value.strip())
        if self.bearer_token_file:
            return remember(Path(self.bearer_token_file).expanduser().read_text().strip())
        return None

    def basic_auth(self) -> tuple[str, str] | None:
        if not self.basic_auth_username:
            return None
        password = os.environ.get(self.basic_auth_password_env or "", "")
        if not password and self.basic_auth_password_file:
            password = Path(self.basic_auth_password_file).expanduser().read_text().strip()
        return (self.basic_auth_username, remember(password) or "")


@dataclass(frozen=True)
class KubernetesSettings:
    enabled: bool = False
    in_cluster: bool = False
    context: str | None = None
    kubeconfig: str | None = None
    host: str | None = None  # explicit API URL (tests, proxies)
    verify_tls: bool = True
    page_size: int = ranged(500, 1, 10_000, "objects per list call")
    timeout_s: float = ranged(120.0, 0, 3600, "seconds", lo_open=True)  # read timeout of one list call
    # hours older than this are not snapshotted (the API only knows "now"); raise it to let a run of yesterday
    # take the current snapshot for its late hours
    snapshot_reach_hours: float = ranged(2.0, 0, 72, "hours")


@dataclass(frozen=True)
class DemoSettings:
    nodes: int = ranged(12, 1, 1000, "demo nodes")
    pods_per_node: int = ranged(8, 1, 500, "demo pods per node")
    containers_per_pod: int = ranged(0, 0, 20, "0 = a realistic mix of 1-2")  # the generator's mix
    seed: int = ranged(42, 0, 2**32 - 1, "random seed")
    scenario: str = "default"  # default | recommendations (adds the recommendation showcase workloads; docs/METHOD.md)


@dataclass(frozen=True)
class ClusterSettings:
    name: str
    source: str = "demo"  # demo | prometheus
    provider: str | None = None  # default provider when providerID is missing
    region: str | None = None
    carbon_zone: str | None = None  # per-cluster override (on-prem)
    pue: float | None = ranged(None, 1.0, 3.0, "power usage effectiveness")
    # the cluster's cloud billing account, for FOCUS out when no bill line names it (issue 28)
    billing_account_id: str | None = None
    billing_account_name: str | None = None
    demo: DemoSettings = field(default_factory=DemoSettings)
    prometheus: PrometheusSettings = field(default_factory=PrometheusSettings)
    kubernetes: KubernetesSettings = field(default_factory=KubernetesSettings)


@dataclass(frozen=True)
class CarbonSettings:
    provider: str = "demo"  # demo | electricitymaps | wattnet | none
    base_url: str | None = None
    token_env: str = "ELECTRICITYMAPS_TOKEN"
    emission_factor_type: str = "lifecycle"
    timeout_s: float = ranged(30.0, 0, 3600, "seconds", lo_open=True)
    # a failing provider holds a run at most this long (pipelines/sources/faults.py)
    time_budget_s: float = ranged(120.0, 1, 3600, "seconds")
    verify_tls: bool = True

    def token(self) -> str | None:
        return remember(os.environ.get(self.token_env) or None)


@dataclass(frozen=True)
class BoaviztaSettings:
    url: str | None = None  # None = the bundled Boavizta 2.5.0 table
    timeout_s: float = ranged(30.0, 0, 3600, "seconds", lo_open=True)
    time_budget_s: float = ranged(120.0, 1, 3600, "seconds")  # a failing Boavizta API holds a run at most this long
    verify_tls: bool = True


@dataclass(frozen=True)
class PricingSettings:
    custom_file: str | None = None  # OpenCost default.json shape
    custom_convention: str = "hourly"  # hourly | monthly (OpenCost ConfigMap, divided by 730)
    instance_sheet: str | None = None  # provider,region,instance_type,hourly_usd[,spot_hourly_usd]
    node_csv: str | None = None  # Kubecost CSV pricing schema
    cpu_discount_pct: float = ranged(0.0, 0, 100, "a percentage")
    ram_discount_pct: float = ranged(0.0, 0, 100, "a percentage")
    cluster_management_fee_per_hour: float = ranged(0.0, 0, 1e6, "USD per cluster-hour")


@dataclass(frozen=True)
class BillingSettings:
    """The cloud bill (issue 28): FOCUS 1.0-1.2 CSV or Parquet files and AWS CUR 2.0 exports. Each is off while its
    path is unset; both may be set (different accounts' bills: the same charge in both would count twice)."""

    focus_path: str | None = None  # a folder (its *.csv, *.csv.gz, *.parquet files), one file or a glob
    cur2_path: str | None = None  # AWS Data Exports CUR 2.0 (Parquet, or CSV/CSV.gz): a folder, one file or a glob
    # each daily run re-reads this many days of charge periods before its own (late bills)
    reread_days: int = ranged(7, 0, 92, "days of bill re-read before each daily run's own")


@dataclass(frozen=True)
class SharingSettings:
    shared_namespaces: tuple[str, ...] = ()
    shared_labels: tuple[str, ...] = ()  # "key:value"
    monthly_overhead_usd: float = ranged(0.0, 0, 1e9, "USD per month")
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
    default_intensity_g_per_kwh: float = ranged(500.0, 0, 3000, "g CO2e per kWh")
    # PUE of a node with no cluster `pue` and no provider value (on-prem; METHOD B5): not a kubeledger.yaml key,
    # but the default's one home like the others (dbt var `default_pue`, generated into dbt_project.yml)
    default_pue: ClassVar[float] = 1.3


@dataclass(frozen=True)
class RecommendationSettings:
    """Parameters of the recommendation models (dbt var `recommendations`, every key; documented in docs/METHOD.md
    Part C), read in SQL with `rec_param('<name>')`. The defaults live here only: dbt_project.yml's vars are
    generated from them (`python -m pipelines.dagster_defs.dbt_project_vars`; tests/unit/test_dbt_defaults.py)."""

    window_days: int = ranged(7, 1, 35, "days of hourly history")  # the look-back of every recommendation
    # pruned after each build
    history_days: int = ranged(42, 1, 3650, "days of hourly history kept")
    # a long backfill computes recommendations for its newest days only
    max_days_per_build: int = ranged(7, 1, 3650, "newest days of a build")
    cpu_quantile: float = ranged(0.95, 0, 1, "quantile of hourly CPU peaks", lo_open=True)
    memory_quantile: float = ranged(1.0, 0, 1, "quantile of hourly memory peaks", lo_open=True)  # 1.0 = the maximum
    cpu_headroom: float = ranged(1.2, 1, 10, "factor over the CPU quantile")
    memory_headroom: float = ranged(1.3, 1, 10, "factor over the memory quantile")
    min_cpu_cores: float = ranged(0.01, 0, 1000, "cores")
    min_memory_mib: float = ranged(32.0, 0, 1e7, "MiB")
    # a request is recommended when it would move by more than this share
    min_change_ratio: float = ranged(0.2, 0, 10, "share of the current request")
    abandoned_max_cpu_cores: float = ranged(0.01, 0, 1000, "average cores per replica")
    abandoned_max_network_bytes_per_s: float = ranged(500.0, 0, 1e12, "bytes per second per replica")
    node_headroom: float = ranged(1.2, 1, 10, "factor over the p95 of requests")  # CPU and memory per node pool
    # carbon-shift recommendations below this are left out
    min_saving_co2e_g_per_month: float = ranged(10.0, 0, 1e12, "g CO2e per month")
    # the replicas kept must hold the hour's summed usage peaks x this
    off_peak_headroom: float = ranged(1.2, 1, 10, "factor over the quiet hours' usage peaks")
    # shortest daily block of quiet hours worth a scheduled scale-down
    off_peak_min_hours: int = ranged(4, 1, 23, "hours of the day")
    # a Deployment whose p95 / p50 of hourly CPU usage reaches this is an HPA candidate
    hpa_min_burst_ratio: float = ranged(2.0, 1, 1000, "p95 / p50 of hourly CPU usage")
    hpa_target_utilization: float = ranged(0.7, 0, 1, "share of the CPU request", lo_open=True)  # the HPA's target
    # PV rightsizing: the size kept holds the window's peak used bytes x this
    volume_headroom: float = ranged(1.3, 1, 10, "factor over the peak used bytes of a volume")


@dataclass(frozen=True)
class QualitySettings:
    min_hour_coverage: float = ranged(0.9, 0, 1, "a share of the day's hours", lo_open=True)
    max_estimated_share: float = ranged(0.5, 0, 1, "a share of CO2e")


@dataclass(frozen=True)
class ScheduleSettings:
    daily_cron: str = "30 1 * * *"  # UTC; leaves late samples time to land
    late_days: int = ranged(2, 0, 31, "days re-materialised after yesterday")
    # first daily partition (YYYY-MM-DD, UTC); unset: the earliest raw hour, else 35 days before the first run
    start_date: str | None = None


@dataclass(frozen=True)
class WarehouseSettings:
    path: str = "warehouse/kubeledger.duckdb"
    serving_path: str = "warehouse/serving.duckdb"
    parquet_path: str = "warehouse/parquet"
    raw_retention_days: int = ranged(35, 1, 3650, "days")
    # dbt target/log folders kept per dbt asset under <warehouse folder>/state/dbt/runs
    keep_run_folders: int = ranged(3, 0, 100, "dbt run folders kept per dbt asset")
    # HTML reports kept per kind (daily, weekly) under <warehouse folder>/reports
    keep_reports: int = ranged(30, 1, 3650, "HTML reports kept per kind")
    memory_limit: str = "4GB"
    threads: int = ranged(2, 1, max_threads(), f"DuckDB threads: up to 4 per CPU, at least 4; this machine has "
                                               f"{os.cpu_count() or 1} CPUs")


@dataclass(frozen=True)
class DagsterSettings:
    storage: str = "sqlite"  # sqlite (files under the warehouse folder) | postgres (production)
    postgres_url_env: str = "KUBELEDGER_DAGSTER_PG_URL"  # holds postgresql://user:password@host:5432/db


@dataclass(frozen=True)
class ApiSettings:
    """`kubeledger serve`'s opt-ins (docs/API.md "Recording decisions")."""

    decisions: bool = False  # POST /kubeledger/recommendations/{dismiss,undismiss,applied}: off, a 404 naming this
    decisions_token_env: str = "KUBELEDGER_API_TOKEN"  # holds the bearer token those routes require


@dataclass(frozen=True)
class SparkSettings:
    """The Spark session the spark engine starts (local mode by default; README "Outgrowing one machine")."""

    master: str = "local[2]"  # local[N] | local[*] | yarn | spark://host:port | k8s://https://host:port
    driver_memory: str = "2g"  # JVM size (spark.driver.memory), e.g. 2g, 1536m
    conf: dict[str, str] = field(default_factory=dict)  # extra spark.* settings (object-store credentials, ...)


@dataclass(frozen=True)
class LakeSettings:
    """The Parquet lake the spark engine reads (raw landing) and writes (marts)."""

    root: str | None = None  # a folder, or s3a://, gs://, abfss://, hdfs:// URI; unset: <warehouse folder>/lake
    # raw partitions older than this many days are removed from the lake; marts are kept
    keep_raw_days: int = ranged(35, 1, 3650, "days of raw partitions kept in the lake")
    spark: SparkSettings = field(default_factory=SparkSettings)


ENGINES = ("duckdb", "spark")


@dataclass(frozen=True)
class Settings:
    engine: str = "duckdb"  # duckdb (one file, the default) | spark (dbt on Spark over the Parquet lake)
    warehouse: WarehouseSettings = field(default_factory=WarehouseSettings)
    lake: LakeSettings = field(default_factory=LakeSettings)
    clusters: tuple[ClusterSettings, ...] = (ClusterSettings(name="demo"),)
    carbon: CarbonSettings = field(default_factory=CarbonSettings)
    boavizta: BoaviztaSettings = field(default_factory=BoaviztaSettings)
    pricing: PricingSettings = field(default_factory=PricingSettings)
    billing: BillingSettings = field(default_factory=BillingSettings)
    sharing: SharingSettings = field(default_factory=SharingSettings)
    energy: EnergySettings = field(default_factory=EnergySettings)
    quality: QualitySettings = field(default_factory=QualitySettings)
    recommendations: RecommendationSettings = field(default_factory=RecommendationSettings)
    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)
    dagster: DagsterSettings = field(default_factory=DagsterSettings)
    api: ApiSettings = field(default_factory=ApiSettings)
    source_file: str | None = None

    def cluster(self, name: str) -> ClusterSettings:
        for c in self.clusters:
            if c.name == name:
                return c
        allowed = ", ".join(c.name for c in self.clusters)
        raise SettingsError(f"cluster {name!r} is not configured; configured clusters: {allowed}")

    def resolve(self, path: str) -> Path:
        """Paths in the file are relative to the file's folder (or the working directory without a file); a
        leading `~` is the user's home, as in a shell."""
        p = Path(path).expanduser()
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

    @property
    def lake_root(self) -> str:
        """The lake's root: a URI as written (s3a://...), else an absolute folder (default <warehouse folder>/lake)."""
        root = self.lake.root
        if root and "://" in root:
            return root.rstrip("/")
        return str(self.resolve(root) if root else self.warehouse_path.parent / "lake")

    @property
    def spark_state_dir(self) -> Path:
        """Spark's metastore (Derby), warehouse and scratch folders: state, never in the code tree."""
        return self.warehouse_path.parent / "state" / "spark"
