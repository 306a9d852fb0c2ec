"""`kubeledger serve`: the API app on uvicorn, with bounded connections, backlog, keep-alive and request time.

Why uvicorn + Starlette rather than the stdlib ThreadingHTTPServer: one event loop holds thousands of idle or slow
connections without a thread each (slowloris costs a socket, not a thread), client disconnects are visible (the
query is interrupted), and both are already in the stack (Dagster's webserver runs on them). Queries still run on
a small fixed pool of worker threads (app.py), since DuckDB calls block. The connections are uvicorn's h11 protocol
under connections.py: a request has `request_timeout_s` to arrive whole, each client address at most
`max_connections_per_client` connections, and at the `max_connections` cap a new connection replaces the one that
has waited longest for a request (uvicorn's `limit_concurrency` is not used: it answered every request, probes
included, 503 while the cap was full of connections that never sent a request).
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

import uvicorn

from pipelines.serving.http.app import AllocationApp, ServerLimits
from pipelines.serving.http.connections import ConnectionGuard, guarded_protocol
from pipelines.serving.query.snapshots import SnapshotPool
from pipelines.serving.routes import build_routes
from pipelines.serving.routes.metrics import attach_app
from pipelines.settings import Settings

log = logging.getLogger(__name__)
BACKLOG = 2048
MAX_HEADER_BYTES = 256 * 1024  # request line + headers; the app answers a JSON 400 past 64 KiB of URL


def make_app(settings: Settings, limits: ServerLimits | None = None) -> AllocationApp:
    limits = limits or ServerLimits()
    pool = SnapshotPool(settings.serving_path, memory_limit=limits.memory_limit)
    app = AllocationApp(pool, build_routes(settings), limits)
    attach_app(app)  # /metrics reads the app's own snapshot pool and counters
    return app


class ApiServer:
    """A bound, not yet serving API server; `serve_forever()` blocks, `shutdown()` stops it from another thread.
    Port 0 picks a free port (`server_address`)."""

    def __init__(self, settings: Settings, host: str = "127.0.0.1", port: int = 9003,
                 limits: ServerLimits | None = None) -> None:
        self.limits = limits or ServerLimits()
        self.app = make_app(settings, self.limits)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(BACKLOG)
        self.server_address: tuple[Any, ...] = self.sock.getsockname()
        self.guard = ConnectionGuard(self.limits.max_connections, self.limits.max_connections_per_client,
                                     self.limits.request_timeout_s, self.limits.retry_after_s)
        self.app.extra = self.guard.stats  # /healthz shows the connection counts
        config = uvicorn.Config(
            self.app, log_level="warning", access_log=False, lifespan="on", backlog=BACKLOG,
            timeout_keep_alive=5, timeout_graceful_shutdown=5, http=guarded_protocol(self.guard),
            h11_max_incomplete_event_size=MAX_HEADER_BYTES)
        self.server = uvicorn.Server(config)
        self._stopped = threading.Event()

    def serve_forever(self) -> None:
        try:
            self.server.run(sockets=[self.sock])
        finally:
            self._stopped.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self._stopped.wait(timeout)

    def server_close(self) -> None:
        self.sock.close()
        self.app.pool.close()
        self.app.executor.shutdown(wait=False, cancel_futures=True)



def make_server(settings: Settings, host: str = "127.0.0.1", port: int = 9003,
                limits: ServerLimits | None = None) -> ApiServer:
    return ApiServer(settings, host, port, limits)


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 9003, limits: ServerLimits | None = None) -> None:
    server = make_server(settings, host, port, limits)
    log.info("kubeledger API on http://%s:%s (serving copy %s)", host, server.server_address[1],
             settings.serving_path)
    print(f"kubeledger API on http://{host}:{server.server_address[1]} (serving copy {settings.serving_path}); "
          "Ctrl-C stops it", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
