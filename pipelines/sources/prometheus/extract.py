"""Entry point: extract the raw Prometheus rows of some hours of one cluster (plan -> run -> assemble)."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd

from pipelines.settings import ClusterSettings
from pipelines.sources.base import COVERAGE_TABLE, ExtractResult, NoDataError
from pipelines.sources.prometheus.assemble_cluster import ClusterFrames
from pipelines.sources.prometheus.assemble_pods import PodFrames, follow_up_pods
from pipelines.sources.prometheus.client import PrometheusClient
from pipelines.sources.prometheus.frames import Parts, split_parts
from pipelines.sources.prometheus.query_plan import _plan, _Query, equal_matcher, hour_chunks, regex_matcher
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
    hours_n = normalise_hours(hours)
    asked = list(hours_n)
    if not hours_n:
        return ExtractResult(batches={}, partitions=[], metadata={"queries": 0})
    run = _Extraction.start(cluster, client or PrometheusClient(cluster.prometheus, cluster.name), hours_n)
    parts = split_parts(run.results())
    hours_n = _hours_with_data(cluster, parts, hours_n)
    meta: dict[str, Any] = {}  # the pod frames count unmatched series into it first
    batches, absent, absent_warnings = _frames(cluster.name, run.scrape_s, parts, hours_n, meta)
    meta.update(run.metadata(hours_n, batches, absent, absent_warnings))
    return _answered_result(cluster.name, batches, meta, asked, hours_n)


@dataclass
class _Extraction:
    """One extraction's requests (the plan, its runner, the chunks) and the client's counters at its start."""
    cluster: ClusterSettings
    client: PrometheusClient
    plan: list[_Query]
    runner: _Runner
    chunks: list[list[datetime]]
    left_open: bool
    scrape_s: float
    t0: float   # monotonic start, query count and warning count: the run's share of the client's totals
    q0: int
    w0: int

    @classmethod
    def start(cls, cluster: ClusterSettings, client: PrometheusClient, hours: list[datetime]) -> _Extraction:
        settings = cluster.prometheus
        t0, q0, w0 = time.monotonic(), client.query_count, len(client.warnings)
        base: list[str] = []
        if settings.cluster_label:  # multi-cluster stores: every selector gets the cluster matcher
            base = [equal_matcher(settings.cluster_label, settings.cluster_label_value or cluster.name)]
        scrape_s = float(settings.scrape_interval_s or 60.0)
        left_open = client.left_open_ranges(probe_at=to_epoch(hours[0]) + 3600)
        return cls(cluster, client, _plan(base, left_open, scrape_s),
                   _Runner(client, cluster.name, base, "1h" if left_open else "59m59s"), hour_chunks(hours),
                   left_open, scrape_s, t0, q0, w0)

    def results(self) -> dict[str, list[Point]]:
        """Every planned query over every chunk, then the follow-ups for the pods the first answers single out."""
        results: dict[str, list[Point]] = defaultdict(list)
        plan, runner, chunks = self.plan, self.runner, self.chunks
        workers = max(1, min(self.cluster.prometheus.max_concurrency, len(plan)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prom") as pool:
            # every chunk's requests queued at once: a slow request of one chunk overlaps the next chunk's
            first = [(q, chunk, pool.submit(runner.run, q, chunk)) for chunk in chunks for q in plan
                     if not q.follow_up]
            for q, _chunk, fut in first:
                results[q.name].extend(fut.result())
            follow = [(q, pool.submit(runner.run, q, chunk, extra=[regex_matcher("pod", pods)]))
                      for chunk, pods in zip(chunks, follow_up_pods(results, chunks), strict=True)
                      for q in plan if q.follow_up]
            for q, fut in follow:
                results[q.name].extend(fut.result())
        return results

    def metadata(self, hours: list[datetime], batches: dict[str, pd.DataFrame],
                 absent: dict[str, list[datetime]], absent_warnings: list[str]) -> dict[str, Any]:
        """The run's metadata: requests, timings, the backend, warnings, rows and absent series."""
        client, runner = self.client, self.runner
        queries = client.query_count - self.q0
        elapsed = time.monotonic() - self.t0
        warnings = client.warnings[self.w0:]
        return {
            "cluster": self.cluster.name,
            "hours": len(hours),
            "queries": queries,
            "queries_per_hour": queries / len(hours),
            "plan": [q.name for q in self.plan],
            "chunks": len(self.chunks),
            "size_splits": runner.splits,
            "query_seconds": {k: round(v, 3) for k, v in sorted(runner.seconds.items())},
            "left_open_ranges": self.left_open,
            "backend_version": client.backend_version,
            "warnings": warnings,
            "partial": any("partial" in (w.get("warning") or "").lower() for w in warnings),
            "seconds": round(elapsed, 3),
            "seconds_per_hour": round(elapsed / len(hours), 3),
            "rows": {t: len(f) for t, f in batches.items()},
            "absent_series": {m: [h.isoformat() for h in hs] for m, hs in sorted(absent.items())},
            "absent_warnings": absent_warnings,
        }


def _hours_with_data(cluster: ClusterSettings, parts: Parts, hours: list[datetime]) -> list[datetime]:
    """The hours with kube-state-metrics data (pod or node info); NoDataError when none has any."""
    present = {h for h, _, _ in parts.get("pod_meta", {}).get("info", [])}
    present |= {h for h, _, _ in parts.get("nodes", {}).get("info", [])}
    missing = [h for h in hours if h not in present]
    if len(missing) == len(hours):
        raise NoDataError(
            f"cluster {cluster.name}: no kube-state-metrics data (kube_pod_info, kube_node_info) for hour(s) "
            f"{', '.join(h.isoformat() for h in missing)} at {cluster.prometheus.url}; refusing to land zeros"
        )
    if missing:  # hours without samples are not landed (no zeros, nothing deleted); the day's coverage says so
        log.info("cluster %s: no kube-state-metrics data for %s; those hours are not landed", cluster.name,
                 ", ".join(h.isoformat() for h in missing))
        return [h for h in hours if h in present]
    return hours


def _frames(cluster: str, scrape_s: float, parts: Parts, hours: list[datetime], meta: dict[str, Any]
            ) -> tuple[dict[str, pd.DataFrame], dict[str, list[datetime]], list[str]]:
    """The raw tables of the hours, the absent hours per optional series family and the warnings about them."""
    pod_frames = PodFrames(cluster, scrape_s, parts, meta)
    cluster_frames = ClusterFrames(cluster, scrape_s, parts)
    pods = pod_frames.pods()  # first: builds the (namespace, pod) -> uid map the other workload frames use
    volumes, pod_volumes = cluster_frames.volumes()
    batches = {
        "container_hours": pod_frames.containers(),
        "pod_hours": pods,
        "node_hours": cluster_frames.nodes(),
        "namespace_hours": pod_frames.namespaces(),
        "volume_hours": volumes,
        "pod_volume_hours": pod_volumes,
        "volume_stats_hours": cluster_frames.volume_stats(),
        "service_hours": cluster_frames.services(),
    }
    batches[COVERAGE_TABLE], absent = cluster_frames.coverage(hours)
    absent_warnings = cluster_frames.absent_warnings(absent)
    for warning in absent_warnings:
        log.warning(warning)
    gpus = cluster_frames.gpus()
    if len(gpus):
        batches["gpu_hours"] = gpus
    return batches, absent, absent_warnings


def _answered_result(cluster: str, batches: dict[str, pd.DataFrame], meta: dict[str, Any],
                     asked: list[datetime], hours: list[datetime]) -> ExtractResult:
    """The result, keeping the hours with node samples only."""
    answered = _answered_hours(batches, hours)
    if len(answered) < len(asked):
        # an hour without samples replaces nothing: a re-run against a Prometheus that has since lost hours
        # (retention, an outage) keeps what was landed then instead of deleting it; a counter's or a range's
        # rows that reach into such an hour are left out with it
        keep = list(answered)
        batches = {t: f[f["hour_ts"].isin(keep)] if "hour_ts" in f.columns else f for t, f in batches.items()}
        meta["hours_without_samples"] = [h.isoformat() for h in asked if h not in answered]
    return ExtractResult(batches=batches, partitions=[{"cluster": cluster, "hour_ts": h} for h in hours
                                                      if h in answered], metadata=meta)


def _answered_hours(batches: dict[str, Any], hours: list[datetime]) -> set[datetime]:
    """The hours with at least one node sample (all of them when there is no node table to tell)."""
    nodes = batches.get("node_hours")
    if nodes is None or "hour_ts" not in nodes.columns:
        return set(hours)
    present = {pd.Timestamp(t).to_pydatetime() for t in nodes["hour_ts"].unique()}
    return {h for h in hours if h in present}
