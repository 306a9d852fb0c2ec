"""The connection bounds under the API app: uvicorn's h11 protocol with a request timeout and fair connection caps.

uvicorn bounds neither how long a client may take to send its request (its keep-alive timer restarts on every byte
and is not armed before the first request, so a half-sent request holds its connection forever) nor connections per
client, and its `limit_concurrency` answers every new request 503 once the cap is full of connections that sent
nothing, probes included. This subclass of `uvicorn.protocols.http.h11_impl.H11Protocol` (uvicorn 0.55; it uses
the protocol's `handle_events` and `on_response_complete` hooks) adds, per server (`ServerLimits`):

- A request deadline: the whole request (request line, headers and body) has to arrive within `request_timeout_s` of
  the connection opening or of the previous answer, else the connection is closed, with a 408 when part of a request
  had arrived. A request that has arrived is never cut by it: its query has its own deadline (app.py).
- At most `max_connections_per_client` open connections per client address (a proxy in front counts as one
  client); a connection beyond is answered 503 without reading its request, closed within half a second, and never
  counts towards the total.
- At most `max_connections` in all. At the cap a new connection closes the connection that has waited longest for a
  request (an idle keep-alive connection or a half-sent request), so a new client or probe is served as long as any
  connection is merely waiting; only when every connection has a request in progress is it answered 503 and closed.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter, OrderedDict
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def refusal(why: str, retry_after_s: int) -> bytes:
    """A complete 503 written before the request is read (the connection is closed right after)."""
    body = json.dumps({"code": 503, "message": f"{why}; retry after {retry_after_s} s"}).encode()
    head = (f"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {retry_after_s}"
            f"\r\nconnection: close\r\ncontent-length: {len(body)}\r\n\r\n")
    return head.encode("ascii") + body


REQUEST_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
# a refused connection is half-closed after its 503 and closed when the client closes, at the latest after this: a
# close with the client's request unread would reset the connection, and the client might never read the 503
REFUSAL_LINGER_S = 0.5


class ConnectionGuard:
    """The connections of one server: counts per client address, and those waiting for a request, longest first.
    Used on the event loop thread only."""

    def __init__(self, max_connections: int, max_per_client: int, request_timeout_s: float,
                 retry_after_s: int = 2) -> None:
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self.request_timeout_s = request_timeout_s
        self.retry_after_s = retry_after_s
        self.open = 0
        self.per_client: Counter[str] = Counter()
        self.waiting: OrderedDict[GuardedH11Protocol, None] = OrderedDict()
        self.refused = self.evicted = self.timed_out = 0

    def admit(self, conn: GuardedH11Protocol) -> str | None:
        """Count `conn` in, closing the longest-waiting connection when at the cap; else why it is refused."""
        peer = conn.peer
        if peer is not None and self.per_client[peer] >= self.max_per_client:
            self.refused += 1
            return f"more than {self.max_per_client} connections from {peer}"
        if self.open >= self.max_connections:
            if not self.waiting:
                self.refused += 1
                return f"all {self.max_connections} connections have a request in progress"
            oldest = next(iter(self.waiting))
            self.release(oldest)
            oldest.transport.close()
            self.evicted += 1
        conn.admitted = True
        self.open += 1
        if peer is not None:
            self.per_client[peer] += 1
        self.waiting[conn] = None
        return None

    def release(self, conn: GuardedH11Protocol) -> None:
        if not conn.admitted:
            return
        conn.admitted = False
        conn.cancel_request_timer()
        self.waiting.pop(conn, None)
        self.open -= 1
        if conn.peer is not None:
            self.per_client[conn.peer] -= 1
            if self.per_client[conn.peer] <= 0:
                del self.per_client[conn.peer]

    def stats(self) -> dict[str, Any]:
        """For /healthz (the limits are in its `limits`)."""
        return {"connections": {
            "open": self.open, "waitingForRequest": len(self.waiting), "clients": len(self.per_client),
            "refused": self.refused, "evicted": self.evicted, "requestTimeouts": self.timed_out}}


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol under a ConnectionGuard (`guarded_protocol` binds one per server)."""

    guard: ConnectionGuard
    admitted = False
    peer: str | None = None
    _request_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.peer = self.client[0] if self.client else None
        why = self.guard.admit(self)
        if why is None:
            self._arm_request_timer()
            return
        transport.write(refusal(why, self.guard.retry_after_s))
        if transport.can_write_eof():
            transport.write_eof()
        self._request_timer = self.loop.call_later(REFUSAL_LINGER_S, transport.close)

    def data_received(self, data: bytes) -> None:
        if self.admitted:  # a refused or evicted connection's bytes are dropped
            super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.cancel_request_timer()
        self.guard.release(self)
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        state = self.conn.their_state
        if state is not h11.IDLE:  # a request line and headers have arrived: no longer waiting
            self.guard.waiting.pop(self, None)
        if state is not h11.IDLE and state is not h11.SEND_BODY:  # the whole request has arrived
            self.cancel_request_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start the next request on this connection (pipelining)
        if not self.admitted or self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            self.guard.waiting.pop(self, None)
            self.guard.waiting[self] = None
        if state is h11.IDLE or state is h11.SEND_BODY:
            self._arm_request_timer()

    def _arm_request_timer(self) -> None:
        self.cancel_request_timer()
        self._request_timer = self.loop.call_later(self.guard.request_timeout_s, self._request_timed_out)

    def cancel_request_timer(self) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None

    def _request_timed_out(self) -> None:
        self._request_timer = None
        if self.transport.is_closing():
            return
        partial = self.conn.their_state is h11.SEND_BODY or bool(self.conn.trailing_data[0])
        if partial:
            self.guard.timed_out += 1
            if self.conn.our_state is h11.IDLE:  # the app never saw the request: say why
                self.transport.write(REQUEST_TIMEOUT)
        self.transport.close()  # nothing of a request at all: closed like an idle keep-alive connection


def guarded_protocol(guard: ConnectionGuard) -> type[GuardedH11Protocol]:
    """The protocol class for uvicorn.Config(http=...), bound to `guard`."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": guard})
