"""Prometheus extractor: per-hour container, pod, node, namespace, volume (with the kubelet's volume stats),
service and GPU rows (raw.*).

How an hour [h, h+1) is read (SOURCES.md §1-3), and where each part lives:
- `client`: the HTTP API client (auth, TLS, retries, size limit, errors as SourceError) and the detection of the
  backend's range semantics (closed, or Prometheus 3's left-open ranges).
- `query_plan`: the fixed list of PromQL requests per chunk of <= MAX_CHUNK_HOURS consecutive hours (so the
  request count depends on the hours only, never on the pod count), label escaping, and the presence/coverage
  request that counts each optional series family (base.OPTIONAL_SERIES) per hour.
- `runner`: one planned request over a chunk; a request the server refuses for size is retried per namespace
  batch (bisected) or per single hour.
- `frames`, `assemble_pods`, `assemble_cluster`: the query results assembled into the raw frames (workloads:
  pods, containers, namespaces; cluster: nodes, volumes, services, GPUs, metric coverage).
- `extract`: the entry point, `extract_prometheus_hours`. Absent optional series are listed in its metadata
  (`absent_series`) and logged, and the models flag the rows a fallback touched.
"""

from pipelines.sources.prometheus.client import (
    MAX_RESPONSE_BYTES,
    RETRY_STATUSES,
    PrometheusClient,
    QueryResult,
    QueryTooLargeError,
)
from pipelines.sources.prometheus.extract import extract_prometheus_hours
from pipelines.sources.prometheus.frames import (
    CONTAINER_COLS,
    GPU_COLS,
    NAMESPACE_COLS,
    NODE_COLS,
    POD_COLS,
    POD_VOLUME_COLS,
    SERVICE_COLS,
    SOURCE,
    VOLUME_COLS,
    VOLUME_STATS_COLS,
)
from pipelines.sources.prometheus.query_plan import (
    LABEL_NAME_RE,
    MAX_CHUNK_HOURS,
    _plan,
    _Query,
    equal_matcher,
    escape_label_value,
    escape_regex,
    hour_chunks,
    regex_matcher,
    validate_label_name,
)
from pipelines.sources.prometheus.runner import Point, _Runner

__all__ = [
    "CONTAINER_COLS", "GPU_COLS", "LABEL_NAME_RE", "MAX_CHUNK_HOURS", "MAX_RESPONSE_BYTES", "NAMESPACE_COLS",
    "NODE_COLS", "POD_COLS", "POD_VOLUME_COLS", "RETRY_STATUSES", "SERVICE_COLS", "SOURCE", "VOLUME_COLS",
    "VOLUME_STATS_COLS", "Point", "PrometheusClient", "QueryResult", "QueryTooLargeError", "_Query", "_Runner", "_plan",
    "equal_matcher", "escape_label_value", "escape_regex", "extract_prometheus_hours", "hour_chunks",
    "regex_matcher", "validate_label_name",
]
