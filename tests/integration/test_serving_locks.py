"""An analyst opening the serving copy read-write (the DuckDB CLI's and Python's default) never turns the API into
500s: with published API snapshots the API is not affected at all and /healthz says who holds the BI copy; with
only a hand-built serving.duckdb the API answers 503 naming the file, the process and the fix, and so does
/healthz and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.serving.cli import run_allocation_cli
from pipelines.serving.http.server import make_server
from pipelines.settings import Settings, WarehouseSettings
from pipelines.warehouse.publish import api_snapshot_dir, publish_serving_copy
from tests.fixtures.asset_fixture import DAYS, build_asset_warehouse, window

pytestmark = pytest.mark.integration

WINDOW = window(DAYS[0], DAYS[0])
_HOLD = "import duckdb, sys, time\ncon = duckdb.connect(sys.argv[1])\nprint('held', flush=True)\ntime.sleep(600)\n"


def get(base: str, route: str, **params: Any) -> tuple[int, dict[str, str], Any]:
    url = f"{base}{route}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 - local test server
            return resp.status, dict(resp.headers), json.loads(resp.read().decode())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read().decode())


def hold_read_write(path: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def serve(serving: Path) -> tuple[Any, str]:
    server = make_server(Settings(warehouse=WarehouseSettings(serving_path=str(serving))), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture()
def published(tmp_path: Path) -> Iterator[Path]:
    working = tmp_path / "kubeledger.duckdb"
    build_asset_warehouse(working, DAYS)
    serving = tmp_path / "serving.duckdb"
    publish_serving_copy(working, serving)
    yield serving


def test_published_snapshots_make_the_api_immune(published: Path) -> None:
    assert list(api_snapshot_dir(published).glob("serving-*.duckdb"))
    holder = hold_read_write(published)
    server, base = serve(published)
    try:
        status, _, body = get(base, "/model/allocation", window=WINDOW, aggregate="cluster")
        assert status == 200 and body["data"][0], body
        status, _, health = get(base, "/healthz")
        assert status == 200 and health["servable"] and health["biCopyLockedBy"] == f"PID {holder.pid}", health
    finally:
        holder.kill()
        holder.wait()
        server.shutdown()
        server.server_close()


def test_a_locked_hand_built_copy_is_a_503_that_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    serving = tmp_path / "serving.duckdb"
    build_asset_warehouse(serving, DAYS)  # no publish: no API snapshots, the API must read this very file
    holder = hold_read_write(serving)
    server, base = serve(serving)
    try:
        status, headers, body = get(base, "/model/allocation", window=WINDOW, aggregate="cluster")
        assert status == 503, body
        assert str(serving) in body["message"] and f"PID {holder.pid}" in body["message"]
        assert "read-only" in body["message"] and "retry-after" in {k.lower() for k in headers}
        status, _, health = get(base, "/healthz")
        assert status == 503 and health["status"] == "unavailable" and str(serving) in health["problem"]
        cfg = Settings(warehouse=WarehouseSettings(serving_path=str(serving)))
        assert run_allocation_cli(["--window", WINDOW, "--aggregate", "cluster"], cfg) == 1
        err = capsys.readouterr().err
        assert "locked" in err and "Traceback" not in err
    finally:
        holder.kill()
        holder.wait()
    try:
        deadline = time.monotonic() + 5
        status = 0
        while time.monotonic() < deadline and status != 200:  # the lock is gone: served again
            status, _, body = get(base, "/model/allocation", window=WINDOW, aggregate="cluster")
            time.sleep(0.2)
        assert status == 200, body
    finally:
        server.shutdown()
        server.server_close()
