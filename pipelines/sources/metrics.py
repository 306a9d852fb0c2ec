"""The metrics step: each cluster's hourly metrics tables from its source (`clusters[].source`) into raw.*.

Sources are looked up in one registry, `METRICS_SOURCES` of pipelines/registry.py (name -> extractor of one
cluster's hours), which the settings validation reads for the allowed `clusters[].source` values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.registry import METRICS_SOURCES, resolve
from pipelines.timeutil import chunks, utc_now
from pipelines.warehouse.source_health import Problem

from . import base

if TYPE_CHECKING:
    from pipelines.settings import ClusterSettings, Settings

# Metrics are landed in chunks of hours so memory stays bounded at any cluster size. A small demo cluster (the
# default's day is ~7,000 rows) lands up to a day per chunk: a quarter of the landing calls of a backfill.
LAND_CHUNK_HOURS = 6
DEMO_CHUNK_POD_HOURS = 100_000


def land_chunk_hours(cluster: ClusterSettings) -> int:
    if cluster.source != "demo":
        return LAND_CHUNK_HOURS
    pods = max(cluster.demo.nodes * cluster.demo.pods_per_node, 1)
    return max(LAND_CHUNK_HOURS, min(24, DEMO_CHUNK_POD_HOURS // pods))


def metrics_extractor(source: str) -> Callable[[ClusterSettings, list[datetime]], base.ExtractResult]:
    """The extractor of one cluster's hours for `source`, imported on use (a demo run never imports
    the Prometheus client)."""
    return resolve(METRICS_SOURCES[source])


def extract_metrics(settings: Settings, con: duckdb.DuckDBPyConnection, hours: list[datetime],
                    clusters: Iterable[ClusterSettings] | None = None) -> dict[str, Any]:
    """Land the metrics tables of every cluster for these hours. A failing hour-chunk writes nothing."""
    summary: dict[str, Any] = {"rows": 0, "queries": 0, "warnings": [], "clusters": {}, "tables": {},
                               "absent_series": {}}
    for cluster in clusters or settings.clusters:
        extract = metrics_extractor(cluster.source)
        rows = 0
        empty: base.NoDataError | None = None
        landed_any = False
        for chunk in chunks(hours, land_chunk_hours(cluster)):
            try:
                result = extract(cluster, chunk)
            except base.SourceAuthError as exc:  # the line names the cluster's own key: clusters[<index>]...
                raise exc.for_cluster(settings.clusters.index(cluster)) from None
            except base.NoDataError as exc:  # a chunk of hours without samples: the others may still have some
                empty = empty or exc
                summary["warnings"].append(f"cluster {cluster.name}: {exc}")
                continue
            landed_any = True
            written = base.land(con, result)
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
        if empty is not None and not landed_any:
            raise empty  # not one hour of the run had samples: a whole outage fails the run
        summary["clusters"][cluster.name] = rows
        summary["rows"] += rows
    return summary


def metrics_problems(con: duckdb.DuckDBPyConnection, clusters: list[str], days: list[date],
                     now: datetime | None = None) -> dict[date, list[Problem]]:
    """Per finished day of the run: a 'partial' Problem for each cluster with hours but not all 24 in
    raw.node_hours (a day still running says nothing). The models charge only the hours with samples; the hour
    coverage in fct_cluster_daily gates publishing (quality.min_hour_coverage; docs/METHOD.md A18.1)."""
    today = utc_now(now).date()
    done = [d for d in days if d < today]
    if not done or not clusters:
        return {}
    landed = dict(((c, d), n) for c, d, n in con.execute(
        "select cluster, cast(hour_ts as date), count(distinct hour_ts) from raw.node_hours "
        "where cluster in (select unnest(?)) and hour_ts >= ? and hour_ts < ? group by 1, 2",
        [clusters, min(done), max(done) + timedelta(days=1)]).fetchall())
    out: dict[date, list[Problem]] = {}
    for day in done:
        out[day] = []
        for cluster in clusters:
            n = landed.get((cluster, day), 0)
            if n < 24:
                out[day].append(Problem(
                    "metrics", "partial",
                    f"{24 - n} of 24 hours have no samples; the day's hour coverage is {n / 24:.0%} and nothing "
                    "is allocated or charged for those hours",
                    "check Prometheus' retention and scrape health for those hours, then re-run the day "
                    f"(kubeledger materialize --date {day})", [], cluster=cluster))
    return out
