"""The fault proxy of the fault matrix (tests/fixtures/fault_proxy.py): each mode, seen by `requests`, against a
tiny Prometheus-shaped upstream and the Electricity Maps / Wattnet stand-ins."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from tests.fixtures.carbon_standins import EM_TOKEN, electricitymaps_standin, wattnet_standin
from tests.fixtures.fault_proxy import FaultProxy

START = datetime(2026, 1, 10)
HOURS = [START + timedelta(hours=h) for h in range(6)]


def _unix(ts: datetime) -> float:
    return (ts - datetime(1970, 1, 1)).total_seconds()


class _Upstream(BaseHTTPRequestHandler):
    """Prometheus-shaped answers on /api/v1/query_range and /api/v1/query; /echo echoes the request."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
        return

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Upstream", "yes")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._route(b"")

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        self._route(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _route(self, body: bytes) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/api/v1/query_range":
            result = [{"metric": {"node": n}, "values": [[_unix(ts), "1.5"] for ts in HOURS]} for n in ("a", "b")]
            self._answer(200, {"status": "success", "data": {"resultType": "matrix", "result": result}})
        elif parts.path == "/api/v1/query":
            result = [{"metric": {"node": "a"}, "value": [_unix(HOURS[1]), "2"]},
                      {"metric": {"node": "b"}, "value": [_unix(HOURS[2]), "3"]}]
            self._answer(200, {"status": "success", "data": {"resultType": "vector", "result": result}})
        elif parts.path.startswith("/base/echo"):
            self._answer(200, {"method": self.command, "path": parts.path, "query": parse_qs(parts.query),
                               "headers": {k.lower(): v for k, v in self.headers.items()},
                               "body": body.decode()})
        else:
            self._answer(404, {"status": "error", "error": f"no route {parts.path}"})


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def proxy(upstream: str) -> Iterator[FaultProxy]:
    with FaultProxy(upstream + "/base/") as p:
        yield p


def _get(url: str, **kw: Any) -> requests.Response:
    kw.setdefault("timeout", 2)
    return requests.get(url, **kw)


def test_passes_get_and_post_through_with_headers_body_and_base_path(proxy: FaultProxy) -> None:
    assert proxy.url.endswith("/base/") and proxy.url.startswith("http://127.0.0.1:")
    r = _get(proxy.url + "echo?zone=FR&x=1", headers={"auth-token": "t0k", "Authorization": "Bearer abc"})
    assert r.status_code == 200 and r.headers["X-Upstream"] == "yes"
    got = r.json()
    assert got["path"] == "/base/echo" and got["query"] == {"zone": ["FR"], "x": ["1"]}
    assert got["headers"]["auth-token"] == "t0k" and got["headers"]["authorization"] == "Bearer abc"
    assert got["headers"]["host"] == urlsplit(proxy.upstream).netloc
    p = requests.post(proxy.url + "echo", json={"a": 1}, timeout=2)
    assert p.json()["method"] == "POST" and json.loads(p.json()["body"]) == {"a": 1}
    miss = _get(proxy.origin + "/nowhere")
    assert miss.status_code == 404 and miss.json()["error"] == "no route /nowhere"  # upstream errors unchanged
    log = proxy.requests
    assert [(e.method, e.path, e.query, e.status, e.fault) for e in log] == [
        ("GET", "/base/echo", "zone=FR&x=1", 200, None), ("POST", "/base/echo", "", 200, None),
        ("GET", "/nowhere", "", 404, None)]
    assert len(proxy.requests_for("zone=FR")) == 1


def test_refused_closes_the_port_and_clear_listens_again_on_it(proxy: FaultProxy) -> None:
    port = proxy.port
    proxy.set_fault("refused")
    assert not proxy.listening
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    with pytest.raises(requests.ConnectionError):
        _get(proxy.url + "echo")
    proxy.clear()
    assert proxy.port == port and proxy.listening
    assert _get(proxy.url + "echo").status_code == 200
    proxy.refuse()
    with pytest.raises(requests.ConnectionError):
        _get(proxy.url + "echo")
    proxy.accept()
    assert _get(proxy.url + "echo").status_code == 200


def test_refused_with_match_resets_only_matching_connections(proxy: FaultProxy) -> None:
    proxy.set_fault("refused", match="zone=FR")
    with pytest.raises(requests.ConnectionError):
        _get(proxy.url + "echo?zone=FR")
    assert _get(proxy.url + "echo?zone=DE").status_code == 200
    fr = proxy.requests_for("zone=FR")
    assert [(e.fault, e.status) for e in fr] == [("refused", None)]


def test_timeout_holds_the_connection_and_close_does_not_wait_for_it(upstream: str) -> None:
    p = FaultProxy(upstream)
    p.set_fault("timeout")
    t0 = time.monotonic()
    with pytest.raises(requests.ReadTimeout):
        _get(p.url + "/api/v1/query", timeout=0.5)
    assert time.monotonic() - t0 < 1.5
    errors: list[BaseException] = []

    def patient() -> None:
        try:
            _get(p.url + "/api/v1/query", timeout=30)
        except requests.RequestException as e:
            errors.append(e)

    client = threading.Thread(target=patient, daemon=True)
    client.start()
    deadline = time.monotonic() + 2
    while len(p.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    t0 = time.monotonic()
    p.close()  # drops the held connection: the patient client gets an error now, not in 30 s
    client.join(timeout=3)
    assert time.monotonic() - t0 < 1.5 and not client.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], requests.ConnectionError), errors


def test_timeout_hold_s_ends_without_an_answer(proxy: FaultProxy) -> None:
    proxy.set_fault("timeout", hold_s=0.1)
    with pytest.raises(requests.ConnectionError):
        _get(proxy.origin + "/api/v1/query", timeout=2)


@pytest.mark.parametrize("status", [500, 503, 401, 403, 404])
def test_status_answers_a_json_error(proxy: FaultProxy, status: int) -> None:
    proxy.set_fault("status", status=status)
    before = len(proxy.requests)
    r = _get(proxy.origin + "/api/v1/query")
    assert r.status_code == status and r.headers["Content-Type"] == "application/json"
    assert set(r.json()) == {"error", "message"}
    # this request's entry, found by what it recorded (on a loaded machine another connection may be logged too)
    assert any(e.status == status and e.fault == "status" for e in proxy.requests[before:]), proxy.requests[before:]


def test_status_429_carries_retry_after(proxy: FaultProxy) -> None:
    proxy.set_fault("status", status=429, headers={"Retry-After": "1"})
    r = _get(proxy.origin + "/api/v1/query")
    assert r.status_code == 429 and r.headers["Retry-After"] == "1"


def test_html_is_an_error_page_not_json(proxy: FaultProxy) -> None:
    proxy.set_fault("html")
    r = _get(proxy.origin + "/api/v1/query")
    assert r.status_code == 200 and r.headers["Content-Type"] == "text/html"
    assert "502 Bad Gateway" in r.text
    with pytest.raises(ValueError):
        r.json()
    proxy.set_fault("html", status=502)
    assert _get(proxy.origin + "/api/v1/query").status_code == 502


def test_wrong_shape_is_valid_json_of_another_shape(proxy: FaultProxy) -> None:
    proxy.set_fault("wrong_shape")
    assert _get(proxy.origin + "/api/v1/query").json() == {"unexpected": [1, 2, 3]}
    proxy.set_fault("wrong_shape", body=[{"no": "data"}])
    assert _get(proxy.origin + "/api/v1/query").json() == [{"no": "data"}]


def test_truncated_sends_half_the_body_under_the_full_length(proxy: FaultProxy) -> None:
    proxy.set_fault("truncated")
    with pytest.raises(requests.RequestException) as caught:
        _get(proxy.origin + "/api/v1/query_range")
    assert isinstance(caught.value, requests.exceptions.ChunkedEncodingError | requests.ConnectionError)
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=2)
    conn.request("GET", "/api/v1/query_range")
    resp = conn.getresponse()
    assert resp.status == 200
    with pytest.raises(http.client.IncompleteRead) as short:
        resp.read()
    assert len(short.value.partial) * 2 in (int(resp.headers["Content-Length"]),
                                            int(resp.headers["Content-Length"]) - 1)
    conn.close()


def test_truncated_json_is_well_framed_but_not_json(proxy: FaultProxy, upstream: str) -> None:
    full = _get(upstream + "/api/v1/query_range").content
    proxy.set_fault("truncated_json")
    r = _get(proxy.origin + "/api/v1/query_range")
    assert r.status_code == 200 and r.content == full[: len(full) // 2]
    assert int(r.headers["Content-Length"]) == len(r.content)
    with pytest.raises(ValueError):
        r.json()


def test_drop_hours_prometheus_range_and_instant(proxy: FaultProxy) -> None:
    proxy.set_fault("drop_hours", hours={HOURS[1], HOURS[2]})
    r = _get(proxy.origin + "/api/v1/query_range?query=up")
    assert int(r.headers["Content-Length"]) == len(r.content)
    for series in r.json()["data"]["result"]:
        assert [p[0] for p in series["values"]] == [_unix(HOURS[h]) for h in (0, 3, 4, 5)]
    instant = _get(proxy.origin + "/api/v1/query?query=up").json()["data"]["result"]
    assert instant == []  # both samples fell in dropped hours
    proxy.set_fault("drop_hours", hours={HOURS[1]})
    assert [s["metric"]["node"] for s in _get(proxy.origin + "/api/v1/query").json()["data"]["result"]] == ["b"]


def test_drop_hours_electricity_maps_and_wattnet() -> None:
    dropped = {HOURS[2]}
    params = {"zone": "FR", "start": "2026-01-10T00:00:00Z", "end": "2026-01-10T05:00:00Z"}
    with electricitymaps_standin() as (em_url, _), FaultProxy(em_url) as em:
        em.set_fault("drop_hours", hours=dropped)
        r = _get(em.url + "carbon-intensity/past-range", params=params, headers={"auth-token": EM_TOKEN})
        assert r.status_code == 200
        assert [p["datetime"][:13] for p in r.json()["data"]] == [f"2026-01-10T0{h}" for h in (0, 1, 3, 4, 5)]
    with wattnet_standin() as (w_url, _), FaultProxy(w_url) as wattnet:
        wattnet.set_fault("drop_hours", hours=dropped)
        r = _get(wattnet.url + "v1/footprints", params={**params, "zone": "DE"})
        values = r.json()[0]["series"][0]["values"]
        assert len(values) == 4 * 5 - 4  # 5 hours of quarters (end exclusive), hour 2's four left out
        assert not [v for v in values if v[0].startswith("2026-01-10T02")]


def test_match_limits_the_fault_and_count_lets_requests_recover(proxy: FaultProxy) -> None:
    proxy.set_fault("status", match="zone=FR", status=503, count=2)
    assert _get(proxy.url + "echo?zone=DE").status_code == 200
    assert [_get(proxy.url + "echo?zone=FR").status_code for _ in range(3)] == [503, 503, 200]
    rule = proxy.set_fault("status", match=lambda pq: pq.startswith("/api/v1/query_range"), status=500)
    assert _get(proxy.origin + "/api/v1/query_range").status_code == 500
    assert _get(proxy.origin + "/api/v1/query").status_code == 200
    assert rule.hits == 1
    proxy.clear()
    assert _get(proxy.origin + "/api/v1/query_range").status_code == 200


def test_count_on_refused_resets_the_first_connections_only(proxy: FaultProxy) -> None:
    proxy.set_fault("refused", count=1)
    assert proxy.listening
    with pytest.raises(requests.ConnectionError):
        _get(proxy.url + "echo")
    assert _get(proxy.url + "echo").status_code == 200


def test_first_matching_rule_wins_and_bad_arguments_are_refused(proxy: FaultProxy) -> None:
    proxy.set_fault("status", match="zone=FR", status=404)
    proxy.add_fault("status", status=500)
    assert _get(proxy.url + "echo?zone=FR").status_code == 404
    assert _get(proxy.url + "echo?zone=DE").status_code == 500
    with pytest.raises(ValueError):
        proxy.set_fault("slow")
    with pytest.raises(TypeError):
        proxy.set_fault("status", hours=set())


def test_an_unreachable_upstream_is_a_502(upstream: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # bound, not listening: refused
        with FaultProxy(f"http://127.0.0.1:{dead}") as p:
            r = _get(p.url + "/x")
    assert r.status_code == 502 and r.json()["error"] == "Bad Gateway"
