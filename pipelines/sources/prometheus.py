"""Prometheus extractor: per-hour container, pod, node, namespace, volume, service and GPU rows (raw.*).

How an hour [h, h+1) is read (SOURCES.md §1-3):
- Every query is a `query_range` with `step=3600` over a chunk of <= 6 consecutive hours, so its points land on
  hour ends T = h+1 (window queries: `rate[1h]`, `last_over_time[1h]`, `[R:1m]` subqueries) or on T - 1 s
  (raw-sample counts over exactly [h, h+1): `[W]` with W = 59m59s on closed-range backends, 1h on Prometheus 3's
  left-open ranges). Several related expressions share one request: each is tagged with a `kl_part` label and
  joined with `or`. The number of requests per chunk is a constant (see `_plan`), never a function of pod count.
- Running minutes, run_start_s and run_end_s all come from raw `kube_pod_container_status_running` samples:
  sample count x scrape interval; the first/last running sample timestamps via `timestamp()` on the bare series
  (which returns the raw sample time) sampled at the scrape step, plus the last sample at T itself.
- cAdvisor series carry no pod uid; it is read from the cgroup path (`id`) with `label_replace`, and falls back to
  the (namespace, pod) -> uid map from kube-state-metrics when the path does not embed it.
- LoadBalancer services -> pods: `kube_endpoint_address` (KSM >= 2.6, one series per endpoint IP, endpoint name =
  service name) restricted to LoadBalancer services, joined in Python to `kube_pod_info`'s `pod_ip` within the same
  hour (host-network pods are skipped: they share the node IP). Without `kube_endpoint_address` the service is
  landed with pod_uid NULL; the models then fall back to the Kubernetes API snapshot's Service selectors.
- Optional series (base.OPTIONAL_SERIES) are checked, not assumed: the `presence` request also counts, per hour,
  the series of each (`count(last_over_time(...))`, one `kl_metric` per family), landed in
  raw.metric_coverage_hours (series_count 0 = absent); absent ones are listed in the metadata (`absent_series`)
  and logged, and the models flag the rows a fallback touched.
- A query the server refuses for size is retried per namespace batch (bisected) or per single hour.
"""

from __future__ import annotations

import gc
import json
import logging
import random
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from pipelines.settings import ClusterSettings, PrometheusSettings
from pipelines.sources.base import (
    COVERAGE_COLS,
    COVERAGE_TABLE,
    OPTIONAL_SERIES,
    ExtractResult,
    SourceError,
    hour_floor,
)

log = logging.getLogger(__name__)

SOURCE = "prometheus"
MAX_RESPONSE_BYTES = 256 * 2**20
MAX_CHUNK_HOURS = 6
RETRY_STATUSES = (429, 502, 503, 504)
LABEL_NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_SIZE_ERROR_RE = re.compile(
    r"too many samples|maximum resolution|would load too many|exceeded the maximum number|"
    r"max(imum)?[ -_](fetched[ -_])?(series|chunks|samples)|resource exhausted",
    re.IGNORECASE,
)
_SA_TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# scrape/target labels that differ between HA kube-state-metrics replicas and must not split a `max without`
_SCRAPE_LABELS = "instance, job, endpoint, service, container, prometheus, prometheus_replica, metrics_path"
# pod UID inside a cgroup path: cgroupfs uses dashes, the systemd driver underscores
_UID_RE = (
    ".*pod([0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12}).*"
)
_RE2_SPECIAL = set("\\.+*?()|[]{}^$")
_NONEMPTY_CONTAINER = 'container!=""'
_NONEMPTY_NODE = 'node!=""'
_NONEMPTY_POD = 'pod!=""'
_CONTROLLER_OWNER = 'owner_is_controller="true"'
_LB_TYPE = 'type="LoadBalancer"'


# --- escaping ----------------------------------------------------------------------------------------------

def validate_label_name(name: str) -> str:
    if not LABEL_NAME_RE.match(name):
        raise ValueError(f"{name!r} is not a Prometheus label name (must match [a-zA-Z_][a-zA-Z0-9_]*)")
    return name


def escape_label_value(v: str) -> str:
    """Escape a value for a double-quoted PromQL string (`\\`, `"` and newlines)."""
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_regex(v: str) -> str:
    """Escape RE2 metacharacters so `v` matches literally inside `=~` (then quote with escape_label_value)."""
    return "".join("\\" + c if c in _RE2_SPECIAL else c for c in v)


def equal_matcher(name: str, value: str) -> str:
    return f'{validate_label_name(name)}="{escape_label_value(value)}"'


def regex_matcher(name: str, values: Iterable[str]) -> str:
    pattern = "|".join(escape_regex(v) for v in values)
    return f'{validate_label_name(name)}=~"{escape_label_value(pattern)}"'


# --- HTTP client -------------------------------------------------------------------------------------------

class QueryTooLargeError(SourceError):
    """The server refused a query for its size: shrink the window or shard by namespace."""


class _CappedRetry(Retry):
    """urllib3 Retry whose Retry-After wait is capped, so a proxy cannot park a worker for an hour."""

    RETRY_AFTER_CAP_S = 60.0

    def get_retry_after(self, response: Any) -> float | None:
        value = super().get_retry_after(response)
        return None if value is None else min(value, self.RETRY_AFTER_CAP_S)


@dataclass
class QueryResult:
    result_type: str
    result: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)


class PrometheusClient:
    """HTTP API client: retries with backoff + jitter, auth, TLS, size limit, errors as SourceError."""

    def __init__(
        self,
        settings: PrometheusSettings,
        cluster: str = "",
        *,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        backoff_factor: float = 0.5,
        connect_timeout_s: float = 10.0,
        session: requests.Session | None = None,
    ) -> None:
        if not settings.url:
            raise SourceError(f"cluster {cluster}: prometheus.url is not set")
        self.settings = settings
        self.cluster = cluster
        self.base_url = settings.url.rstrip("/")
        self.max_response_bytes = max_response_bytes
        self.backoff_factor = backoff_factor
        self.timeout = (connect_timeout_s, settings.timeout_s)
        self.query_count = 0
        self.warnings: list[dict[str, str]] = []
        self._left_open: bool | None = None
        self.backend_version: str | None = None

        s = session or requests.Session()
        retry = _CappedRetry(
            total=settings.retries, connect=settings.retries, read=settings.retries,
            status=settings.retries, other=0,
            backoff_factor=backoff_factor, backoff_jitter=backoff_factor, backoff_max=30.0,
            status_forcelist=RETRY_STATUSES,
            allowed_methods=frozenset({"GET", "POST"}),  # queries are read-only, so POST is safe to repeat
            respect_retry_after_header=True, raise_on_status=False,
        )
        adapter = HTTPAdapter(max_retries=retry, pool_maxsize=max(4, settings.max_concurrency))
        s.mount("http://", adapter)
        s.mount("https://", adapter)
        s.headers.update({"Accept": "application/json", "User-Agent": "kubeledger"})
        s.headers.update(settings.headers)
        token = self._token()
        if token:
            s.headers["Authorization"] = f"Bearer {token}"
        basic = settings.basic_auth()
        if basic:
            s.auth = basic
        if settings.client_cert_file:
            s.cert = (settings.client_cert_file, settings.client_key_file) if settings.client_key_file \
                else settings.client_cert_file
        if settings.ca_file:
            s.verify = settings.ca_file
        elif not settings.verify_tls:
            log.warning("cluster %s: TLS verification is OFF for %s (prometheus.verify_tls: false)",
                        cluster, self.base_url)
            s.verify = False
        self.session = s

    def _token(self) -> str | None:
        try:
            token = self.settings.bearer_token()
        except OSError as exc:
            raise SourceError(f"cluster {self.cluster}: cannot read bearer token file "
                              f"{self.settings.bearer_token_file}: {exc}") from exc
        f = self.settings.bearer_token_file or ""
        if token and f.startswith(_SA_TOKEN_DIR) and not self.settings.bearer_token_env:
            # the pod's own service-account token may only travel to in-cluster TLS services
            u = urlparse(self.base_url)
            host = u.hostname or ""
            if u.scheme != "https" or not (host.endswith(".svc") or host.endswith(".svc.cluster.local")):
                raise SourceError(
                    f"cluster {self.cluster}: refusing to send the in-cluster service-account token to "
                    f"{self.base_url}; it is sent only to https://*.svc or *.svc.cluster.local hosts"
                )
        return token

    # -- low level --

    def _where(self, path: str, params: Mapping[str, Any]) -> str:
        q = str(params.get("query", ""))
        if len(q) > 400:
            q = q[:400] + "…"
        extra = {k: v for k, v in params.items() if k not in ("query", "timeout")}
        return f"cluster {self.cluster}: {path} query={q!r} {extra}"

    def _request(self, method: str, path: str, params: Mapping[str, Any]) -> dict[str, Any]:
        url = self.base_url + path
        attempts = 0
        while True:
            attempts += 1
            self.query_count += 1
            try:
                if method == "POST":
                    resp = self.session.post(url, data=dict(params), timeout=self.timeout, stream=True)
                else:
                    resp = self.session.get(url, params=dict(params), timeout=self.timeout, stream=True)
                body = self._read_body(resp, path, params)
            except requests.Timeout as exc:
                raise SourceError(f"{self._where(path, params)}: timed out after {self.settings.retries} "
                                  f"retries (timeout {self.settings.timeout_s}s): {exc}") from exc
            except requests.ConnectionError as exc:
                kind = "timed out" if "timed out" in str(exc) else "cannot connect"
                raise SourceError(f"{self._where(path, params)}: {kind} to {self.base_url} after "
                                  f"{self.settings.retries} retries: {exc}") from exc
            except requests.RequestException as exc:
                raise SourceError(f"{self._where(path, params)}: request failed: {exc}") from exc
            # Amazon Managed Prometheus throttles with 400 + ThrottlingException: treat it like a 429
            if resp.status_code == 400 and b"ThrottlingException" in body[:4096] \
                    and attempts <= self.settings.retries:
                time.sleep(self.backoff_factor * 2 ** (attempts - 1) + random.uniform(0, self.backoff_factor))
                continue
            return self._decode(resp.status_code, body, path, params)

    def _read_body(self, resp: requests.Response, path: str, params: Mapping[str, Any]) -> bytes:
        try:
            declared = resp.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > self.max_response_bytes:
                raise SourceError(self._too_large(path, params, int(declared)))
            buf = bytearray()
            for chunk in resp.iter_content(chunk_size=1 << 20):
                buf += chunk
                if len(buf) > self.max_response_bytes:
                    raise SourceError(self._too_large(path, params, len(buf)))
            return bytes(buf)
        finally:
            resp.close()

    def _too_large(self, path: str, params: Mapping[str, Any], size: int) -> str:
        return (f"{self._where(path, params)}: response too large ({size} bytes > limit "
                f"{self.max_response_bytes} bytes); shard the query (fewer hours or namespaces)")

    def _decode(self, status: int, body: bytes, path: str, params: Mapping[str, Any]) -> dict[str, Any]:
        where = self._where(path, params)
        enabled = gc.isenabled()
        gc.disable()  # the cyclic GC makes json.loads of large responses several times slower
        try:
            payload = json.loads(body)
        except ValueError:
            snippet = body[:300].decode("utf-8", "replace").strip()
            if status == 200:
                raise SourceError(f"{where}: HTTP 200 with malformed JSON: {snippet!r}") from None
            raise SourceError(f"{where}: HTTP {status} (not a Prometheus JSON answer, e.g. from a proxy): "
                              f"{snippet!r}") from None
        finally:
            if enabled:
                gc.enable()
        if not isinstance(payload, dict):
            raise SourceError(f"{where}: HTTP {status}: unexpected JSON {str(payload)[:200]!r}")
        for w in payload.get("warnings") or []:
            self.warnings.append({"cluster": self.cluster, "query": str(params.get("query", path)),
                                  "warning": str(w)})
        for w in payload.get("infos") or []:  # Prometheus 3 annotations
            self.warnings.append({"cluster": self.cluster, "query": str(params.get("query", path)),
                                  "info": str(w)})
        if status == 200 and payload.get("status") == "success":
            return payload
        etype = payload.get("errorType", "")
        err = payload.get("error", "") or str(payload)[:300]
        if status in (401, 403):
            msg = f"{where}: HTTP {status} authentication/authorisation failed: {err}"
        else:
            msg = f"{where}: HTTP {status} {etype}: {err}"
        if _SIZE_ERROR_RE.search(err):
            raise QueryTooLargeError(msg)
        raise SourceError(msg)

    # -- API --

    def query(self, expr: str, at: float) -> QueryResult:
        """Instant query; `time` is always sent (backfilled data is invisible to an evaluation at "now")."""
        payload = self._request("POST", "/api/v1/query",
                                {"query": expr, "time": _fmt_ts(at), "timeout": f"{self.settings.timeout_s:g}s"})
        return _result(payload)

    def query_range(self, expr: str, start: float, end: float, step: float) -> QueryResult:
        payload = self._request("POST", "/api/v1/query_range", {
            "query": expr, "start": _fmt_ts(start), "end": _fmt_ts(end), "step": f"{step:g}",
            "timeout": f"{self.settings.timeout_s:g}s",
        })
        return _result(payload)

    def buildinfo(self) -> dict[str, Any]:
        return self._request("GET", "/api/v1/status/buildinfo", {}).get("data") or {}

    def left_open_ranges(self, probe_at: float | None = None) -> bool:
        """True when ranges exclude their left boundary (Prometheus 3); SOURCES.md §1.5."""
        if self._left_open is not None:
            return self._left_open
        major = None
        try:
            info = self.buildinfo()
            self.backend_version = str(info.get("version", "")) or None
            m = re.match(r"^v?(\d+)\.\d+", self.backend_version or "")
            # trust only Prometheus itself: Mimir/Thanos/VictoriaMetrics report their own version numbers
            if m and "application" not in info:
                major = int(m.group(1))
        except SourceError as exc:
            log.info("cluster %s: buildinfo unavailable (%s); probing range semantics", self.cluster, exc)
        if major is not None and major >= 2:
            self._left_open = major >= 3
            return self._left_open
        at = probe_at if probe_at is not None else time.time()
        at = float(int(at) // 60 * 60)  # minute-aligned, so [1m:1m] holds 2 points on closed ranges
        res = self.query("count_over_time(vector(1)[1m:1m])", at)
        points = _scalar(res)
        if points not in (1.0, 2.0):
            raise SourceError(f"cluster {self.cluster}: range-semantics probe returned {points!r}, expected 1 or 2")
        self._left_open = points == 1.0
        return self._left_open


def _fmt_ts(ts: float) -> str:
    return f"{ts:.3f}".rstrip("0").rstrip(".")


def _result(payload: dict[str, Any]) -> QueryResult:
    data = payload.get("data") or {}
    return QueryResult(result_type=str(data.get("resultType", "")), result=list(data.get("result") or []),
                       warnings=[str(w) for w in payload.get("warnings") or []])


def _scalar(res: QueryResult) -> float | None:
    if res.result_type == "scalar":
        return float(res.result[1]) if len(res.result) == 2 else None  # type: ignore[arg-type]
    if res.result and "value" in res.result[0]:
        return float(res.result[0]["value"][1])
    return None


# --- query plan --------------------------------------------------------------------------------------------

def _tagged(**parts: str) -> str:
    """Several expressions in one request: each result series carries kl_part=<name>."""
    return " or ".join(f'label_replace({expr}, "kl_part", "{name}", "", "")' for name, expr in parts.items())


def _with_uid(expr: str) -> str:
    return f'label_replace({expr}, "uid", "$1", "id", "{_UID_RE}")'


@dataclass(frozen=True)
class _Query:
    name: str
    build: Callable[[list[str]], str]  # extra matchers (namespace shard) -> PromQL
    namespaced: bool = True             # can be sharded by namespace
    at_hour_end: bool = False           # points at T = h+1 instead of h+1 - 1 s


def _plan(base: list[str], left_open: bool, scrape_s: float) -> list[_Query]:
    """The fixed list of requests per chunk; `base` holds the cluster matcher when configured.

    Every query is evaluated at T = hour end - 1 s over W = 59m59s (closed ranges) or 1h (left-open ranges),
    so raw windows cover exactly [h, h+1) and `[W:1m]` subqueries yield the 60 points h, h+1m, ..., h+59m.
    """
    w = "1h" if left_open else "59m59s"
    r = "1h" if left_open else "59m"  # at T = h+1: subquery points h+1m ... h+1, rates of intervals inside the hour
    s = f"{scrape_s:g}s"
    # irate needs two samples; a short window limits how long a dead cgroup (no staleness marker) lingers
    irate_w = f"{3 * scrape_s:g}s"
    k = "namespace, pod, uid, container"

    def sel(metric: str, m: list[str], *fixed: str) -> str:
        return f"{metric}{{{', '.join([*fixed, *base, *m])}}}"

    def cad(metric: str, m: list[str]) -> str:
        return sel(metric, m, _NONEMPTY_CONTAINER, 'container!="POD"')

    def cpu(m: list[str]) -> str:
        inner = _with_uid(f"rate({cad('container_cpu_usage_seconds_total', m)}[{w}])")
        return f"sum by ({k}) (max by ({k}, id) ({inner}))"

    def cpu_max(m: list[str]) -> str:
        # one cgroup is live per container at a time: `max` across ids dedupes and never adds a dead one's rate
        inner = _with_uid(f"irate({cad('container_cpu_usage_seconds_total', m)}[{irate_w}])")
        return f"max_over_time((max by ({k}) ({inner}))[{r}:1m])"

    def mem(m: list[str]) -> str:
        # as for cpu_max: max across cgroup ids, and a one-scrape lookback instead of 5 minutes, so a restarted
        # container's old cgroup is not summed with the new one in backfilled/remote-read data
        ws_sel = cad("container_memory_working_set_bytes", m)
        ws = f"max by ({k}) ({_with_uid(f'last_over_time({ws_sel}[{s}])')})"
        return _tagged(avg=f"avg_over_time(({ws})[{w}:1m])", max=f"max_over_time(({ws})[{w}:1m])")

    def resources(m: list[str]) -> str:
        res = 'resource=~"cpu|memory|nvidia_com_gpu|nvidia.com/gpu"'
        return _tagged(**{
            kind: f"max by ({k}, node, resource) (avg_over_time("
                  f"{sel(f'kube_pod_container_resource_{kind}s', m, _NONEMPTY_CONTAINER, _NONEMPTY_NODE, res)}[{w}]))"
            for kind in ("request", "limit")
        })

    def running(m: list[str]) -> str:
        run = sel("kube_pod_container_status_running", m, _NONEMPTY_CONTAINER)
        # timestamp() of a bare selector is the raw sample's time; `and ... == 1` keeps running samples only;
        # the [W:scrape] subquery visits every raw sample, last_now adds the last one before T
        ts = f"(timestamp({run}) and {run} == 1)"
        return _tagged(
            count=f"max by ({k}) (sum_over_time({run}[{w}]))",
            first=f"min by ({k}) (min_over_time({ts}[{w}:{s}]))",
            last=f"max by ({k}) (max_over_time({ts}[{w}:{s}]))",
            last_now=f"max by ({k}) {ts}",
        )

    def pod_meta(m: list[str]) -> str:
        return _tagged(
            info="max by (namespace, pod, uid, node, pod_ip, host_network, created_by_kind, created_by_name) "
                 f"(last_over_time({sel('kube_pod_info', m)}[{w}]))",
            phase=f"max by (namespace, pod, uid, phase) (last_over_time({sel('kube_pod_status_phase', m)}[{w}])) == 1",
            owner="max by (namespace, pod, uid, owner_kind, owner_name) (last_over_time("
                  f"{sel('kube_pod_owner', m, _CONTROLLER_OWNER)}[{w}]))",
            rs_owner="max by (namespace, replicaset, owner_kind, owner_name) (last_over_time("
                     f"{sel('kube_replicaset_owner', m)}[{w}]))",
            job_owner="max by (namespace, job_name, owner_kind, owner_name) (last_over_time("
                      f"{sel('kube_job_owner', m)}[{w}]))",
            mounts="max by (namespace, pod, uid, persistentvolumeclaim) (last_over_time("
                   f"{sel('kube_pod_spec_volumes_persistentvolumeclaims_info', m)}[{w}]))",
        )

    def without_scrape(metric: str, m: list[str]) -> str:
        return f"max without ({_SCRAPE_LABELS}) (last_over_time({sel(metric, m)}[{w}]))"

    def pod_labels(m: list[str]) -> str:
        return _tagged(labels=without_scrape("kube_pod_labels", m),
                       annotations=without_scrape("kube_pod_annotations", m))

    def network(m: list[str]) -> str:
        def inc(metric: str) -> str:
            # pod-level cgroup series; max across cgroup ids (pause vs pod cgroup report the same netns)
            inner = _with_uid(f"rate({sel(metric, m, _NONEMPTY_POD)}[{w}])")
            return f"sum by (namespace, pod, uid) (max by (namespace, pod, uid, interface) ({inner}))"
        return _tagged(
            tx=inc("container_network_transmit_bytes_total"),
            rx=inc("container_network_receive_bytes_total"),
            egress="sum by (namespace, pod_name, internet, same_zone, same_region) (rate("
                   f"{sel('kubecost_pod_network_egress_bytes_total', m)}[{w}]))",
        )

    def services(m: list[str]) -> str:
        lb = f"max by (namespace, service) (last_over_time({sel('kube_service_spec_type', m, _LB_TYPE)}[{w}]))"
        return _tagged(
            lb=lb,
            ingress="max by (namespace, service, ip, hostname) (last_over_time("
                    f"{sel('kube_service_status_load_balancer_ingress', m)}[{w}]))",
            endpoints="max by (namespace, endpoint, ip) (last_over_time("
                      f"{sel('kube_endpoint_address', m)}[{w}])) and on (namespace, endpoint) "
                      f'label_replace({lb}, "endpoint", "$1", "service", "(.*)")',
        )

    def namespaces(m: list[str]) -> str:
        return _tagged(labels=without_scrape("kube_namespace_labels", m),
                       annotations=without_scrape("kube_namespace_annotations", m))

    def nodes(m: list[str]) -> str:
        res = 'resource=~"cpu|memory|nvidia_com_gpu|nvidia.com/gpu"'
        return _tagged(
            info=f"max by (node, provider_id) (last_over_time({sel('kube_node_info', m)}[{w}]))",
            labels=without_scrape("kube_node_labels", m),
            capacity=f"max by (node, resource) (max_over_time({sel('kube_node_status_capacity', m, res)}[{w}]))",
            allocatable="max by (node, resource) (max_over_time("
                        f"{sel('kube_node_status_allocatable', m, res)}[{w}]))",
        )

    def presence(m: list[str]) -> str:
        # raw-sample counts over exactly [h, h+1) x scrape interval = minutes present; `coverage`: series per
        # optional family in the hour (an absent family yields no point)
        coverage = " or ".join(
            f'label_replace(count(last_over_time({sel(metric, m)}[{w}])), "kl_metric", "{metric}", "", "")'
            for metric in OPTIONAL_SERIES
        )
        return _tagged(
            node=f"max by (node) (count_over_time({sel('kube_node_info', m)}[{w}]))",
            pvc="max by (namespace, persistentvolumeclaim) (count_over_time("
                f"{sel('kube_persistentvolumeclaim_info', m)}[{w}]))",
            pv=f"max by (persistentvolume) (count_over_time({sel('kube_persistentvolume_info', m)}[{w}]))",
            service="max by (namespace, service) (count_over_time("
                    f"{sel('kube_service_spec_type', m, _LB_TYPE)}[{w}]))",
            coverage=coverage,
        )

    def volumes(m: list[str]) -> str:
        return _tagged(
            pvc="max by (namespace, persistentvolumeclaim, storageclass, volumename) "
                f"(last_over_time({sel('kube_persistentvolumeclaim_info', m)}[{w}]))",
            pvc_request="max by (namespace, persistentvolumeclaim) (avg_over_time("
                        f"{sel('kube_persistentvolumeclaim_resource_requests_storage_bytes', m)}[{w}]))",
            pv="max by (persistentvolume, storageclass, csi_volume_handle, ebs_volume_id, gce_persistent_disk_name, "
               f"azure_disk_name) (last_over_time({sel('kube_persistentvolume_info', m)}[{w}]))",
            pv_capacity="max by (persistentvolume) (avg_over_time("
                        f"{sel('kube_persistentvolume_capacity_bytes', m)}[{w}]))",
            pv_claim="max by (persistentvolume, claim_namespace, name) "
                     f"(last_over_time({sel('kube_persistentvolume_claim_ref', m)}[{w}]))",
        )

    def gpu(m: list[str]) -> str:
        g = ("node, Hostname, gpu, UUID, modelName, namespace, pod, container, "
             "exported_namespace, exported_pod, exported_container")
        return _tagged(
            util=f"avg by ({g}) (avg_over_time({sel('DCGM_FI_DEV_GPU_UTIL', m)}[{w}]))",
            power=f"avg by ({g}) (avg_over_time({sel('DCGM_FI_DEV_POWER_USAGE', m)}[{w}]))",
        )

    return [
        _Query("cpu", cpu), _Query("cpu_max", cpu_max, at_hour_end=True), _Query("mem", mem), _Query("resources", resources),
        _Query("running", running), _Query("pod_meta", pod_meta), _Query("pod_labels", pod_labels),
        _Query("network", network), _Query("services", services), _Query("namespaces", namespaces),
        _Query("nodes", nodes, namespaced=False), _Query("presence", presence, namespaced=False),
        _Query("volumes", volumes, namespaced=False), _Query("gpu", gpu, namespaced=False),
    ]


# --- execution ---------------------------------------------------------------------------------------------

# one result point: (hour start, labels, value)
Point = tuple[datetime, dict[str, str], float | None]


def _epoch(h: datetime) -> int:
    return int(h.replace(tzinfo=UTC).timestamp())


def _from_epoch(ts: float) -> datetime:
    return datetime.fromtimestamp(round(ts), UTC).replace(tzinfo=None)


def _normalise_hours(hours: Iterable[datetime]) -> list[datetime]:
    out = set()
    for h in hours:
        if h.tzinfo is not None:
            h = h.astimezone(UTC).replace(tzinfo=None)
        out.add(hour_floor(h))
    return sorted(out)


def _chunks(hours: Sequence[datetime]) -> list[list[datetime]]:
    """Runs of consecutive hours, at most MAX_CHUNK_HOURS long."""
    chunks: list[list[datetime]] = []
    for h in hours:
        if chunks and h - chunks[-1][-1] == timedelta(hours=1) and len(chunks[-1]) < MAX_CHUNK_HOURS:
            chunks[-1].append(h)
        else:
            chunks.append([h])
    return chunks


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
        return _epoch(chunk[0]) + 3600 - shift, _epoch(chunk[-1]) + 3600 - shift

    def run(self, q: _Query, chunk: list[datetime], ns: list[str] | None = None) -> list[Point]:
        shift = 0 if q.at_hour_end else 1
        start, end = self._span(chunk, shift)
        m = [regex_matcher("namespace", ns)] if ns else []
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
                return self.run(q, chunk, ns[:half]) + self.run(q, chunk, ns[half:])
            if len(chunk) > 1:
                log.info("cluster %s: %s too large; one hour at a time", self.cluster, q.name)
                return [p for h in chunk for p in self.run(q, [h], ns)]
            raise
        with self._lock:
            self.seconds[q.name] += time.monotonic() - t0
        if res.result_type != "matrix":
            raise SourceError(f"cluster {self.cluster}: query {q.name}: expected a matrix, got {res.result_type}")
        points: list[Point] = []
        for series in res.result:
            labels = series.get("metric") or {}
            for ts, raw in series.get("values") or []:
                v = float(raw)
                points.append((_from_epoch(float(ts) + shift - 3600), labels, None if v != v else v))
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


# --- assembly ----------------------------------------------------------------------------------------------

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
SERVICE_COLS = [
    "cluster", "hour_ts", "namespace", "service", "service_type", "ingress", "active_minutes", "pod_uid",
    "_source",
]
GPU_COLS = [
    "cluster", "hour_ts", "node", "gpu_uuid", "model_name", "namespace", "pod", "container", "power_avg_w",
    "util_avg", "_source",
]
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2, "Succeeded": 3, "Failed": 3}
_GPU_RESOURCES = ("nvidia_com_gpu", "nvidia.com/gpu")
_NODE_LABEL_KEYS = {
    "instance_type": ("node_kubernetes_io_instance_type", "beta_kubernetes_io_instance_type"),
    "region": ("topology_kubernetes_io_region", "failure_domain_beta_kubernetes_io_region"),
    "zone": ("topology_kubernetes_io_zone", "failure_domain_beta_kubernetes_io_zone"),
    "gpu_model": ("nvidia_com_gpu_product",),
}


def _by_part(points: list[Point]) -> dict[str, list[Point]]:
    out: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        out[p[1].get("kl_part", "")].append(p)
    return out


def _prefixed(labels: Mapping[str, str], prefix: str) -> dict[str, str]:
    # KSM already sanitised the keys (`.`, `/`, `-` -> `_`): land them as given
    return {k[len(prefix):]: v for k, v in labels.items() if k.startswith(prefix) and k != prefix}


def _merge_json(target: dict[tuple, dict[str, str]], key: tuple, values: dict[str, str]) -> None:
    target.setdefault(key, {}).update(values)


def _dumps(d: dict[str, str] | None) -> str | None:
    return None if d is None else json.dumps(d, sort_keys=True, ensure_ascii=False)


def _frame(rows: list[dict[str, Any]], cols: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=cols)


class _Assembler:
    def __init__(self, cluster: str, scrape_s: float, res: dict[str, list[Point]], meta: dict[str, Any]) -> None:
        self.cluster = cluster
        self.scrape_s = scrape_s
        self.res = {name: _by_part(points) for name, points in res.items()}
        self.meta = meta
        self.uids: dict[tuple[datetime, str, str], set[str]] = defaultdict(set)  # (h, ns, pod) -> uids
        self.pod_node: dict[tuple[datetime, str], str] = {}                     # (h, uid) -> node
        self.pod_name: dict[tuple[datetime, str], tuple[str, str]] = {}         # (h, uid) -> (ns, pod)

    def part(self, query: str, part: str = "") -> list[Point]:
        return self.res.get(query, {}).get(part, [])

    def _minutes(self, count: float | None) -> float | None:
        return None if count is None else min(60.0, count * self.scrape_s / 60.0)

    def _uid_for(self, h: datetime, labels: Mapping[str, str], what: str) -> str | None:
        """cAdvisor series: uid from the cgroup path, else the only KSM pod with that (namespace, pod)."""
        uid = labels.get("uid", "").replace("_", "-")
        if uid:
            return uid
        cands = self.uids.get((h, labels.get("namespace", ""), labels.get("pod", "")), set())
        if len(cands) == 1:
            return next(iter(cands))
        self.meta.setdefault(f"unmatched_{what}", 0)
        self.meta[f"unmatched_{what}"] += 1
        return None

    def pods(self) -> pd.DataFrame:
        rows: dict[tuple[datetime, str], dict[str, Any]] = {}

        def row(h: datetime, lab: Mapping[str, str]) -> dict[str, Any] | None:
            uid = lab.get("uid", "")
            if not uid:
                return None
            r = rows.get((h, uid))
            if r is None:
                r = rows[(h, uid)] = {"cluster": self.cluster, "hour_ts": h, "namespace": lab.get("namespace", ""),
                                      "pod": lab.get("pod", ""), "pod_uid": uid, "_source": SOURCE}
                self.uids[(h, r["namespace"], r["pod"])].add(uid)
                self.pod_name[(h, uid)] = (r["namespace"], r["pod"])
            return r

        for h, lab, _ in self.part("pod_meta", "info"):
            r = row(h, lab)
            if r is not None and lab.get("node") and not r.get("node"):
                r["node"] = lab["node"]
                self.pod_node[(h, r["pod_uid"])] = lab["node"]
        for h, lab, _ in self.part("running", "count") + self.part("resources", "request"):
            r = row(h, lab)
            if r is not None and lab.get("node") and not r.get("node"):
                r["node"] = lab["node"]
                self.pod_node[(h, r["pod_uid"])] = lab["node"]
        for h, lab, _ in self.part("pod_meta", "phase"):
            r = row(h, lab)
            if r is not None and _PHASE_RANK.get(lab.get("phase", ""), -1) >= _PHASE_RANK.get(r.get("phase"), -1):
                r["phase"] = lab.get("phase")

        rs_owner = {(h, lab.get("namespace"), lab.get("replicaset")): (lab.get("owner_kind"), lab.get("owner_name"))
                    for h, lab, _ in self.part("pod_meta", "rs_owner")}
        job_owner = {(h, lab.get("namespace"), lab.get("job_name")): (lab.get("owner_kind"), lab.get("owner_name"))
                     for h, lab, _ in self.part("pod_meta", "job_owner")}
        for h, lab, _ in self.part("pod_meta", "owner"):
            r = row(h, lab)
            kind, name = lab.get("owner_kind"), lab.get("owner_name")
            if r is None or not kind or kind == "<none>":
                continue
            r["owner_kind"], r["owner_name"] = kind, name
            parent = None
            if kind == "ReplicaSet":
                parent = rs_owner.get((h, r["namespace"], name))
            elif kind == "Job":
                parent = job_owner.get((h, r["namespace"], name))
            if parent and parent[0] and parent[0] != "<none>":
                r["controller_kind"], r["controller_name"] = parent
            else:
                r["controller_kind"], r["controller_name"] = kind, name

        for part, col, prefix in (("labels", "labels", "label_"), ("annotations", "annotations", "annotation_")):
            acc: dict[tuple, dict[str, str]] = {}
            for h, lab, _ in self.part("pod_labels", part):
                if row(h, lab) is not None:
                    _merge_json(acc, (h, lab["uid"]), _prefixed(lab, prefix))
            for key, d in acc.items():
                rows[key][col] = _dumps(d)

        for part, col in (("tx", "network_transmit_bytes"), ("rx", "network_receive_bytes")):
            for h, lab, v in self.part("network", part):
                uid = self._uid_for(h, lab, "network_series")
                if uid and (h, uid) in rows and v is not None:  # rate over [h, h+1) x 3600 = bytes in the hour
                    rows[(h, uid)][col] = (rows[(h, uid)].get(col) or 0.0) + v * 3600.0
        egress = self.part("network", "egress")
        if egress:
            for h, lab, v in egress:
                cands = self.uids.get((h, lab.get("namespace", ""), lab.get("pod_name", "")), set())
                if len(cands) != 1 or v is None:
                    continue
                r = rows[(h, next(iter(cands)))]
                if lab.get("internet") == "true":
                    col = "egress_internet_bytes"
                elif lab.get("same_region") == "false":
                    col = "egress_cross_region_bytes"
                elif lab.get("same_zone") == "false":
                    col = "egress_cross_zone_bytes"
                else:
                    col = None  # same-zone traffic is free
                for c in ("egress_internet_bytes", "egress_cross_region_bytes", "egress_cross_zone_bytes"):
                    r.setdefault(c, 0.0)
                if col:
                    r[col] += v * 3600.0
        return _frame(list(rows.values()), POD_COLS)

    def containers(self) -> pd.DataFrame:
        rows: dict[tuple[datetime, str, str], dict[str, Any]] = {}

        def row(h: datetime, uid: str, lab: Mapping[str, str]) -> dict[str, Any]:
            key = (h, uid, lab.get("container", ""))
            r = rows.get(key)
            if r is None:
                ns, pod = self.pod_name.get((h, uid), (lab.get("namespace", ""), lab.get("pod", "")))
                r = rows[key] = {"cluster": self.cluster, "hour_ts": h, "namespace": ns, "pod": pod, "pod_uid": uid,
                                 "container": key[2], "node": self.pod_node.get((h, uid)), "_source": SOURCE}
            return r

        facts_by: dict[tuple[datetime, str, str], dict[str, float | None]] = {}
        for part in ("count", "first", "last", "last_now"):
            for h, lab, v in self.part("running", part):
                if lab.get("uid") and lab.get("container"):
                    facts_by.setdefault((h, lab["uid"], lab["container"]), {})[part] = v
        for (h, uid, c), facts in facts_by.items():
            if "count" not in facts:
                continue  # seen only through the subquery's 5-minute lookback: no sample in [h, h+1)
            r = row(h, uid, {"container": c})
            count = facts.get("count")
            r["running_minutes"] = self._minutes(count)
            lasts = [x for x in (facts.get("last"), facts.get("last_now")) if x is not None]
            hs = _epoch(h)
            if count and facts.get("first") is not None and lasts:
                r["run_start_s"] = max(0.0, facts["first"] - hs)  # a sample just before h: running since h
                r["run_end_s"] = min(3600.0, max(lasts) - hs + self.scrape_s)

        resource_cols = {
            ("request", "cpu"): "cpu_request_cores", ("request", "memory"): "ram_request_bytes",
            ("limit", "cpu"): "cpu_limit_cores", ("limit", "memory"): "ram_limit_bytes",
        }
        for kind in ("request", "limit"):
            for h, lab, v in self.part("resources", kind):
                if not lab.get("uid") or v is None:
                    continue
                res = lab.get("resource", "")
                col = "gpu_request" if (kind == "request" and res in _GPU_RESOURCES) else resource_cols.get((kind, res))
                if col:
                    r = row(h, lab["uid"], lab)
                    r[col] = max(r.get(col) or 0.0, v)
                    if lab.get("node") and not r.get("node"):
                        r["node"] = lab["node"]

        usage: list[tuple[str, str, float]] = [("cpu", "", 3600.0), ("cpu_max", "", 1.0)]
        cols = {"cpu": "cpu_usage_core_seconds", "cpu_max": "cpu_usage_max_cores"}
        for q, part, scale in usage + [("mem", "avg", 1.0), ("mem", "max", 1.0)]:
            col = cols.get(q) or f"ram_usage_{part}_bytes"
            for h, lab, v in self.part(q, part):
                uid = self._uid_for(h, lab, "cadvisor_series")
                if uid is None or v is None:
                    continue
                row(h, uid, lab)[col] = v * scale

        # container-level GPU use, when dcgm-exporter maps GPUs to pods
        for h, lab, v in self.part("gpu", "util"):
            ns = lab.get("namespace") or lab.get("exported_namespace")
            pod = lab.get("pod") or lab.get("exported_pod")
            cont = lab.get("container") or lab.get("exported_container")
            cands = self.uids.get((h, ns or "", pod or ""), set())
            if not (ns and pod and cont) or len(cands) != 1 or v is None:
                continue
            uid = next(iter(cands))
            if (h, uid, cont) in rows:
                r = rows[(h, uid, cont)]
                r["gpu_usage_avg"] = (r.get("gpu_usage_avg") or 0.0) + v / 100.0
        return _frame(list(rows.values()), CONTAINER_COLS)

    def nodes(self) -> pd.DataFrame:
        rows: dict[tuple[datetime, str], dict[str, Any]] = {}

        def row(h: datetime, node: str) -> dict[str, Any]:
            r = rows.get((h, node))
            if r is None:
                r = rows[(h, node)] = {"cluster": self.cluster, "hour_ts": h, "node": node, "_source": SOURCE}
            return r

        for h, lab, _ in self.part("nodes", "info"):
            if lab.get("node"):
                row(h, lab["node"])["provider_id"] = lab.get("provider_id") or None
        labels: dict[tuple, dict[str, str]] = {}
        for h, lab, _ in self.part("nodes", "labels"):
            if lab.get("node"):
                row(h, lab["node"])
                _merge_json(labels, (h, lab["node"]), _prefixed(lab, "label_"))
        for key, d in labels.items():
            rows[key]["labels"] = _dumps(d)
            for col, keys in _NODE_LABEL_KEYS.items():
                rows[key][col] = next((d[k] for k in keys if d.get(k)), None)
        for part, prefix in (("capacity", "capacity"), ("allocatable", "allocatable")):
            for h, lab, v in self.part("nodes", part):
                if not lab.get("node"):
                    continue
                res = lab.get("resource")
                col = {"cpu": f"cpu_{prefix}_cores", "memory": f"ram_{prefix}_bytes"}.get(res or "")
                if res in _GPU_RESOURCES and part == "capacity":
                    col = "gpu_capacity"
                if col:
                    row(h, lab["node"])[col] = v
        for h, lab, v in self.part("presence", "node"):
            if lab.get("node"):
                row(h, lab["node"])["running_minutes"] = self._minutes(v)
        for h, lab, _ in self.part("gpu", "util"):
            node = lab.get("node") or lab.get("Hostname")
            if node and (h, node) in rows and not rows[(h, node)].get("gpu_model") and lab.get("modelName"):
                rows[(h, node)]["gpu_model"] = lab["modelName"]
        return _frame(list(rows.values()), NODE_COLS)

    def namespaces(self) -> pd.DataFrame:
        rows: dict[tuple[datetime, str], dict[str, Any]] = {}
        for h, ns, _pod in list(self.uids):
            if ns:
                rows.setdefault((h, ns), {"cluster": self.cluster, "hour_ts": h, "namespace": ns, "_source": SOURCE})
        for part, prefix in (("labels", "label_"), ("annotations", "annotation_")):
            acc: dict[tuple, dict[str, str]] = {}
            for h, lab, _ in self.part("namespaces", part):
                ns = lab.get("namespace")
                if ns:
                    rows.setdefault((h, ns), {"cluster": self.cluster, "hour_ts": h, "namespace": ns,
                                              "_source": SOURCE})
                    _merge_json(acc, (h, ns), _prefixed(lab, prefix))
            for key, d in acc.items():
                rows[key][part] = _dumps(d)
        return _frame(list(rows.values()), NAMESPACE_COLS)

    def volumes(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        rows: dict[tuple[datetime, str], dict[str, Any]] = {}

        def row(h: datetime, pv: str) -> dict[str, Any]:
            r = rows.get((h, pv))
            if r is None:
                r = rows[(h, pv)] = {"cluster": self.cluster, "hour_ts": h, "pv": pv, "_source": SOURCE}
            return r

        for h, lab, _ in self.part("volumes", "pv"):
            pv = lab.get("persistentvolume")
            if pv:
                r = row(h, pv)
                r["storage_class"] = lab.get("storageclass") or None
                r["provider_volume_id"] = next((lab[k] for k in ("csi_volume_handle", "ebs_volume_id",
                                                                  "gce_persistent_disk_name", "azure_disk_name")
                                                if lab.get(k)), None)
        for h, lab, v in self.part("volumes", "pv_capacity"):
            if lab.get("persistentvolume"):
                row(h, lab["persistentvolume"])["pv_capacity_bytes"] = v
        for h, lab, _ in self.part("volumes", "pv_claim"):
            if lab.get("persistentvolume") and lab.get("name"):
                r = row(h, lab["persistentvolume"])
                r["namespace"], r["pvc"] = lab.get("claim_namespace") or None, lab["name"]
        pvc_req = {(h, lab.get("namespace"), lab.get("persistentvolumeclaim")): v
                   for h, lab, v in self.part("volumes", "pvc_request")}
        pvc_min = {(h, lab.get("namespace"), lab.get("persistentvolumeclaim")): v
                   for h, lab, v in self.part("presence", "pvc")}
        for h, lab, _ in self.part("volumes", "pvc"):
            pv = lab.get("volumename")
            if not pv:
                continue  # unbound claim: no volume to charge yet
            r = row(h, pv)
            r["namespace"], r["pvc"] = lab.get("namespace"), lab.get("persistentvolumeclaim")
            if lab.get("storageclass") and not r.get("storage_class"):
                r["storage_class"] = lab["storageclass"]
        pv_min = {(h, lab.get("persistentvolume")): v for h, lab, v in self.part("presence", "pv")}
        for (h, pv), r in rows.items():
            key = (h, r.get("namespace"), r.get("pvc"))
            r["pvc_request_bytes"] = pvc_req.get(key)
            count = pvc_min.get(key) if r.get("pvc") else pv_min.get((h, pv))
            r["active_minutes"] = self._minutes(count)
        mounts = []
        for h, lab, _ in self.part("pod_meta", "mounts"):
            if lab.get("uid") and lab.get("persistentvolumeclaim"):
                mounts.append({"cluster": self.cluster, "hour_ts": h, "namespace": lab.get("namespace", ""),
                               "pod_uid": lab["uid"], "pvc": lab["persistentvolumeclaim"], "_source": SOURCE})
        return _frame(list(rows.values()), VOLUME_COLS), _frame(mounts, POD_VOLUME_COLS).drop_duplicates()

    def services(self) -> pd.DataFrame:
        ingress: dict[tuple, str] = {}
        for h, lab, _ in self.part("services", "ingress"):
            ingress.setdefault((h, lab.get("namespace"), lab.get("service")), lab.get("ip") or lab.get("hostname")
                               or "")
        minutes = {(h, lab.get("namespace"), lab.get("service")): v for h, lab, v in self.part("presence", "service")}
        ip_pods: dict[tuple[datetime, str], set[str]] = defaultdict(set)
        for h, lab, _ in self.part("pod_meta", "info"):
            if lab.get("pod_ip") and lab.get("uid") and lab.get("host_network") != "true":
                ip_pods[(h, lab["pod_ip"])].add(lab["uid"])
        svc_pods: dict[tuple, set[str]] = defaultdict(set)
        for h, lab, _ in self.part("services", "endpoints"):
            svc_pods[(h, lab.get("namespace"), lab.get("endpoint"))] |= ip_pods.get((h, lab.get("ip", "")), set())
        rows = []
        for h, lab, _ in self.part("services", "lb"):
            key = (h, lab.get("namespace"), lab.get("service"))
            base = {"cluster": self.cluster, "hour_ts": h, "namespace": key[1], "service": key[2],
                    "service_type": "LoadBalancer", "ingress": ingress.get(key) or None,
                    "active_minutes": self._minutes(minutes.get(key)), "_source": SOURCE}
            for uid in sorted(svc_pods.get(key, set())) or [None]:
                rows.append({**base, "pod_uid": uid})
        return _frame(rows, SERVICE_COLS)

    def coverage(self, hours: Sequence[datetime]) -> tuple[pd.DataFrame, dict[str, list[datetime]]]:
        """One row per (hour, optional series family): series seen in the hour, 0 = absent; and the absent hours
        per family."""
        counts = {(h, lab.get("kl_metric")): v for h, lab, v in self.part("presence", "coverage")}
        rows, absent = [], {}
        for metric in OPTIONAL_SERIES:
            for h in hours:
                n = int(counts.get((h, metric)) or 0)
                rows.append({"cluster": self.cluster, "hour_ts": h, "metric": metric, "series_count": n,
                             "_source": SOURCE})
                if n == 0:
                    absent.setdefault(metric, []).append(h)
        return _frame(rows, COVERAGE_COLS), absent

    def absent_warnings(self, absent: Mapping[str, list[datetime]]) -> list[str]:
        """A warning per absent family that some hour needed: LB endpoints where LB services exist, DCGM where
        nodes have GPUs; services and egress always."""
        needed: dict[str, set[datetime]] = {
            "kube_endpoint_address": {h for h, _, _ in self.part("services", "lb")},
        }
        gpu_hours = {h for h, lab, v in self.part("nodes", "capacity")
                     if lab.get("resource") in _GPU_RESOURCES and (v or 0) > 0}
        needed["DCGM_FI_DEV_GPU_UTIL"] = needed["DCGM_FI_DEV_POWER_USAGE"] = gpu_hours
        out = []
        for metric, hours in absent.items():
            hit = sorted(set(hours) & needed[metric]) if metric in needed else sorted(hours)
            if hit:
                out.append(f"cluster {self.cluster}: {metric} absent in {len(hit)} hour(s) from "
                           f"{hit[0].isoformat()}; {OPTIONAL_SERIES[metric]}")
        return out

    def gpus(self) -> pd.DataFrame:
        rows: dict[tuple, dict[str, Any]] = {}
        for part, col, scale in (("util", "util_avg", 0.01), ("power", "power_avg_w", 1.0)):
            for h, lab, v in self.part("gpu", part):
                node = lab.get("node") or lab.get("Hostname")
                uuid = lab.get("UUID") or lab.get("gpu")
                if not node or not uuid:
                    continue
                ns = lab.get("namespace") or lab.get("exported_namespace") or None
                pod = lab.get("pod") or lab.get("exported_pod") or None
                cont = lab.get("container") or lab.get("exported_container") or None
                key = (h, node, uuid, ns, pod, cont)
                r = rows.setdefault(key, {"cluster": self.cluster, "hour_ts": h, "node": node, "gpu_uuid": uuid,
                                          "model_name": lab.get("modelName"), "namespace": ns, "pod": pod,
                                          "container": cont, "_source": SOURCE})
                r[col] = None if v is None else v * scale
        return _frame(list(rows.values()), GPU_COLS)


# --- entry point -------------------------------------------------------------------------------------------

def extract_prometheus_hours(
    cluster: ClusterSettings,
    hours: list[datetime],
    client: PrometheusClient | None = None,
) -> ExtractResult:
    """Extract raw metric rows for `hours` (UTC hour starts) of one cluster.

    Raises SourceError if any hour has no kube-state-metrics data at all: the caller then lands nothing.
    """
    settings = cluster.prometheus
    hours_n = _normalise_hours(hours)
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
    left_open = client.left_open_ranges(probe_at=_epoch(hours_n[0]) + 3600)
    plan = _plan(base, left_open, scrape_s)
    runner = _Runner(client, cluster.name, base, "1h" if left_open else "59m59s")

    results: dict[str, list[Point]] = defaultdict(list)
    workers = max(1, min(settings.max_concurrency, len(plan)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prom") as pool:
        for chunk in _chunks(hours_n):
            futures = {q.name: pool.submit(runner.run, q, chunk) for q in plan}
            for name, fut in futures.items():
                results[name].extend(fut.result())

    present = {h for h, _, _ in _by_part(results["pod_meta"]).get("info", [])}
    present |= {h for h, _, _ in _by_part(results["nodes"]).get("info", [])}
    missing = [h for h in hours_n if h not in present]
    if missing:
        raise SourceError(
            f"cluster {cluster.name}: no kube-state-metrics data (kube_pod_info, kube_node_info) for hour(s) "
            f"{', '.join(h.isoformat() for h in missing)} at {settings.url}; refusing to land zeros"
        )

    meta: dict[str, Any] = {}
    asm = _Assembler(cluster.name, scrape_s, results, meta)
    pods = asm.pods()  # first: builds the (namespace, pod) -> uid map the others use
    volumes, pod_volumes = asm.volumes()
    batches = {
        "container_hours": asm.containers(),
        "pod_hours": pods,
        "node_hours": asm.nodes(),
        "namespace_hours": asm.namespaces(),
        "volume_hours": volumes,
        "pod_volume_hours": pod_volumes,
        "service_hours": asm.services(),
    }
    batches[COVERAGE_TABLE], absent = asm.coverage(hours_n)
    absent_warnings = asm.absent_warnings(absent)
    for warning in absent_warnings:
        log.warning(warning)
    gpus = asm.gpus()
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
        "chunks": len(_chunks(hours_n)),
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
    return ExtractResult(batches=batches, partitions=[{"cluster": cluster.name, "hour_ts": h} for h in hours_n],
                         metadata=meta)
