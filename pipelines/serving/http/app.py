"""The HTTP layer: an ASGI app (Starlette) served by uvicorn, made for many concurrent clients on a small machine.

- Admission: at most `max_running` queries execute at once (one worker thread each); up to `max_queued` wait
  (at most `queue_wait_s`); past that the answer is an immediate 503 with `Retry-After`. Nothing is unbounded:
  threads, queue, connections (in all, per client address, and the time to send a request: connections.py),
  memory (a DuckDB cap per snapshot, ≤ 2 snapshots).
- Probes answer outside the admission: `/healthz`, `/readyz` and `/metrics` (a `probe` route) take no query slot
  and are never a busy 503, so a saturated API still reports itself (they run on the event loop's default threads).
- Every query has a deadline (`query_timeout_s`) and is interrupted (`DuckDBPyConnection.interrupt`) when it
  passes, or when the client disconnects; the worker slot is free again at once.
- Each request reads one snapshot from start to end (query/snapshots.py); a publish never fails a request in flight.
- Answers are cached per (snapshot, route, normalised parameters): a dashboard polling the same query costs one
  dictionary lookup until the next publish.
- Write routes (`Route.write`, only the opt-in decision routes: routes/decisions.py) are POST only: their gate
  (off → 404, token → 401/403) runs before the body is read, the body is at most `MAX_BODY_BYTES` of JSON, and the
  write takes a query slot under the same admission and deadline; its answer is never cached.
- Errors: bad input 400 naming the parameter; unknown route a JSON 404; other methods 405 with `Allow`;
  overload, timeouts and unreadable snapshots 503 with `Retry-After` and the reason; a 500 is a bug.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import duckdb
from starlette.requests import Request
from starlette.responses import Response

from pipelines.redaction import redact_data
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.snapshots import ServingUnavailable, SnapshotPool

log = logging.getLogger(__name__)
MAX_URL_CHARS = 65536
MAX_PARAMS = 200
MAX_BODY_BYTES = 16 * 1024  # a write route's JSON body (an id, a reason, a day)
ALLOWED_METHODS = "GET, HEAD"


@dataclass(frozen=True)
class ServerLimits:
    """Bounds of the API server (docs/API.md); `kubeledger serve --max-connections-per-client/--request-timeout`
    set the connection bounds, the rest are these defaults."""

    max_running: int = max(2, 2 * (os.cpu_count() or 1))
    max_queued: int = 32
    queue_wait_s: float = 10.0
    query_timeout_s: float = 30.0
    retry_after_s: int = 2
    cache_entries: int = 512
    cache_bytes: int = 64 * 1024 * 1024
    memory_limit: str = os.environ.get("KUBELEDGER_QUERY_MEMORY", "1GB")
    max_connections: int = 1000
    max_connections_per_client: int = 64  # per client address; a proxy in front is one client
    request_timeout_s: float = 5.0  # to send a whole request (line, headers, body) once connected or answered


@dataclass
class Reply:
    """What a route returns: a status, a JSON-able payload (or text) and the content type."""

    status: int
    payload: Any
    content_type: str = "application/json"
    cacheable: bool = True
    headers: dict[str, str] = field(default_factory=dict)


# A route: (cursor on the request's snapshot, parameters) -> Reply. It runs on a worker thread.
RouteFn = Callable[[duckdb.DuckDBPyConnection, dict[str, str]], Reply]
# Checked before any worker is taken: raises QueryError on bad input (a cheap 400 under any load).
Validator = Callable[[dict[str, str]], None]
# A write route: the request's JSON object -> Reply, on a worker thread; its gate sees the headers first and
# answers (404 off, 401/403 token) or lets the request through (None).
WriteFn = Callable[[dict[str, Any]], Reply]
Gate = Callable[[Mapping[str, str]], "Reply | None"]


@dataclass
class Route:
    fn: RouteFn
    validate: Validator | None = None
    needs_snapshot: bool = True
    probe: bool = False  # cheap (e.g. /metrics): answered outside the query admission, never a busy 503
    write: WriteFn | None = None  # a POST route taking a JSON body (fn is then unused)
    gate: Gate | None = None  # a write route's opt-in and token check, before its body is read


def _clean(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def encode(reply: Reply) -> bytes:
    if isinstance(reply.payload, (bytes, bytearray)):
        return bytes(reply.payload)
    if isinstance(reply.payload, str):
        return reply.payload.encode("utf-8", "replace")
    return json.dumps(_clean(reply.payload), allow_nan=False, ensure_ascii=False).encode()


def error_reply(status: int, message: str, **extra: Any) -> Reply:
    return Reply(status, {"code": status, "message": message, **extra}, cacheable=False)


class _Cache:
    """LRU of encoded answers, bounded in entries and bytes."""

    def __init__(self, entries: int, max_bytes: int) -> None:
        self.entries, self.max_bytes = entries, max_bytes
        self._d: OrderedDict[tuple, tuple[int, bytes, str]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: tuple) -> tuple[int, bytes, str] | None:
        with self._lock:
            hit = self._d.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._d.move_to_end(key)
            self.hits += 1
            return hit

    def put(self, key: tuple, value: tuple[int, bytes, str]) -> None:
        size = len(value[1])
        if size > self.max_bytes // 8:
            return
        with self._lock:
            if key in self._d:
                self._bytes -= len(self._d.pop(key)[1])
            self._d[key] = value
            self._bytes += size
            while len(self._d) > self.entries or self._bytes > self.max_bytes:
                _, old = self._d.popitem(last=False)
                self._bytes -= len(old[1])


class _Running:
    """The cursor a worker is using, so the event loop can interrupt it."""

    def __init__(self) -> None:
        self.cursor: duckdb.DuckDBPyConnection | None = None
        self.cancelled = False
        self.lock = threading.Lock()

    def interrupt(self) -> None:
        with self.lock:
            self.cancelled = True
            if self.cursor is not None:
                try:
                    self.cursor.interrupt()
                except duckdb.Error:
                    pass


def parse_params(query: str) -> dict[str, str]:
    """Query string → dict; a parameter given twice is a 400 (which value would win is not obvious)."""
    pairs = parse_qsl(query, keep_blank_values=True, errors="replace", max_num_fields=MAX_PARAMS)
    params: dict[str, str] = {}
    for k, v in pairs:
        if k in params:
            raise QueryError(k, v, "the parameter is given more than once; give it once (use a comma list for "
                                   "several values)")
        params[k] = v
    return params


class AllocationApp:
    """ASGI callable. `routes` maps a path (without trailing slash) to a Route."""

    def __init__(self, pool: SnapshotPool, routes: dict[str, Route], limits: ServerLimits,
                 extra: Callable[[], dict[str, Any]] | None = None) -> None:
        self.pool = pool
        self.routes = routes
        self.limits = limits
        self.extra = extra
        self.cache = _Cache(limits.cache_entries, limits.cache_bytes)
        self.executor = ThreadPoolExecutor(max_workers=limits.max_running, thread_name_prefix="query")
        self.running = 0
        self.queued = 0
        self.served = 0
        self.rejected = 0
        self.timeouts = 0
        self.disconnects = 0
        self._async_slots: asyncio.Semaphore | None = None
        self._inflight: dict[tuple, asyncio.Future] = {}

    # -- ASGI -----------------------------------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    self.executor.shutdown(wait=False, cancel_futures=True)
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        started = time.perf_counter()
        reply_status, body, ctype, headers = await self._handle(request)
        if request.method == "HEAD":
            headers = {**headers, "Content-Length": str(len(body))}
            body = b""
        response = Response(body, status_code=reply_status, media_type=ctype, headers=headers)
        await response(scope, receive, send)
        log.debug("%s %s %s %.1f ms", request.method, request.url.path, reply_status,
                  (time.perf_counter() - started) * 1000)

    async def _handle(self, request: Request) -> tuple[int, bytes, str, dict[str, str]]:
        def out(reply: Reply) -> tuple[int, bytes, str, dict[str, str]]:
            ctype = reply.content_type + ("; charset=utf-8" if "charset" not in reply.content_type else "")
            return reply.status, encode(reply), ctype, reply.headers

        route = self.routes.get(request.url.path.rstrip("/") or "/")
        if route is not None and route.write is not None:
            return out(await self._handle_write(request, route))
        if request.method not in ("GET", "HEAD"):
            r = error_reply(405, f"method: {request.method} is not allowed; use GET (or HEAD)")
            r.headers["Allow"] = ALLOWED_METHODS
            return out(r)
        raw_query = request.scope.get("query_string", b"").decode("latin-1")
        if len(raw_query) + len(request.url.path) > MAX_URL_CHARS:
            return out(error_reply(400, f"url: {len(raw_query)} characters is not allowed; at most {MAX_URL_CHARS}"))
        path = request.url.path.rstrip("/") or "/"
        try:
            params = parse_params(raw_query)
        except QueryError as exc:
            return out(error_reply(exc.status, exc.message))
        except ValueError:
            return out(error_reply(400, f"query: more than {MAX_PARAMS} parameters is not allowed"))
        if path == "/healthz":
            return out(await asyncio.to_thread(self.healthz))
        if path == "/readyz":
            return out(await asyncio.to_thread(self.readyz))
        route = self.routes.get(path)
        if route is None:
            return out(self.not_found(path))
        if route.validate is not None:
            try:
                route.validate(params)
            except QueryError as exc:
                return out(error_reply(exc.status, exc.message))
        if route.probe:
            reply = await asyncio.to_thread(self._safe, route, None, params)
            self.served += 1
            return out(reply)
        key = (path, tuple(sorted(params.items())))
        snap_id = None
        if route.needs_snapshot:
            try:
                snap_id = await asyncio.to_thread(self.pool.current_id)
            except Exception:  # noqa: BLE001 - reported by the lease below
                snap_id = None
            if snap_id is not None:
                hit = self.cache.get((snap_id, *key))
                if hit is not None:
                    self.served += 1
                    return hit[0], hit[1], hit[2], {"X-Kubeledger-Cache": "hit"}
        # single flight: identical requests arriving together share one execution (and one worker slot)
        flight_key = (snap_id, *key) if snap_id is not None else None
        if flight_key is not None and flight_key in self._inflight:
            self.served += 1
            status, body, ctype, headers = await asyncio.shield(self._inflight[flight_key])
            return status, body, ctype, {**headers, "X-Kubeledger-Cache": "shared"}
        fut: asyncio.Future | None = None
        if flight_key is not None:
            fut = asyncio.get_running_loop().create_future()
            self._inflight[flight_key] = fut
        try:
            reply, used_id = await self._execute(request, route, params)
            result = out(reply)
            if reply.status == 200 and reply.cacheable and used_id is not None:
                self.cache.put((used_id, *key), result[:3])
        except BaseException as exc:
            if fut is not None and not fut.done():
                fut.set_result(out(self._retry(f"the shared query failed ({type(exc).__name__})")))
            raise
        finally:
            if flight_key is not None:
                self._inflight.pop(flight_key, None)
        if fut is not None and not fut.done():
            # followers get the leader's answer, except a disconnect that concerned the leader alone
            fut.set_result(result if reply.status != 503 or "disconnected" not in str(reply.payload) else
                           out(self._retry("the shared query was cancelled")))
        return result

    async def _handle_write(self, request: Request, route: Route) -> Reply:
        """A write route: gate, POST only, a bounded JSON object, then the write under the query admission."""
        if route.gate is not None:
            refused = route.gate(request.headers)
            if refused is not None:
                return refused
        if request.method != "POST":
            r = error_reply(405, f"method: {request.method} is not allowed; use POST with a JSON body")
            r.headers["Allow"] = "POST"
            return r
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return error_reply(400, f"body: {declared} bytes is not allowed; at most {MAX_BODY_BYTES} bytes of JSON")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                return error_reply(400, f"body: more than {MAX_BODY_BYTES} bytes is not allowed; send a small JSON "
                                        "object")
        try:
            payload = json.loads(bytes(body).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):  # 16 KiB of '[' nests past the parser's depth
            payload = None
        if not isinstance(payload, dict):
            return error_reply(400, 'body: not a JSON object; send one, e.g. {"id": "<recommendation id>", '
                                    '"reason": "…"} with Content-Type: application/json')
        write = route.write
        reply, _ = await self._execute(request, Route(fn=lambda _cur, _params: write(payload), needs_snapshot=False),
                                       {})
        return reply

    # -- execution ------------------------------------------------------------------------------------------

    def _slots_async(self) -> asyncio.Semaphore:
        if self._async_slots is None:
            self._async_slots = asyncio.Semaphore(self.limits.max_running)
        return self._async_slots

    def _retry(self, why: str) -> Reply:
        r = error_reply(503, f"{why}; retry after {self.limits.retry_after_s} s")
        r.headers["Retry-After"] = str(self.limits.retry_after_s)
        return r

    def _overloaded(self, why: str) -> Reply:
        self.rejected += 1
        r = error_reply(503, f"the API is busy ({why}); retry after {self.limits.retry_after_s} s",
                        running=self.running, queued=self.queued)
        r.headers["Retry-After"] = str(self.limits.retry_after_s)
        return r

    async def _execute(self, request: Request, route: Route, params: dict[str, str]) -> tuple[Reply, str | None]:
        slots = self._slots_async()
        if slots.locked():
            if self.queued >= self.limits.max_queued:
                return self._overloaded(f"{self.running} queries running and {self.queued} waiting"), None
            self.queued += 1
            waiter = asyncio.ensure_future(slots.acquire())
            try:
                done, _ = await asyncio.wait({waiter}, timeout=self.limits.queue_wait_s)
                if not done:
                    waiter.cancel()
                    try:
                        await waiter
                    except asyncio.CancelledError:
                        return self._overloaded(f"waited {self.limits.queue_wait_s:g} s for a query slot"), None
                    # acquired just as the wait ended: go on with the slot
            finally:
                self.queued -= 1
        else:
            await slots.acquire()
        self.running += 1
        running = _Running()
        try:
            loop = asyncio.get_running_loop()
            fut = loop.run_in_executor(self.executor, self._work, route, params, running)
            watcher = asyncio.ensure_future(_wait_disconnect(request))
            try:
                done, _ = await asyncio.wait({fut, watcher}, timeout=self.limits.query_timeout_s,
                                             return_when=asyncio.FIRST_COMPLETED)
                if fut not in done:
                    running.interrupt()
                    if watcher in done:
                        self.disconnects += 1
                        why = "client disconnected"
                    else:
                        self.timeouts += 1
                        why = f"query took longer than {self.limits.query_timeout_s:g} s"
                    try:
                        await fut  # the interrupted query ends within milliseconds; its slot is then free
                    except Exception:  # noqa: BLE001 - the interruption itself
                        pass
                    r = error_reply(503, f"{why}; it was stopped. Narrow the window or the aggregation, or "
                                         f"retry after {self.limits.retry_after_s} s")
                    r.headers["Retry-After"] = str(self.limits.retry_after_s)
                    return r, None
                return fut.result()
            finally:
                watcher.cancel()
        finally:
            self.running -= 1
            slots.release()
            self.served += 1

    def _work(self, route: Route, params: dict[str, str], running: _Running) -> tuple[Reply, str | None]:
        if running.cancelled:
            return error_reply(503, "cancelled"), None
        if not route.needs_snapshot:
            return self._safe(route, None, params), None
        try:
            with self.pool.lease() as snap:
                cur = snap.con.cursor()
                with running.lock:
                    running.cursor = cur
                try:
                    return self._safe(route, cur, params), snap.id
                finally:
                    with running.lock:
                        running.cursor = None
                    cur.close()
        except ServingUnavailable as exc:
            r = error_reply(503, exc.reason)
            r.headers["Retry-After"] = str(exc.retry_after_s)
            return r, None

    def _safe(self, route: Route, cur: Any, params: dict[str, str]) -> Reply:
        try:
            return route.fn(cur, params)
        except QueryError as exc:
            return error_reply(exc.status, exc.message)
        except duckdb.InterruptException:
            return error_reply(503, "query interrupted")
        except duckdb.OutOfMemoryException:
            r = error_reply(503, f"the query needs more memory than the API's cap ({self.limits.memory_limit}); "
                                 "narrow the window or aggregate more coarsely")
            r.headers["Retry-After"] = str(self.limits.retry_after_s)
            return r
        except Exception as exc:  # a bug: say so without leaking a traceback
            log.exception("request failed: %s", params)
            return error_reply(500, f"internal error ({type(exc).__name__}); see the server log")

    # -- fixed answers --------------------------------------------------------------------------------------

    def not_found(self, path: str) -> Reply:
        return error_reply(404, f"{path}: no such endpoint; kubeledger serves "
                           + ", ".join(sorted([*self.routes, "/healthz", "/readyz"])) + " (docs/API.md)")

    def readyz(self) -> Reply:
        """Ready = a serving snapshot can be opened (leased) now; else 503 with the reason."""
        try:
            with self.pool.lease() as snap:
                return Reply(200, {"code": 200, "status": "ready", "snapshotId": snap.id}, cacheable=False)
        except ServingUnavailable as exc:
            r = error_reply(503, exc.reason, status="unavailable")
            r.headers["Retry-After"] = str(exc.retry_after_s)
            return r

    def healthz(self) -> Reply:
        health = self.pool.health()
        body: dict[str, Any] = {
            "code": 200 if health["servable"] else 503,
            # degraded: servable, but a snapshot problem or the newest day rests on fallbacks (health["sources"])
            "status": "unavailable" if not health["servable"] else
                      ("degraded" if health["problem"] or health["sources"]["status"] == "degraded" else "ok"),
            **health,
            "running": self.running, "queued": self.queued, "served": self.served, "rejected": self.rejected,
            "timeouts": self.timeouts, "disconnects": self.disconnects,
            "cache": {"hits": self.cache.hits, "misses": self.cache.misses},
            "limits": {"maxRunning": self.limits.max_running, "maxQueued": self.limits.max_queued,
                       "queryTimeoutSeconds": self.limits.query_timeout_s, "memoryLimit": self.limits.memory_limit,
                       "maxConnections": self.limits.max_connections,
                       "maxConnectionsPerClient": self.limits.max_connections_per_client,
                       "requestTimeoutSeconds": self.limits.request_timeout_s},
        }
        if self.extra:
            body.update(self.extra())
        # the sources' messages come from their errors: redacted again here, in case a server echoed a secret
        r = Reply(body["code"], redact_data(body), cacheable=False)
        if not health["servable"]:
            r.headers["Retry-After"] = "5"
        return r


async def _wait_disconnect(request: Request) -> None:
    """Returns when the client goes away (uvicorn sends http.disconnect); never for a client that stays."""
    receive = request.receive
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            return
