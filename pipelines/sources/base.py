"""What every extractor returns, so one loader lands all sources the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import duckdb
import pandas as pd

from pipelines.redaction import redact, redact_url
from pipelines.timeutil import hour_floor
from pipelines.warehouse.landing import replace_partitions

# Optional series families: extraction goes on without them, but a feature falls back. The metrics sources land
# one raw.metric_coverage_hours row per (cluster, hour, metric) for each (series_count 0 = absent), so the models
# flag what the fallback touched instead of assuming the series exist (README "Metrics each feature needs").
# metric -> what is lost without it
OPTIONAL_SERIES: dict[str, str] = {
    "kube_service_spec_type": "LoadBalancer services (kube-state-metrics `services` collector): no load balancer "
                              "cost at all",
    "kube_endpoint_address": "LoadBalancer -> pod mapping (kube-state-metrics >= 2.6): pods taken from the "
                             "Kubernetes API snapshot's Service selectors (lb_pods_from_selector), else the cost "
                             "goes to __unmounted__ (lb_endpoints_missing)",
    "kubecost_pod_network_egress_bytes_total": "egress classification (Kubecost network-costs): network cost 0, "
                                               "flagged no_egress_classification",
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilisation (dcgm-exporter): GPU usage unknown, GPU power assumes 50 % "
                            "utilisation",
    "DCGM_FI_DEV_POWER_USAGE": "GPU power (dcgm-exporter): estimated from the GPU model's profile, flagged "
                               "gpu_power_estimated",
}
COVERAGE_TABLE = "metric_coverage_hours"
COVERAGE_COLS = ["cluster", "hour_ts", "metric", "series_count", "_source"]


class SourceError(RuntimeError):
    """A source failed for a partition; the message names the cluster/zone, the request and the server's error.
    The message is redacted (pipelines/redaction.py): it reaches Dagster's run storage, the console and the log."""

    def __init__(self, message: str = "") -> None:
        super().__init__(redact(str(message)))


class SourceAuthError(SourceError):
    """A source refused the credentials (HTTP 401/403). The message is the one line a user acts on: the source, its
    URL, the status and the setting to check (`setting` is written with `clusters[]` until `for_cluster`)."""

    def __init__(self, source: str, url: str, status: int, setting: str, note: str = "") -> None:
        self.source, self.url, self.status, self.setting, self.note = source, url, status, setting, note
        super().__init__(auth_line(source, url, status, setting) + (f" ({note})" if note else ""))

    def __reduce__(self) -> tuple:  # rebuilt from its parts, not from the message
        return (type(self), (self.source, self.url, self.status, self.setting, self.note))

    def for_cluster(self, index: int) -> SourceAuthError:
        """The same error naming the cluster's index in the settings key (clusters[0].prometheus...)."""
        return SourceAuthError(self.source, self.url, self.status,
                               self.setting.replace("clusters[]", f"clusters[{index}]", 1), self.note)


def auth_line(source: str, url: str, status: int, setting: str) -> str:
    """'Prometheus at http://host:9090 answered 401 Unauthorized: check clusters[0].prometheus.bearer_token_env'"""
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "refused"
    parts = urlsplit(url)
    where = redact_url(f"{parts.scheme}://{parts.netloc}") if parts.scheme and parts.netloc else url
    return f"{source} at {where} answered {status} {reason}: check {setting}"


class NoDataError(SourceError):
    """The source answered, but with no data for any hour asked (a retention gap, a wrong cluster label)."""


@dataclass
class ExtractResult:
    batches: dict[str, pd.DataFrame]          # raw table name (without schema) -> rows
    partitions: list[dict[str, Any]]           # the partitions these rows replace, e.g. {"cluster": c, "hour_ts": h}
    metadata: dict[str, Any] = field(default_factory=dict)  # queries, warnings, partial responses, timings

    def rows(self) -> int:
        return sum(len(f) for f in self.batches.values())


def land(con: duckdb.DuckDBPyConnection, result: ExtractResult) -> dict[str, int]:
    """Write an extract's rows, replacing its partitions; rows written per table. Every extract lands through
    this one function (called as `base.land`, so the CLI's progress display can observe it)."""
    if not result.partitions:
        return {}
    return replace_partitions(con, result.batches, result.partitions)


__all__ = ["COVERAGE_COLS", "COVERAGE_TABLE", "OPTIONAL_SERIES", "ExtractResult", "NoDataError", "SourceAuthError",
           "SourceError", "auth_line", "hour_floor", "land"]
