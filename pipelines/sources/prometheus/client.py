"""Prometheus HTTP API client: auth (bearer token, basic, client certificate), TLS, retries with capped
backoff, a response-size limit, and every failure raised as a SourceError naming the cluster and the query.

It also detects the backend's range semantics (closed ranges, or Prometheus 3's left-open ones; SOURCES.md §1.5),
which the query plan's window lengths depend on.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import requests
from requests.adapters import HTTPAdapter

from pipelines.settings import PrometheusSettings
from pipelines.sources.base import SourceAuthError, SourceError
from pipelines.sources.faults import CappedRetry

log = logging.getLogger(__name__)

MAX_RESPONSE_BYTES = 256 * 2**20
RETRY_STATUSES = (429, 502, 503, 504)
_SIZE_ERROR_RE = re.compile(
    r"too many samples|maximum resolution|would load too many|exceeded the maximum number|"
    r"max(imum)?[ -_](fetched[ -_])?(series|chunks|samples)|resource exhausted",
    re.IGNORECASE,
)
_SA_TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class QueryTooLargeError(SourceError):
    """The server refused a query for its size: shrink the window or shard by namespace."""


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
        retry = CappedRetry(  # Retry-After capped as for every HTTP source (sources/faults.py)
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
        cert, key, ca = (os.path.expanduser(f) if f else None  # `~` as in a shell, like every configured path
                         for f in (settings.client_cert_file, settings.client_key_file, settings.ca_file))
        if cert:
            s.cert = (cert, key) if key else cert
        if ca:
            s.verify = ca
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
        if status in (401, 403):  # whatever the body (JSON, a proxy's page): one line naming the setting to check
            raise self.auth_error(status)
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
        msg = f"{where}: HTTP {status} {etype}: {err}"
        if _SIZE_ERROR_RE.search(err):
            raise QueryTooLargeError(msg)
        raise SourceError(msg)

    def auth_error(self, status: int) -> SourceAuthError:
        """The credentials were refused: name the key that supplies them (`clusters[]` until the caller knows the
        cluster's index) and, for an environment variable, whether it is set."""
        p, key = self.settings, "clusters[].prometheus"
        if p.bearer_token_env or p.bearer_token_file:
            env = p.bearer_token_env
            setting = f"{key}.bearer_token_env" if env else f"{key}.bearer_token_file"
            note = (f"${env} is {'set' if os.environ.get(env) else 'not set'}" if env
                    else f"the token in {p.bearer_token_file}")
        elif p.basic_auth_username:
            env = p.basic_auth_password_env
            setting = f"{key}.basic_auth_password_env" if env else f"{key}.basic_auth_password_file"
            note = (f"user {p.basic_auth_username}, ${env} is {'set' if os.environ.get(env) else 'not set'}" if env
                    else f"user {p.basic_auth_username}")
        elif p.client_cert_file:
            setting, note = f"{key}.client_cert_file", ""
        else:
            setting, note = f"{key}.bearer_token_env", "no credentials are configured"
        return SourceAuthError("Prometheus", self.base_url, status, setting,
                               f"cluster {self.cluster}; {note}" if note else f"cluster {self.cluster}")

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
        except SourceAuthError:
            raise  # the probe would be refused the same way
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

