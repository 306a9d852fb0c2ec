"""The opt-in decision routes (routes/decisions.py, docs/API.md "Recording decisions") on the real server, over a copy
of the published demo warehouse every integration test shares (tests/fixtures/pipeline_workdir.py
published_workdir; no build of its own): off → 404 naming api.decisions; on, no token → 401, a wrong one → 403;
dismiss, undismiss and applied write raw.recommendation_actions exactly as `kubeledger recommend` does (the same
writer); an unknown id, a missing reason, a future or bad day, a body that is not JSON or too large → 400 naming the
parameter; the working warehouse held by another process → 503 with Retry-After naming the holder's PID.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import http.client
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from pipelines.serving.http.app import MAX_BODY_BYTES
from pipelines.serving.http.server import make_server
from pipelines.settings import ApiSettings, Settings, load_settings
from tests.fixtures.pipeline_workdir import published_workdir

pytestmark = pytest.mark.integration
TOKEN_ENV = "KUBELEDGER_TEST_DECISIONS_TOKEN"
TOKEN = "s3cret-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def serving(settings: Settings) -> Iterator[int]:
    server = make_server(settings, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def call(port: int, method: str, path: str, body: object = None, headers: dict[str, str] | None = None,
         raw: bytes | None = None) -> tuple[int, dict[str, str], dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, json.loads(resp.read())
    finally:
        conn.close()


def ledger(warehouse: Path) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute("select recommendation_id, cluster, kind, status, reason, applied_date "
                           "from raw.recommendation_actions order by recommendation_id").fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return published_workdir(tmp_path_factory, "decisions-api")


def test_decision_routes_off_token_and_writes(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    settings = load_settings(workdir / "kubeledger.yaml")
    warehouse = settings.warehouse_path
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        (rec_id, cluster, kind), (other_id, other_cluster, other_kind) = con.execute(
            "select distinct recommendation_id, cluster, kind from marts.fct_recommendation_daily "
            "order by recommendation_id limit 2").fetchall()
    finally:
        con.close()

    with serving(settings) as port:  # off by default: a 404 naming the setting, for any method, nothing written
        for method in ("POST", "GET"):
            status, _, body = call(port, method, "/kubeledger/recommendations/dismiss",
                                   {"id": rec_id, "reason": "x"}, AUTH)
            assert status == 404 and "api.decisions: true" in body["message"], body
        status, _, body = call(port, "GET", "/kubeledger/recommendations")  # the read route is unchanged
        assert status == 200
    assert ledger(warehouse) == []

    on = dataclasses.replace(settings, api=ApiSettings(decisions=True, decisions_token_env=TOKEN_ENV))
    with serving(on) as port:
        path = "/kubeledger/recommendations/dismiss"
        status, headers, body = call(port, "POST", path, {"id": rec_id, "reason": "x"})
        assert status == 401 and "Authorization" in body["message"] and headers["www-authenticate"].startswith("Bearer")
        status, _, body = call(port, "POST", path, {"id": rec_id, "reason": "x"}, {"Authorization": "Bearer nope"})
        assert status == 403 and "Authorization" in body["message"]
        status, headers, _ = call(port, "GET", path, headers=AUTH)
        assert status == 405 and headers["allow"] == "POST"

        # bad input: 400 naming the parameter, nothing written
        for payload, param in [({"id": "container_rightsizing:demo/nope", "reason": "x"}, "id"),
                               ({"id": rec_id}, "reason"), ({"id": rec_id, "reason": "  "}, "reason"),
                               ({"reason": "x"}, "id"), ({"id": rec_id, "reason": "x", "on": "2026-03-01"}, "on")]:
            status, _, body = call(port, "POST", path, payload, AUTH)
            assert status == 400 and body["message"].startswith(f"{param}:") and body["parameter"] == param, body
        for raw in (b"not json", b"[1]", b"[" * (MAX_BODY_BYTES - 1), b"\xff"):
            status, _, body = call(port, "POST", path, raw=raw, headers=AUTH)
            assert status == 400 and body["message"].startswith("body:"), body
        status, _, body = call(port, "POST", path, raw=b" " * (MAX_BODY_BYTES + 1), headers=AUTH)
        assert status == 400 and body["message"].startswith("body:") and str(MAX_BODY_BYTES) in body["message"]
        for day in ("2999-01-01", "01/03/2026"):
            status, _, body = call(port, "POST", "/kubeledger/recommendations/applied", {"id": rec_id, "on": day},
                                   AUTH)
            assert status == 400 and body["parameter"] == "on", body
        status, _, body = call(port, "POST", "/kubeledger/recommendations/undismiss", {"id": rec_id}, AUTH)
        assert status == 400 and "not dismissed" in body["message"]
        assert ledger(warehouse) == []

        # dismiss: the row the CLI writes (test_recommendation_ledger_demo.py), and the answer says when it shows
        status, _, body = call(port, "POST", path, {"id": rec_id, "reason": "owned by another team"}, AUTH)
        assert status == 200 and body["code"] == 200, body
        assert body["data"]["status"] == "dismissed" and "next build and publish" in body["data"]["shownAfter"]
        assert ledger(warehouse) == [(rec_id, cluster, kind, "dismissed", "owned by another team", None)]
        status, _, body = call(port, "POST", "/kubeledger/recommendations/undismiss", {"id": rec_id}, AUTH)
        assert status == 200 and body["data"]["status"] == "undismissed"
        assert ledger(warehouse) == []
        status, _, body = call(port, "POST", "/kubeledger/recommendations/applied",
                               {"id": other_id, "on": "2026-03-01"}, AUTH)
        assert status == 200 and body["data"]["appliedDate"] == "2026-03-01", body
        assert ledger(warehouse) == [(other_id, other_cluster, other_kind, "applied", None, dt.date(2026, 3, 1))]

        # a run holds the working warehouse: a fast 503 with Retry-After naming the holder, nothing written
        holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys; con = duckdb.connect(sys.argv[1]); "
                                   "print('held', flush=True); sys.stdin.read()", str(warehouse)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "held"
            status, headers, body = call(port, "POST", path, {"id": rec_id, "reason": "x"}, AUTH)
        finally:
            holder.stdin.close()
            holder.wait(timeout=30)
        assert status == 503 and int(headers["retry-after"]) > 0, body
        assert body["lockHolder"] == f"PID {holder.pid}" and f"PID {holder.pid}" in body["message"], body
    assert ledger(warehouse) == [(other_id, other_cluster, other_kind, "applied", None, dt.date(2026, 3, 1))]
