"""The raw frames' columns (the landing contract of raw.*) and the query results they are assembled from, split
by query and `kl_part`."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pandas as pd

from pipelines.sources.prometheus.runner import Point

SOURCE = "prometheus"

CONTAINER_COLS = [
    "cluster", "hour_ts", "namespace", "pod", "pod_uid", "container", "node", "running_minutes", "run_start_s",
    "run_end_s", "cpu_usage_core_seconds", "cpu_usage_max_cores", "cpu_request_cores", "cpu_limit_cores",
    "ram_usage_avg_bytes", "ram_usage_max_bytes", "ram_request_bytes", "ram_limit_bytes", "gpu_request",
    "gpu_usage_avg", "_source",
]
POD_COLS = [
    "cluster", "hour_ts", "namespace", "pod", "pod_uid", "node", "phase", "owner_kind", "owner_name",
    "controller_kind", "controller_name", "labels", "annotations", "network_transmit_bytes",
    "network_receive_bytes", "egress_cross_zone_bytes", "egress_cross_region_bytes", "egress_internet_bytes",
    "_source",
]
NODE_COLS = [
    "cluster", "hour_ts", "node", "provider_id", "instance_type", "region", "zone", "labels",
    "cpu_capacity_cores", "ram_capacity_bytes", "gpu_capacity", "cpu_allocatable_cores", "ram_allocatable_bytes",
    "gpu_model", "running_minutes", "_source",
]
NAMESPACE_COLS = ["cluster", "hour_ts", "namespace", "labels", "annotations", "_source"]
VOLUME_COLS = [
    "cluster", "hour_ts", "pv", "namespace", "pvc", "storage_class", "pvc_request_bytes", "pv_capacity_bytes",
    "provider_volume_id", "active_minutes", "_source",
]
POD_VOLUME_COLS = ["cluster", "hour_ts", "namespace", "pod_uid", "pvc", "_source"]
VOLUME_STATS_COLS = [
    "cluster", "hour_ts", "namespace", "pvc", "used_avg_bytes", "used_max_bytes", "capacity_bytes", "_source",
]
SERVICE_COLS = [
    "cluster", "hour_ts", "namespace", "service", "service_type", "ingress", "active_minutes", "pod_uid",
    "_source",
]
GPU_COLS = [
    "cluster", "hour_ts", "node", "gpu_uuid", "model_name", "namespace", "pod", "container", "power_avg_w",
    "util_avg", "_source",
]
GPU_RESOURCES = ("nvidia_com_gpu", "nvidia.com/gpu")

# query name -> kl_part -> points
Parts = dict[str, dict[str, list[Point]]]


def by_part(points: list[Point]) -> dict[str, list[Point]]:
    out: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        out[p[1].get("kl_part", "")].append(p)
    return out


def prefixed(labels: Mapping[str, str], prefix: str) -> dict[str, str]:
    # KSM already sanitised the keys (`.`, `/`, `-` -> `_`): land them as given
    return {k[len(prefix):]: v for k, v in labels.items() if k.startswith(prefix) and k != prefix}


def merge_json(target: dict[tuple, dict[str, str]], key: tuple, values: dict[str, str]) -> None:
    target.setdefault(key, {}).update(values)


def dumps(d: dict[str, str] | None) -> str | None:
    return None if d is None else json.dumps(d, sort_keys=True, ensure_ascii=False)


def to_frame(rows: list[dict[str, Any]], cols: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=cols)


def split_parts(results: Mapping[str, list[Point]]) -> Parts:
    return {name: by_part(points) for name, points in results.items()}


class QueryParts:
    """One extraction's results by query and part, with what every frame needs: the cluster and scrape interval."""

    def __init__(self, cluster: str, scrape_s: float, parts: Parts) -> None:
        self.cluster = cluster
        self.scrape_s = scrape_s
        self.res = parts

    def part(self, query: str, part: str = "") -> list[Point]:
        return self.res.get(query, {}).get(part, [])

    def _minutes(self, count: float | None) -> float | None:
        return None if count is None else min(60.0, count * self.scrape_s / 60.0)
