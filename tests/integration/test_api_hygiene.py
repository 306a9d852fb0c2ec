"""Small HTTP hygiene of the API server: methods, duplicate and non-ASCII parameters, idle connections, CSV cells that
a spreadsheet would run as formulas, and the JSON 404 for unknown routes."""

from __future__ import annotations

import csv
import http.client
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from pipelines.serving.http.server import make_server
from pipelines.settings import Settings, WarehouseSettings
from tests.fixtures.opencost_fixture import GOLDEN_DAY, build_warehouse, opencost_rows

pytestmark = pytest.mark.integration
WINDOW = "2024-03-10T00:00:00Z,2024-03-11T00:00:00Z"


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    path = tmp_path_factory.mktemp("hygiene") / "serving.duckdb"
    build_warehouse(path, opencost_rows(GOLDEN_DAY))
    con = duckdb.connect(str(path))
    try:  # a namespace whose name a spreadsheet would evaluate
        con.execute("UPDATE marts.fct_allocation_daily SET namespace = '=HYPERLINK(\"http://x\")' "
                    "WHERE namespace = 'namespace3'")
    finally:
        con.close()
    server = make_server(Settings(warehouse=WarehouseSettings(serving_path=str(path))), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def request(port: int, method: str, target: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, target)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "PATCH"])
def test_other_methods_are_405_with_allow(port: int, method: str) -> None:
    status, headers, body = request(port, method, f"/model/allocation?window={WINDOW}")
    assert status == 405 and headers["allow"] == "GET, HEAD"
    assert json.loads(body)["message"].startswith("method: ")


def test_head_is_answered_like_get_without_a_body(port: int) -> None:
    status, headers, body = request(port, "HEAD", f"/model/allocation?window={WINDOW}&aggregate=cluster")
    get_status, _, get_body = request(port, "GET", f"/model/allocation?window={WINDOW}&aggregate=cluster")
    assert status == get_status == 200 and body == b""
    assert int(headers["content-length"]) == len(get_body)


@pytest.mark.parametrize(("query", "param"), [
    ("aggregate=cluster&aggregate=namespace", "aggregate"),
    ("limit=1%C2%B2", "limit"),  # 1² : str.isdigit() says yes, int() says no
    ("offset=%C2%B2", "offset"),
    ("limit=%EF%BC%91", "limit"),  # full-width 1
    ("limit=%D9%A1", "limit"),  # Arabic-Indic 1
])
def test_bad_numbers_and_duplicates_are_400_naming_the_parameter(port: int, query: str, param: str) -> None:
    status, _, body = request(port, "GET", f"/model/allocation?window={WINDOW}&{query}")
    assert status == 400, body
    assert json.loads(body)["message"].startswith(f"{param}: ")


def test_unknown_routes_are_json_404(port: int) -> None:
    status, _, body = request(port, "GET", "/no/such/thing")
    assert status == 404 and "/model/allocation" in json.loads(body)["message"]


def test_csv_cells_cannot_run_as_formulas(port: int) -> None:
    status, _, body = request(port, "GET", f"/model/allocation?window={WINDOW}&aggregate=namespace&format=csv")
    assert status == 200
    rows = list(csv.reader(io.StringIO(body.decode())))
    names = [r[0] for r in rows[1:]]
    assert "'=HYPERLINK(\"http://x\")" in names
    assert not any(n.startswith(("=", "+", "-", "@")) for n in names)


def test_idle_connections_are_closed_and_do_not_hold_workers(port: int) -> None:
    idle = []
    for _ in range(50):  # half-open requests that never finish their headers
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        idle.append(s)
    try:
        t0 = time.monotonic()
        status, _, _ = request(port, "GET", f"/model/allocation?window={WINDOW}&aggregate=cluster")
        assert status == 200 and time.monotonic() - t0 < 5
        # an idle keep-alive connection is closed by the server after its keep-alive timeout
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        data = s.recv(65536)
        assert data.startswith(b"HTTP/1.1 200")
        s.settimeout(15)
        closed = False
        t0 = time.monotonic()
        while time.monotonic() - t0 < 15:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
        s.close()
        assert closed, "an idle keep-alive connection stayed open"
    finally:
        for s in idle:
            s.close()


def test_health_reports_limits(port: int) -> None:
    status, _, body = request(port, "GET", "/healthz")
    health = json.loads(body)
    assert status == 200 and health["servable"] and health["limits"]["maxRunning"] >= 2
    assert Path(health["snapshot"]).name == "serving.duckdb"
