"""HTTP API over the serving copy, stdlib only: Kubecost, OpenCost and ACK allocation endpoints (docs/API.md).

Bad input is a 400 with {"code":400,"message":"<param>: <value> is not allowed; <allowed>"}; days missing in the
warehouse are a 404; a 500 means a bug, never bad input.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import duckdb

from pipelines.serving.engine import AllocationQuery, connect_serving, query_allocations, to_csv
from pipelines.serving.errors import QueryError
from pipelines.settings import Settings

log = logging.getLogger(__name__)
MAX_QUERY_CHARS = 65536

KUBECOST_PARAMS = {"window", "aggregate", "accumulate", "step", "idle", "external", "offset", "limit", "filter",
                   "format", "costMetric", "shareIdle", "splitIdle", "idleByNode", "includeSharedCostBreakdown",
                   "shareNamespaces", "shareLabels", "shareCost", "shareSplit", "reconcile", "shareTenancyCosts",
                   "idleSplit", "filterNamespaces", "filterClusters", "filterNodes", "filterPods",
                   "filterContainers", "filterControllerKinds", "filterControllers"}
OPENCOST_PARAMS = {"window", "aggregate", "accumulate", "step", "includeIdle", "shareIdle", "idleByNode", "filter",
                   "offset", "limit", "includeProportionalAssetResourceCosts", "includeAggregatedMetadata"}
ACK_PARAMS = {"window", "filter", "step", "aggregate", "idle", "shareIdle", "shareSplit", "idleByNode", "targetType",
              "format"}
_LEGACY_FILTERS = {"filterNamespaces": "namespace", "filterClusters": "cluster", "filterNodes": "node",
                   "filterPods": "pod", "filterContainers": "container", "filterControllerKinds": "controllerKind",
                   "filterControllers": "controllerName"}


def _bool(params: dict[str, str], name: str, default: bool) -> bool:
    v = params.get(name)
    if v is None or v == "":
        return default
    low = v.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise QueryError(name, v, "use true or false")


def _int(params: dict[str, str], name: str) -> int | None:
    v = params.get(name)
    if v is None or v == "":
        return None
    if not v.strip().isdigit() or len(v) > 9:
        raise QueryError(name, v, "a non-negative integer")
    return int(v)


def _list(value: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in (value or "").split(",") if x.strip())


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def query_from_params(params: dict[str, str], flavor: str, settings: Settings) -> AllocationQuery:
    """Map one endpoint's parameters onto AllocationQuery (flavor: kubecost | opencost | ack)."""
    allowed = {"kubecost": KUBECOST_PARAMS, "opencost": OPENCOST_PARAMS, "ack": ACK_PARAMS}[flavor]
    for name in params:
        if name not in allowed:
            raise QueryError(name, params[name], "unknown parameter; allowed: " + ", ".join(sorted(allowed)))
    sharing = settings.sharing
    filt = params.get("filter", "") or ""
    legacy = [f"{field}:{','.join(_quote(v) for v in _list(params.get(p)))}"
              for p, field in _LEGACY_FILTERS.items() if _list(params.get(p))]
    if legacy:  # Kubecost's legacy filters AND the v2 filter
        filt = "+".join([f"({filt})"] * bool(filt.strip()) + legacy)
    share_cost: float = 0.0
    if flavor == "kubecost":
        raw_cost = params.get("shareCost")
        if raw_cost not in (None, ""):
            try:
                share_cost = float(raw_cost)
            except ValueError:
                raise QueryError("shareCost", raw_cost, "a monthly amount in USD, 0 or more") from None
        else:
            share_cost = sharing.monthly_overhead_usd
        cost_metric = params.get("costMetric", "cumulative") or "cumulative"
        if cost_metric != "cumulative":
            raise QueryError("costMetric", cost_metric, "only cumulative is supported (daily marts)")
        fmt = params.get("format", "json") or "json"
        if fmt not in ("json", "csv"):
            raise QueryError("format", fmt, "use json or csv (pdf is not supported)")
        for name in ("external", "reconcile", "shareTenancyCosts"):
            _bool(params, name, False)
        return AllocationQuery(
            window=params.get("window", ""), aggregate=params.get("aggregate", ""), filter=filt,
            step=params.get("step"), accumulate=params.get("accumulate"), idle=_bool(params, "idle", True),
            share_idle=_bool(params, "shareIdle", sharing.share_idle),
            idle_split=params.get("idleSplit") or sharing.idle_split,
            idle_by_node=_bool(params, "idleByNode", sharing.idle_by_node),
            split_idle=_bool(params, "splitIdle", False),
            share_namespaces=_list(params["shareNamespaces"]) if "shareNamespaces" in params
            else sharing.shared_namespaces,
            share_labels=_list(params["shareLabels"]) if "shareLabels" in params else sharing.shared_labels,
            share_cost=share_cost, share_split=params.get("shareSplit") or sharing.split,
            include_shared_cost_breakdown=_bool(params, "includeSharedCostBreakdown", False),
            offset=_int(params, "offset") or 0, limit=_int(params, "limit"), format=fmt)
    if flavor == "opencost":
        for name in ("includeProportionalAssetResourceCosts", "includeAggregatedMetadata"):
            _bool(params, name, False)
        return AllocationQuery(
            window=params.get("window", ""), aggregate=params.get("aggregate", ""), filter=filt,
            step=params.get("step"), accumulate=params.get("accumulate"),
            idle=_bool(params, "includeIdle", False), share_idle=_bool(params, "shareIdle", False),
            idle_by_node=_bool(params, "idleByNode", False), offset=_int(params, "offset") or 0,
            limit=_int(params, "limit"))
    # ACK: shareSplit is the idle policy; idleByNode only with aggregate=node and shareIdle=false.
    share_idle = _bool(params, "shareIdle", False)
    idle_by_node = _bool(params, "idleByNode", False)
    aggregate = params.get("aggregate") or "namespace,pod"
    if idle_by_node and (aggregate != "node" or share_idle):
        raise QueryError("idleByNode", params.get("idleByNode"), "only with aggregate=node and shareIdle=false")
    target = params.get("targetType", "cluster") or "cluster"
    if target not in ("cluster", "node"):
        raise QueryError("targetType", target, "use cluster or node")
    fmt = params.get("format", "json") or "json"
    if fmt not in ("json", "csv"):
        raise QueryError("format", fmt, "use json or csv")
    return AllocationQuery(
        window=params.get("window", ""), aggregate=aggregate, filter=filt, step=params.get("step"),
        idle=_bool(params, "idle", True), share_idle=share_idle, idle_by_node=idle_by_node,
        idle_split=params.get("shareSplit") or "weighted", format=fmt)


def ack_view(sets: list[dict[str, dict[str, Any]]]) -> list[dict[str, dict[str, Any]]]:
    keep = ("controller", "controllerKind", "namespace", "pod", "node", "providerID", "labels")
    out = []
    for allocs in sets:
        out.append({key: {
            "name": a["name"], "properties": {k: v for k, v in a["properties"].items() if k in keep},
            "start": a["start"], "end": a["end"],
            "cpuCoreRequestAverage": a["cpuCoreRequestAverage"], "cpuCoreUsageAverage": a["cpuCoreUsageAverage"],
            "ramByteRequestAverage": a["ramByteRequestAverage"], "ramByteUsageAverage": a["ramByteUsageAverage"],
            "cost": a["totalCost"], "costRatio": a["costRatio"], "customCost": 0.0,
            "energyKwh": a["energyKwh"], "co2eOperationalG": a["co2eOperationalG"],
            "co2eEmbodiedG": a["co2eEmbodiedG"], "co2eTotalG": a["co2eTotalG"],
            "isEstimated": a["isEstimated"], "estimationReasons": a["estimationReasons"],
        } for key, a in allocs.items()})
    return out


def _clean(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


class _Warehouse:
    """One read-only connection to the serving copy, reopened when the file is swapped (os.replace)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.con: duckdb.DuckDBPyConnection | None = None
        self.stamp: tuple[int, int] | None = None

    def cursor(self) -> duckdb.DuckDBPyConnection:
        with self.lock:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                raise QueryError("window", "", "", status=404,
                                 message=f"the serving copy {self.path} does not exist; run the pipeline") from None
            stamp = (st.st_ino, st.st_mtime_ns)
            if self.con is None or stamp != self.stamp:
                if self.con is not None:
                    self.con.close()
                # bounded memory: a heavy query spills or fails, it never takes the machine down
                self.con = connect_serving(self.path)
                self.stamp = stamp
            return self.con.cursor()


def make_handler(settings: Settings) -> type[BaseHTTPRequestHandler]:
    warehouse = _Warehouse(str(settings.serving_path))

    class Handler(BaseHTTPRequestHandler):
        server_version = "kubeledger"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            log.debug("%s " + format, self.address_string(), *args)

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            # The stdlib rejects over-long or malformed request lines before routing: answer in JSON too, and
            # as a 400, since that is bad input like any other.
            status = 400 if 400 <= code < 500 else code
            body = json.dumps({"code": status, "message": f"request: {message or code} is not allowed; "
                                                          f"send a GET with a URL under {MAX_QUERY_CHARS} characters"})
            try:
                self._send(status, body)
            except OSError:
                pass
            self.close_connection = True

        def _send(self, status: int, body: str, ctype: str = "application/json") -> None:
            data = body.encode("utf-8", "replace")
            self.send_response(status)
            self.send_header("Content-Type", ctype + "; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _json(self, status: int, payload: Any) -> None:
            self._send(status, json.dumps(_clean(payload), allow_nan=False, ensure_ascii=False))

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            try:
                self._route()
            except QueryError as exc:
                self._json(exc.status, {"code": exc.status, "message": exc.message})
            except Exception as exc:  # a bug: say so without leaking a traceback
                log.exception("allocation request failed: %s", self.path)
                self._json(500, {"code": 500, "message": f"internal error ({type(exc).__name__}); see server log"})

        def _route(self) -> None:
            if len(self.path) > MAX_QUERY_CHARS:
                raise QueryError("url", f"{len(self.path)} characters", f"at most {MAX_QUERY_CHARS}")
            parts = urlsplit(self.path)
            route = parts.path.rstrip("/") or "/"
            qs = parse_qs(parts.query, keep_blank_values=True, errors="replace", max_num_fields=200)
            params = {k: v[0] for k, v in qs.items()}
            if route == "/healthz":
                self._json(200, {"code": 200, "status": "ok", "serving": os.path.exists(warehouse.path)})
                return
            flavors = {"/model/allocation": "kubecost", "/allocation": "opencost",
                       "/allocation/compute": "opencost", "/v2/allocation": "ack"}
            if route not in flavors:
                self._json(404, {"code": 404, "message": f"{route}: no such endpoint; use "
                                 + ", ".join([*flavors, "/healthz"])})
                return
            flavor = flavors[route]
            q = query_from_params(params, flavor, settings)
            q.validate()  # bad input → 400 before touching the warehouse
            cur = warehouse.cursor()
            try:
                sets = query_allocations(cur, q)
            finally:
                cur.close()
            if q.format == "csv":
                self._send(200, to_csv(sets), "text/csv")
            elif flavor == "ack":
                self._json(200, {"code": 200, "status": "success", "data": ack_view(sets)})
            else:
                self._json(200, {"code": 200, "status": "success", "data": sets})

    return Handler


def make_server(settings: Settings, host: str = "127.0.0.1", port: int = 9003) -> ThreadingHTTPServer:
    """A ready server (not yet serving); port 0 picks a free port (server.server_address)."""
    server = ThreadingHTTPServer((host, port), make_handler(settings))
    server.daemon_threads = True
    return server


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 9003) -> None:
    server = make_server(settings, host, port)
    log.info("kubeledger API on http://%s:%s (serving copy %s)", host, server.server_address[1],
             settings.serving_path)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
