"""PrometheusClient failure paths against a local stdlib http.server stand-in (no Prometheus needed)."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from pipelines.settings import PrometheusSettings
from pipelines.sources.base import SourceError
from pipelines.sources.prometheus import (
    PrometheusClient,
    QueryTooLargeError,
    _Query,
    _Runner,
    escape_label_value,
    escape_regex,
    regex_matcher,
    validate_label_name,
)

Reply = tuple[int, dict[str, str], bytes]


def ok(data: Any, warnings: list[str] | None = None) -> Reply:
    body: dict[str, Any] = {"status": "success", "data": data}
    if warnings:
        body["warnings"] = warnings
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


def err(status: int, etype: str, msg: str) -> Reply:
    return status, {"Content-Type": "application/json"}, \
        json.dumps({"status": "error", "errorType": etype, "error": msg}).encode()


MATRIX = {"resultType": "matrix", "result": []}


@dataclass
class StandIn:
    url: str = ""
    replies: list[Reply | Callable[[dict[str, Any]], Reply]] = field(default_factory=list)
    seen: list[dict[str, Any]] = field(default_factory=list)
    delay_s: float = 0.0

    def next_reply(self, req: dict[str, Any]) -> Reply:
        r = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return r(req) if callable(r) else r


@pytest.fixture
def standin() -> Iterator[StandIn]:
    state = StandIn()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            u = urlparse(self.path)
            form = {k: v[0] for k, v in parse_qs(body or u.query).items()}
            req = {"method": self.command, "path": u.path, "form": form, "headers": dict(self.headers)}
            state.seen.append(req)
            if state.delay_s:
                time.sleep(state.delay_s)
            status, headers, payload = state.next_reply(req)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            if "Content-Length" not in headers and headers.get("X-No-Length") != "1":
                self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            try:
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        do_GET = do_POST = _serve

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    yield state
    server.shutdown()
    server.server_close()


def client(url: str, **kw: Any) -> PrometheusClient:
    settings = PrometheusSettings(url=url, retries=kw.pop("retries", 2), timeout_s=kw.pop("timeout_s", 5.0))
    settings = replace(settings, **{k: v for k, v in kw.items() if k != "max_response_bytes"})
    return PrometheusClient(settings, "c1", backoff_factor=0.01,
                            max_response_bytes=kw.get("max_response_bytes", 256 * 2**20))


def test_server_down_is_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SourceError, match="cannot connect") as e:
        client(f"http://127.0.0.1:{port}", retries=1).query("up", 1.0)
    assert "c1" in str(e.value) and "'up'" in str(e.value)


def test_timeout(standin: StandIn) -> None:
    standin.replies = [ok(MATRIX)]
    standin.delay_s = 1.0
    with pytest.raises(SourceError, match="timed out"):
        client(standin.url, retries=0, timeout_s=0.2).query("up", 1.0)


def test_401_names_the_status(standin: StandIn) -> None:
    standin.replies = [(401, {"Content-Type": "text/plain"}, b"Unauthorized")]
    with pytest.raises(SourceError, match="answered 401 Unauthorized: check clusters") as e:
        client(standin.url).query("up", 1.0)
    assert str(e.value).startswith(f"Prometheus at {standin.url.rstrip('/')} answered 401 Unauthorized"), e.value
    assert len(standin.seen) == 1


@pytest.mark.parametrize(("status", "etype"), [(400, "bad_data"), (422, "execution")])
def test_bad_data_and_422_are_not_retried(standin: StandIn, status: int, etype: str) -> None:
    standin.replies = [err(status, etype, 'parse error at char 5: unexpected "}"')]
    with pytest.raises(SourceError) as e:
        client(standin.url, retries=3).query("up{", 1.0)
    msg = str(e.value)
    assert f"HTTP {status} {etype}" in msg and "unexpected" in msg and "c1" in msg and "up{" in msg
    assert len(standin.seen) == 1


def test_503_then_success_is_retried(standin: StandIn) -> None:
    standin.replies = [err(503, "unavailable", "overloaded"), (503, {"Retry-After": "0"}, b"busy"),
                       ok({"resultType": "vector", "result": []})]
    res = client(standin.url, retries=3).query("up", 1.0)
    assert res.result_type == "vector"
    assert len(standin.seen) == 3


def test_throttling_400_is_retried_like_429(standin: StandIn) -> None:
    standin.replies = [(400, {}, b'{"message":"ThrottlingException: rate exceeded"}'), ok(MATRIX)]
    assert client(standin.url, retries=2).query_range("up", 1, 2, 1).result_type == "matrix"
    assert len(standin.seen) == 2


def test_proxy_502_non_json(standin: StandIn) -> None:
    standin.replies = [(502, {"Content-Type": "text/html"}, b"<html>Bad Gateway</html>")]
    with pytest.raises(SourceError, match="HTTP 502 .*not a Prometheus JSON") as e:
        client(standin.url, retries=1).query("up", 1.0)
    assert "Bad Gateway" in str(e.value)
    assert len(standin.seen) == 2  # retried once


@pytest.mark.parametrize("declare_length", [True, False])
def test_too_large_response(standin: StandIn, declare_length: bool) -> None:
    status, headers, body = ok({"resultType": "vector", "result": [{"metric": {"x": "y" * 5000}, "value": [1, "1"]}]})
    if not declare_length:
        headers = {**headers, "X-No-Length": "1", "Connection": "close"}
    standin.replies = [(status, headers, body)]
    with pytest.raises(SourceError, match="too large"):
        client(standin.url, max_response_bytes=1000).query("up", 1.0)


def test_malformed_json(standin: StandIn) -> None:
    standin.replies = [(200, {"Content-Type": "application/json"}, b'{"status": "succ')]
    with pytest.raises(SourceError, match="malformed JSON"):
        client(standin.url).query("up", 1.0)


def test_warnings_recorded_and_time_always_sent(standin: StandIn) -> None:
    standin.replies = [ok(MATRIX, warnings=["partial response: store x unavailable"])]
    c = client(standin.url)
    c.query_range("up", 100, 200, 50)
    c.query("up", 123.5)
    assert c.warnings[0]["warning"].startswith("partial response") and c.warnings[0]["cluster"] == "c1"
    assert standin.seen[-1]["method"] == "POST"
    assert standin.seen[-1]["form"]["time"] == "123.5"
    assert standin.seen[0]["form"]["start"] == "100" and standin.seen[0]["form"]["step"] == "50"


def test_escaping_and_label_names() -> None:
    assert escape_label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    assert escape_regex("a.b|c*") == "a\\.b\\|c\\*"
    # regex escape first, then string escape: a literal '.' becomes \\. inside the PromQL string
    assert regex_matcher("namespace", ["team.a", "b"]) == 'namespace=~"team\\\\.a|b"'
    assert validate_label_name("cluster_1") == "cluster_1"
    for bad in ("1x", "a-b", "a.b", ""):
        with pytest.raises(ValueError):
            validate_label_name(bad)


def test_auth_headers(standin: StandIn, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    standin.replies = [ok(MATRIX)]
    monkeypatch.setenv("PROM_TOKEN", "tok-env")
    client(standin.url, bearer_token_env="PROM_TOKEN", headers={"X-Scope-OrgID": "tenant-1"}).query("up", 1)
    h = standin.seen[-1]["headers"]
    assert h["Authorization"] == "Bearer tok-env" and h["X-Scope-OrgID"] == "tenant-1"

    token_file = tmp_path / "token"
    token_file.write_text("tok-file\n")
    client(standin.url, bearer_token_file=str(token_file)).query("up", 1)
    assert standin.seen[-1]["headers"]["Authorization"] == "Bearer tok-file"

    monkeypatch.setenv("PROM_PASSWORD", "s3cret")
    client(standin.url, basic_auth_username="alice", basic_auth_password_env="PROM_PASSWORD").query("up", 1)
    expected = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    assert standin.seen[-1]["headers"]["Authorization"] == expected


def test_missing_token_file_is_a_source_error(tmp_path: Any) -> None:
    with pytest.raises(SourceError, match="bearer token file"):
        client("http://127.0.0.1:1", bearer_token_file=str(tmp_path / "nope"))


def test_service_account_token_only_to_in_cluster_https(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pipelines.sources.prometheus.client._SA_TOKEN_DIR", str(tmp_path))
    (tmp_path / "token").write_text("sa-token")
    with pytest.raises(SourceError, match="refusing to send"):
        client("http://prometheus.example.com", bearer_token_file=str(tmp_path / "token"))
    client("https://prometheus.monitoring.svc:9090", bearer_token_file=str(tmp_path / "token"))


@pytest.mark.parametrize(("version", "app", "probe", "left_open"), [
    ("2.42.0+ds", None, None, False),
    ("3.1.0", None, None, True),
    ("2.14.0", "Grafana Mimir", 1, True),   # non-Prometheus version number: probe decides
    (None, None, 2, False),                   # buildinfo missing: probe decides
])
def test_left_open_detection(standin: StandIn, version: str | None, app: str | None, probe: int | None,
                             left_open: bool) -> None:
    def route(req: dict[str, Any]) -> Reply:
        if req["path"].endswith("buildinfo"):
            if version is None:
                return 404, {}, b"404 page not found"
            data = {"version": version, **({"application": app} if app else {})}
            return ok(data)
        assert req["form"]["query"] == "count_over_time(vector(1)[1m:1m])"
        assert float(req["form"]["time"]) % 60 == 0
        return ok({"resultType": "vector", "result": [{"metric": {}, "value": [0, str(probe)]}]})

    standin.replies = [route]
    assert client(standin.url, retries=0).left_open_ranges(probe_at=1_700_000_123) is left_open


def test_too_many_samples_splits_by_namespace(standin: StandIn) -> None:
    def route(req: dict[str, Any]) -> Reply:
        q = req["form"]["query"]
        if q.startswith("count by (namespace)"):
            return ok({"resultType": "matrix", "result": [
                {"metric": {"namespace": n}, "values": [[3599, "1"]]} for n in ("a", "b", "c")]})
        if 'namespace=~"a|b|c"' in q or "namespace=~" not in q or 'namespace=~"b|c"' in q:
            return err(422, "execution", "query processing would load too many samples into memory")
        ns = q.split('namespace=~"')[1].split('"')[0]
        return ok({"resultType": "matrix", "result": [{"metric": {"namespace": ns}, "values": [[3599, "2"]]}]})

    standin.replies = [route]
    c = client(standin.url)
    runner = _Runner(c, "c1", [], "59m59s")
    q = _Query("x", lambda m: f"sum by (namespace) (up{{{', '.join(m)}}})")
    points = runner.run(q, [datetime(1970, 1, 1)])
    assert sorted(p[1]["namespace"] for p in points) == ["a", "b", "c"]
    assert runner.splits >= 2
    # a query that cannot be sharded and covers one hour surfaces the size error
    q2 = _Query("y", lambda m: "up", namespaced=False)
    with pytest.raises(QueryTooLargeError, match="too many samples"):
        runner.run(q2, [datetime(1970, 1, 1)])
