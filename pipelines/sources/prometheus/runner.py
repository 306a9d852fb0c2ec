"""Running one planned query over a chunk of hours, and what it yields: points (hour start, labels, value).

A query the server refuses for its size is retried per namespace batch (bisected) or per single hour, so a large
cluster costs more requests only when the backend's limits demand it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from datetime import datetime

from pipelines.sources.base import SourceError
from pipelines.sources.prometheus.client import PrometheusClient, QueryTooLargeError
from pipelines.sources.prometheus.query_plan import _Query, regex_matcher
from pipelines.timeutil import from_epoch, to_epoch

log = logging.getLogger(__name__)

# one result point: (hour start, labels, value)
Point = tuple[datetime, dict[str, str], float | None]


class _Runner:
    """Runs one planned query over a chunk of hours; shards by namespace (or by hour) when refused for size."""

    def __init__(self, client: PrometheusClient, cluster: str, base: list[str], window: str) -> None:
        self.client = client
        self.cluster = cluster
        self.base = base
        self.window = window
        self.splits = 0
        self.seconds: dict[str, float] = defaultdict(float)  # server + transfer + decode time per planned query
        self._lock = threading.Lock()
        self._ns_cache: dict[tuple[datetime, datetime], list[str]] = {}

    @staticmethod
    def _span(chunk: list[datetime], shift: int = 1) -> tuple[int, int]:
        # points at hour end - 1 s: with W = 59m59s (closed) or 1h (left-open) the window is exactly [h, h+1)
        return to_epoch(chunk[0]) + 3600 - shift, to_epoch(chunk[-1]) + 3600 - shift

    def run(self, q: _Query, chunk: list[datetime], ns: list[str] | None = None,
            extra: list[str] | None = None) -> list[Point]:
        """`extra`: more matchers for every selector (a follow-up query's pod=~ list)."""
        shift = 0 if q.at_hour_end else 1
        start, end = self._span(chunk, shift)
        m = [*(extra or []), *([regex_matcher("namespace", ns)] if ns else [])]
        t0 = time.monotonic()
        try:
            res = self.client.query_range(q.build(m), start, end, 3600)
        except QueryTooLargeError:
            self.splits += 1
            if q.namespaced and ns is None:
                ns = self._namespaces(chunk)
            if q.namespaced and ns and len(ns) > 1:
                half = len(ns) // 2
                log.info("cluster %s: %s too large; splitting %d namespaces", self.cluster, q.name, len(ns))
                return self.run(q, chunk, ns[:half], extra) + self.run(q, chunk, ns[half:], extra)
            if len(chunk) > 1:
                log.info("cluster %s: %s too large; one hour at a time", self.cluster, q.name)
                return [p for h in chunk for p in self.run(q, [h], ns, extra)]
            raise
        with self._lock:
            self.seconds[q.name] += time.monotonic() - t0
        if res.result_type != "matrix":
            raise SourceError(f"cluster {self.cluster}: query {q.name}: expected a matrix, got {res.result_type}")
        points: list[Point] = []
        hours: dict[float, datetime] = {}  # a chunk has a handful of distinct step times: convert each once
        for series in res.result:
            labels = series.get("metric") or {}
            for ts, raw in series.get("values") or []:
                h = hours.get(ts)
                if h is None:
                    h = hours[ts] = from_epoch(float(ts) + shift - 3600)
                v = float(raw)
                points.append((h, labels, None if v != v else v))
        return points

    def _namespaces(self, chunk: list[datetime]) -> list[str]:
        key = (chunk[0], chunk[-1])
        if key not in self._ns_cache:
            start, end = self._span(chunk)
            sel = f"kube_pod_info{{{', '.join(self.base)}}}"
            res = self.client.query_range(
                f"count by (namespace) (last_over_time({sel}[{self.window}]))", start, end, 3600)
            self._ns_cache[key] = sorted({s["metric"].get("namespace", "") for s in res.result} - {""})
        return self._ns_cache[key]

