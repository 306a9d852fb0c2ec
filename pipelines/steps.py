"""The pipeline's steps as plain functions: Dagster assets and the CLI call these, so both take one code path.

Python extracts, loads and orchestrates; every formula lives in the dbt models.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import duckdb
import pandas as pd

from pipelines.settings import ClusterSettings, Settings
from pipelines.sources.base import ExtractResult, SourceError
from pipelines.warehouse.connection import connect, ensure_raw_schema
from pipelines.warehouse.landing import replace_partitions

log = logging.getLogger(__name__)

# Metrics are landed in chunks of hours so memory stays bounded at any cluster size.
LAND_CHUNK_HOURS = 6


def hours_between(start: datetime, end: datetime) -> list[datetime]:
    """Hour starts in [start, end), naive UTC."""
    start = _naive_utc(start).replace(minute=0, second=0, microsecond=0)
    end = _naive_utc(end)
    out: list[datetime] = []
    h = start
    while h < end:
        out.append(h)
        h += timedelta(hours=1)
    return out


def day_window(day: date) -> tuple[datetime, datetime]:
    start = datetime(day.year, day.month, day.day)
    return start, start + timedelta(days=1)


def _naive_utc(ts: datetime) -> datetime:
    if ts.tzinfo is not None:
        ts = ts.astimezone(UTC).replace(tzinfo=None)
    return ts


def open_warehouse(settings: Settings, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    con = connect(settings.warehouse_path, read_only=read_only, memory_limit=settings.warehouse.memory_limit,
                  threads=settings.warehouse.threads)
    if not read_only:
        ensure_raw_schema(con)
    return con


def land(con: duckdb.DuckDBPyConnection, result: ExtractResult) -> dict[str, int]:
    if not result.partitions:
        return {}
    return replace_partitions(con, result.batches, result.partitions)


def _chunks(hours: list[datetime], size: int) -> Iterable[list[datetime]]:
    for i in range(0, len(hours), size):
        yield hours[i:i + size]


def extract_metrics(settings: Settings, con: duckdb.DuckDBPyConnection, hours: list[datetime],
                    clusters: Iterable[ClusterSettings] | None = None) -> dict[str, Any]:
    """Land the metrics tables of every cluster for these hours. A failing hour-chunk writes nothing."""
    from pipelines.sources.demo import extract_demo_hours

    summary: dict[str, Any] = {"rows": 0, "queries": 0, "warnings": [], "clusters": {}, "tables": {},
                               "absent_series": {}}
    for cluster in clusters or settings.clusters:
        rows = 0
        for chunk in _chunks(hours, LAND_CHUNK_HOURS):
            if cluster.source == "demo":
                result = extract_demo_hours(cluster, chunk)
            else:
                from pipelines.sources.prometheus import extract_prometheus_hours

                result = extract_prometheus_hours(cluster, chunk)
            written = land(con, result)
            rows += sum(written.values())
            for table, n in written.items():
                summary["tables"][table] = summary["tables"].get(table, 0) + n
            summary["queries"] += int(result.metadata.get("queries", 0) or 0)
            summary["warnings"].extend(result.metadata.get("warnings", []) or [])
            # optional series checked and absent, per cluster: {metric: [hour, ...]}; warned where a feature needed it
            summary["warnings"].extend({"cluster": cluster.name, "warning": w}
                                       for w in result.metadata.get("absent_warnings", []) or [])
            for metric, absent_hours in (result.metadata.get("absent_series") or {}).items():
                summary["absent_series"].setdefault(cluster.name, {}).setdefault(metric, []).extend(absent_hours)
        summary["clusters"][cluster.name] = rows
        summary["rows"] += rows
    return summary


def extract_kubernetes(settings: Settings, con: duckdb.DuckDBPyConnection, hours: list[datetime],
                       now: datetime | None = None) -> dict[str, Any]:
    """Snapshot the Kubernetes API for clusters that enable it. The API only knows 'now', so only the current
    and previous hour are snapshotted; older hours keep what was landed then (metrics carry the rest)."""
    from pipelines.sources.kubernetes import extract_kubernetes_snapshot

    now = _naive_utc(now or datetime.now(UTC))
    summary: dict[str, Any] = {"rows": 0, "skipped_hours": 0, "warnings": []}
    for cluster in settings.clusters:
        if not cluster.kubernetes.enabled:
            continue
        for hour in hours:
            if now - hour > timedelta(hours=2):
                summary["skipped_hours"] += 1
                continue
            result = extract_kubernetes_snapshot(cluster, hour)
            summary["rows"] += sum(land(con, result).values())
            summary["warnings"].extend(result.metadata.get("warnings", []) or [])
    return summary


def carbon_zones(settings: Settings, con: duckdb.DuckDBPyConnection, hours: list[datetime]) -> list[str]:
    """Electricity Maps zones of the nodes seen in these hours: label override, cluster override, region map."""
    from pipelines.sources.demo import demo_zones

    zones: set[str] = set()
    for cluster in settings.clusters:
        if cluster.carbon_zone:
            zones.add(cluster.carbon_zone)
        if cluster.source == "demo":
            zones.update(demo_zones(cluster))
    if not hours:
        return sorted(zones)
    label = settings.energy.carbon_zone_label
    rows = con.execute(
        """
        select distinct json_extract_string(labels, ?) as label_zone,
               lower(coalesce(region, json_extract_string(labels, '$."topology.kubernetes.io/region"'))) as region,
               case when provider_id like 'aws://%' then 'aws' when provider_id like 'gce://%' then 'gcp'
                    when provider_id like 'azure://%' then 'azure' end as provider
        from raw.node_hours where hour_ts >= ? and hour_ts < ?
        """,
        ['$."' + label.replace('"', "") + '"', min(hours), max(hours) + timedelta(hours=1)],
    ).fetchall()
    region_map = _region_zone_map()
    for label_zone, region, provider in rows:
        if label_zone:
            zones.add(label_zone)
        elif provider and region and (provider, region) in region_map:
            zones.add(region_map[(provider, region)])
    return sorted(z for z in zones if z)


def _region_zone_map() -> dict[tuple[str, str], str]:
    from pipelines import SEEDS_DIR

    frame = pd.read_csv(SEEDS_DIR / "region_carbon_zones.csv", dtype=str).fillna("")
    return {(r.provider.lower(), r.region.lower()): r.electricitymaps_zone
            for r in frame.itertuples() if r.electricitymaps_zone}


def extract_carbon(settings: Settings, con: duckdb.DuckDBPyConnection, hours: list[datetime]) -> dict[str, Any]:
    """Land hourly intensity for the zones in use. Outages are recorded, not raised: the models fall back."""
    zones = carbon_zones(settings, con, hours)
    provider = settings.carbon.provider
    if provider == "none" or not zones or not hours:
        return {"rows": 0, "zones": zones, "provider": provider}
    if provider == "demo":
        from pipelines.sources.demo import demo_carbon_intensity

        result = demo_carbon_intensity(zones, hours)
    else:
        from pipelines.sources.carbon import extract_carbon_intensity

        result = extract_carbon_intensity(settings.carbon, zones, hours, con=con)
    written = land(con, result)
    return {"rows": sum(written.values()), "zones": zones, "provider": provider,
            "failures": result.metadata.get("failures", [])}


def boavizta_key(provider: str, instance_type: str) -> str:
    """Boavizta's instance name: Azure drops the Standard_/Basic_ prefix (same rule as the dbt macro)."""
    t = instance_type.strip().lower()
    if provider == "azure":
        for prefix in ("standard_", "basic_"):
            if t.startswith(prefix):
                t = t[len(prefix):]
    return t


def extract_boavizta_impacts(settings: Settings, con: duckdb.DuckDBPyConnection,
                             hours: list[datetime] | None = None) -> dict[str, Any]:
    """Fetch embodied impacts once per (provider, instance type) seen; cached in raw.boavizta_impacts."""
    from pipelines.sources.boavizta import extract_boavizta

    params: list[Any] = []
    where = ""
    if hours:
        where = "where hour_ts >= ? and hour_ts < ?"
        params = [min(hours), max(hours) + timedelta(hours=1)]
    rows = con.execute(
        f"""
        select distinct
            case when provider_id like 'aws://%' then 'aws' when provider_id like 'gce://%' then 'gcp'
                 when provider_id like 'azure://%' then 'azure' end as provider,
            coalesce(instance_type, json_extract_string(labels, '$."node.kubernetes.io/instance-type"')) as itype
        from raw.node_hours {where}
        """,  # noqa: S608 - the only interpolation is a fixed clause
        params,
    ).fetchall()
    keys = sorted({(p, boavizta_key(p, t)) for p, t in rows if p and t})
    if not keys:
        return {"rows": 0, "keys": 0}
    result = extract_boavizta(settings.boavizta, keys, con=con)
    written = land(con, result)
    return {"rows": sum(written.values()), "keys": len(keys), "failures": result.metadata.get("failures", [])}


def load_pricing(settings: Settings, con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Validate and land the configured price files; a bad file raises PricingFileError naming file, line, field."""
    from pipelines.sources import pricing

    summary: dict[str, Any] = {"files": []}
    p = settings.pricing
    loaded: list[tuple[str, ExtractResult]] = []
    if p.instance_sheet:
        loaded.append(("price_sheet", pricing.load_price_sheet(settings.resolve(p.instance_sheet))))
    if p.node_csv:
        loaded.append(("price_node_csv", pricing.load_node_price_csv(settings.resolve(p.node_csv))))
    if p.custom_file:
        loaded.append(("price_custom", pricing.load_custom_prices(settings.resolve(p.custom_file),
                                                                   p.custom_convention)))
    con.execute("begin transaction")
    try:
        # files no longer configured are removed, so the warehouse reflects the current configuration
        for table in ("price_sheet", "price_node_csv", "price_custom"):
            keep = [str(r.partitions[0]["source_file"]) for t, r in loaded if t == table and r.partitions]
            if keep:
                con.execute(f"delete from raw.{table} where source_file not in (select unnest(?))", [keep])  # noqa: S608
            else:
                con.execute(f"delete from raw.{table}")  # noqa: S608 - table names are fixed above
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    for table, result in loaded:
        written = land(con, result)
        summary["files"].append({"table": table, "rows": written.get(table, 0),
                                 "file": str(result.partitions[0]["source_file"]) if result.partitions else None})
    return summary


def dbt_vars(settings: Settings, start: datetime | None, end: datetime | None,
             cluster: str | None = None) -> dict[str, Any]:
    """The dbt vars for a build of [start, end): the window plus the configured policy."""
    sharing = settings.sharing
    out: dict[str, Any] = {
        "min_ts": start.strftime("%Y-%m-%d %H:%M:%S") if start else None,
        "max_ts": end.strftime("%Y-%m-%d %H:%M:%S") if end else None,
        "cluster": cluster,
        "clusters": {
            c.name: {"provider": c.provider, "region": c.region, "carbon_zone": c.carbon_zone, "pue": c.pue}
            for c in settings.clusters
        },
        "carbon_provider": settings.carbon.provider,
        "carbon_zone_label": settings.energy.carbon_zone_label,
        "default_intensity_g_per_kwh": settings.energy.default_intensity_g_per_kwh,
        "pue_source": settings.energy.pue_source,
        "energy_memory": settings.energy.memory,
        "energy_gpu": settings.energy.gpu,
        "energy_storage": settings.energy.storage,
        "cpu_discount_pct": settings.pricing.cpu_discount_pct,
        "ram_discount_pct": settings.pricing.ram_discount_pct,
        "cluster_management_fee_per_hour": settings.pricing.cluster_management_fee_per_hour,
        "sharing": {
            "share_idle": sharing.share_idle,
            "idle_split": sharing.idle_split,
            "idle_by_node": sharing.idle_by_node,
            "shared_namespaces": list(sharing.shared_namespaces),
            "shared_labels": list(sharing.shared_labels),
            "monthly_overhead_usd": sharing.monthly_overhead_usd,
            "split": sharing.split,
        },
        "recommendations": dataclasses.asdict(settings.recommendations),
    }
    return out


def warehouse_env(settings: Settings) -> dict[str, str]:
    """Environment for dbt: the profile reads the warehouse path from it."""
    return {
        "KUBELEDGER_WAREHOUSE": str(settings.warehouse_path),
        "KUBELEDGER_DUCKDB_MEMORY": settings.warehouse.memory_limit,
        "DO_NOT_TRACK": "1",
    }


__all__ = [
    "SourceError", "boavizta_key", "carbon_zones", "day_window", "dbt_vars", "extract_boavizta_impacts",
    "extract_carbon", "extract_kubernetes", "extract_metrics", "hours_between", "land", "load_pricing",
    "open_warehouse", "warehouse_env",
]


HOURLY_RAW_TABLES = (
    "container_hours", "pod_hours", "node_hours", "namespace_hours", "volume_hours", "pod_volume_hours",
    "service_hours", "gpu_hours", "metric_coverage_hours", "k8s_objects", "carbon_intensity_hours",
)


def prune_raw(con: duckdb.DuckDBPyConnection, retention_days: int, newest: datetime) -> dict[str, int]:
    """Drop raw hourly rows older than `retention_days` before `newest` (marts are kept indefinitely).

    One transaction: either every table is pruned or none is."""
    cutoff = _naive_utc(newest) - timedelta(days=retention_days)
    deleted: dict[str, int] = {}
    con.execute("begin transaction")
    try:
        for table in HOURLY_RAW_TABLES:
            # table names come from the fixed tuple above
            n = con.execute(f"select count(*) from raw.{table} where hour_ts < ?", [cutoff]).fetchone()[0]  # noqa: S608
            if n:
                con.execute(f"delete from raw.{table} where hour_ts < ?", [cutoff])  # noqa: S608
            deleted[table] = n
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return deleted
