"""Entry point: extract the raw Prometheus rows of some hours of one cluster (plan -> run -> assemble)."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import pandas as pd

from pipelines.settings import ClusterSettings
from pipelines.sources.base import COVERAGE_TABLE, ExtractResult, NoDataError
from pipelines.sources.prometheus.assemble_cluster import ClusterFrames
from pipelines.sources.prometheus.assemble_pods import PodFrames, follow_up_pods
from pipelines.sources.prometheus.client import PrometheusClient
from pipelines.sources.prometheus.frames import split_parts
from pipelines.sources.prometheus.query_plan import _plan, equal_matcher, hour_chunks, regex_matcher
from pipelines.sources.prometheus.runner import Point, _Runner
from pipelines.timeutil import normalise_hours, to_epoch

log = logging.getLogger(__name__)


def extract_prometheus_hours(
    cluster: ClusterSettings,
    hours: list[datetime],
    client: PrometheusClient | None = None,
) -> ExtractResult:
    """Extract raw metric rows for `hours` (UTC hour starts) of one cluster.

    Hours without any kube-state-metrics data are left out (no zeros are landed, nothing landed before is
    deleted); NoDataError when no hour has any: the caller then lands nothing.
    """
    settings = cluster.prometheus
    hours_n = normalise_hours(hours)
    asked = list(hours_n)
    if not hours_n:
        return ExtractResult(batches={}, partitions=[], metadata={"queries": 0})
    client = client or PrometheusClient(settings, cluster.name)
    t0 = time.monotonic()
    q0 = client.query_count
    w0 = len(client.warnings)
    base: list[str] = []
    if settings.cluster_label:  # multi-cluster stores: every selector gets the cluster matcher
        base = [equal_matcher(settings.cluster_label, settings.cluster_label_value or cluster.name)]
    scrape_s = float(settings.scrape_interval_s or 60.0)
    left_open = client.left_open_ranges(probe_at=to_epoch(hours_n[0]) + 3600)
    plan = _plan(base, left_open, scrape_s)
    runner = _Runner(client, cluster.name, base, "1h" if left_open else "59m59s")
    chunks = hour_chunks(hours_n)

    results: dict[str, list[Point]] = defaultdict(list)
    workers = max(1, min(settings.max_concurrency, len(plan)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prom") as pool:
        # every chunk's requests queued at once: a slow request of one chunk overlaps the next chunk's
        first = [(q, chunk, pool.submit(runner.run, q, chunk)) for chunk in chunks for q in plan if not q.follow_up]
        for q, _chunk, fut in first:
            results[q.name].extend(fut.result())
        follow = [(q, pool.submit(runner.run, q, chunk, extra=[regex_matcher("pod", pods)]))
                  for chunk, pods in zip(chunks, follow_up_pods(results, chunks), strict=True)
                  for q in plan if q.follow_up]
        for q, fut in follow:
            results[q.name].extend(fut.result())
    parts = split_parts(results)

    present = {h for h, _, _ in parts.get("pod_meta", {}).get("info", [])}
    present |= {h for h, _, _ in parts.get("nodes", {}).get("info", [])}
    missing = [h for h in hours_n if h not in present]
    if len(missing) == len(hours_n):
        raise NoDataError(
            f"cluster {cluster.name}: no kube-state-metrics data (kube_pod_info, kube_node_info) for hour(s) "
            f"{', '.join(h.isoformat() for h in missing)} at {settings.url}; refusing to land zeros"
        )
    if missing:  # hours without samples are not landed (no zeros, nothing deleted); the day's coverage says so
        log.info("cluster %s: no kube-state-metrics data for %s; those hours are not landed", cluster.name,
                 ", ".join(h.isoformat() for h in missing))
        hours_n = [h for h in hours_n if h in present]

    meta: dict[str, Any] = {}
    pod_frames = PodFrames(cluster.name, scrape_s, parts, meta)
    cluster_frames = ClusterFrames(cluster.name, scrape_s, parts)
    pods = pod_frames.pods()  # first: builds the (namespace, pod) -> uid map the other workload frames use
    volumes, pod_volumes = cluster_frames.volumes()
    batches = {
        "container_hours": pod_frames.containers(),
        "pod_hours": pods,
        "node_hours": cluster_frames.nodes(),
        "namespace_hours": pod_frames.namespaces(),
        "volume_hours": volumes,
        "pod_volume_hours": pod_volumes,
        "service_hours": cluster_frames.services(),
    }
    batches[COVERAGE_TABLE], absent = cluster_frames.coverage(hours_n)
    absent_warnings = cluster_frames.absent_warnings(absent)
    for warning in absent_warnings:
        log.warning(warning)
    gpus = cluster_frames.gpus()
    if len(gpus):
        batches["gpu_hours"] = gpus
    queries = client.query_count - q0
    elapsed = time.monotonic() - t0
    warnings = client.warnings[w0:]
    meta.update({
        "cluster": cluster.name,
        "hours": len(hours_n),
        "queries": queries,
        "queries_per_hour": queries / len(hours_n),
        "plan": [q.name for q in plan],
        "chunks": len(chunks),
        "size_splits": runner.splits,
        "query_seconds": {k: round(v, 3) for k, v in sorted(runner.seconds.items())},
        "left_open_ranges": left_open,
        "backend_version": client.backend_version,
        "warnings": warnings,
        "partial": any("partial" in (w.get("warning") or "").lower() for w in warnings),
        "seconds": round(elapsed, 3),
        "seconds_per_hour": round(elapsed / len(hours_n), 3),
        "rows": {t: len(f) for t, f in batches.items()},
        "absent_series": {m: [h.isoformat() for h in hs] for m, hs in sorted(absent.items())},
        "absent_warnings": absent_warnings,
    })
    answered = _answered_hours(batches, hours_n)
    if len(answered) < len(asked):
        # an hour without samples replaces nothing: a re-run against a Prometheus that has since lost hours
        # (retention, an outage) keeps what was landed then instead of deleting it; a counter's or a range's
        # rows that reach into such an hour are left out with it
        keep = list(answered)
        batches = {t: f[f["hour_ts"].isin(keep)] if "hour_ts" in f.columns else f for t, f in batches.items()}
        meta["hours_without_samples"] = [h.isoformat() for h in asked if h not in answered]
    return ExtractResult(batches=batches, partitions=[{"cluster": cluster.name, "hour_ts": h} for h in hours_n
                                                      if h in answered], metadata=meta)


def _answered_hours(batches: dict[str, Any], hours: list[datetime]) -> set[datetime]:
    """The hours with at least one node sample (all of them when there is no node table to tell)."""
    nodes = batches.get("node_hours")
    if nodes is None or "hour_ts" not in nodes.columns:
        return set(hours)
    present = {pd.Timestamp(t).to_pydatetime() for t in nodes["hour_ts"].unique()}
    return {h for h in hours if h in present}
