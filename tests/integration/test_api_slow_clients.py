"""Slow and half-sent requests cannot lock clients out, and the probes answer whatever the query load (issue 31).

- A flood of half-sent requests from one address keeps at most `max_connections_per_client` connections (the rest
  are answered 503 at once), each closed with a 408 after `request_timeout_s`; the address is served again then.
- A flood from several addresses past `max_connections` does not refuse a new client: it replaces the connection
  that has waited longest for its request.
- With every query slot busy and the queue full, /healthz, /readyz and /metrics still answer 200.

The servers run in threads on loopback; the half-open flood waits out one request timeout (5 s), the rest is quick.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from pipelines.serving.http.app import Reply, Route, ServerLimits
from pipelines.serving.http.server import ApiServer, make_server
from pipelines.settings import Settings, WarehouseSettings
from tests.fixtures.opencost_fixture import GOLDEN_DAY, build_warehouse, opencost_rows

pytestmark = pytest.mark.integration
HALF_SENT = b"GET / HTTP/1.1\r\nHost: x\r\n"  # headers never finished
PROBES = ("/healthz", "/readyz", "/metrics")
PER_CLIENT, REQUEST_TIMEOUT_S = 64, 5.0  # ServerLimits' defaults (docs/API.md), checked on /healthz below


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("slow-clients") / "serving.duckdb"
    build_warehouse(path, opencost_rows(GOLDEN_DAY))
    return path


@contextmanager
def running(serving: Path, limits: ServerLimits) -> Iterator[ApiServer]:
    server = make_server(Settings(warehouse=WarehouseSettings(serving_path=str(serving))), "127.0.0.1", 0, limits)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def get(port: int, target: str, timeout: float = 10) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", target)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def half_open(stack: ExitStack, port: int, source: str = "127.0.0.1") -> socket.socket:
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    except OSError as exc:  # another loopback address than 127.0.0.1 (Linux has all of 127/8)
        pytest.skip(f"cannot connect from {source}: {exc}")
    stack.callback(sock.close)
    sock.sendall(HALF_SENT)
    return sock


def first_bytes(sock: socket.socket, until: float) -> bytes | None:
    """What the server sent before closing (b"" if nothing), or None if it kept the connection open until `until`."""
    data = b""
    while True:
        sock.settimeout(max(0.01, until - time.monotonic()))
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            return None
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def test_a_half_sent_flood_from_one_address_is_capped_then_timed_out(serving: Path) -> None:
    limits = ServerLimits(max_connections=100)  # the default per-client cap and request timeout
    with running(serving, limits) as server, ExitStack() as stack:
        port = server.server_address[1]
        flood = [half_open(stack, port) for _ in range(150)]  # past both caps, all from 127.0.0.1
        t0 = time.monotonic()
        # past the per-client cap: an immediate 503 that says why, without waiting for the request
        refused = [first_bytes(s, time.monotonic() + 2) for s in flood[PER_CLIENT:]]
        assert all(r is not None and r.startswith(b"HTTP/1.1 503") and b"connections from" in r for r in refused), refused[:3]
        # a normal client from the same address is served again once the half-sent requests time out
        deadline = t0 + REQUEST_TIMEOUT_S + 2
        statuses = []
        while time.monotonic() < deadline and (not statuses or statuses[-1] != 200):
            statuses.append(get(port, "/model/allocation?window=1d&aggregate=namespace"))
            time.sleep(0.2)
        assert statuses[-1] == 200, f"not served within the request timeout: {statuses}"
        assert time.monotonic() - t0 <= REQUEST_TIMEOUT_S + 2
        # and every half-sent request it held was closed with a 408
        held = [first_bytes(s, deadline) for s in flood[:PER_CLIENT]]
        assert all(h is not None and h.startswith(b"HTTP/1.1 408") for h in held), held[:3]
        # nothing of them is left: the limits and counts are on /healthz
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/healthz")
        health = json.loads(conn.getresponse().read())
        conn.close()
    assert health["limits"]["maxConnectionsPerClient"] == PER_CLIENT
    assert health["limits"]["requestTimeoutSeconds"] == REQUEST_TIMEOUT_S
    assert health["connections"]["requestTimeouts"] >= PER_CLIENT
    assert health["connections"]["refused"] >= len(refused)


def test_a_flood_past_the_connection_cap_does_not_refuse_new_clients(serving: Path) -> None:
    limits = ServerLimits(max_connections=60)
    with running(serving, limits) as server, ExitStack() as stack:
        port = server.server_address[1]
        # 4 addresses × 25 half-sent requests: under the per-client cap each, past the total cap together
        for i in range(100):
            half_open(stack, port, f"127.0.1.{1 + i % 4}")
        t0 = time.monotonic()
        assert [get(port, p) for p in (*PROBES, "/model/allocation?window=1d")] == [200] * 4
        assert time.monotonic() - t0 < 3  # at once, not after a timeout


def test_probes_answer_while_every_query_slot_is_busy(serving: Path) -> None:
    limits = ServerLimits(max_running=1, max_queued=1, queue_wait_s=0.5)
    release = threading.Event()

    def slow(_cur: Any, _params: dict[str, str]) -> Reply:
        release.wait(20)
        return Reply(200, {"slow": True}, cacheable=False)

    with running(serving, limits) as server:
        port = server.server_address[1]
        server.app.routes["/slow"] = Route(fn=slow, needs_snapshot=False)
        busy = [threading.Thread(target=get, args=(port, f"/slow?n={i}", 30), daemon=True) for i in range(2)]
        try:
            for t in busy:
                t.start()
            deadline = time.monotonic() + 10
            while (server.app.running, server.app.queued) != (1, 1) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert (server.app.running, server.app.queued) == (1, 1)
            assert get(port, "/slow?n=3") == 503  # saturated: a query is refused at once
            statuses = {p: [get(port, p) for _ in range(5)] for p in PROBES}
            assert statuses == {p: [200] * 5 for p in PROBES}
        finally:
            release.set()
            for t in busy:
                t.join(30)
