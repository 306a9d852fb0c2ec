"""The API under load and under publishes, against the real `kubeledger serve` process on the 12-node demo day.

- 200 concurrent clients send 2,000 mixed requests: no 500, every answer a 200/400 or a fast 503 with Retry-After;
  the server's RSS stays under a bound; once the clients stop a fresh query answers in under a second.
- Snapshots are published every 0.5 s while requests are in flight: no request fails, and new requests see the
  new day within a second.

Bounded in count and time; loopback only. Marked `load` (and `slow`) so its time shows on its own.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import shutil
import subprocess
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from bench.api import free_port, rss_mb
from pipelines.warehouse.allocation_rollup import build_rollup
from tests.fixtures.pipeline_workdir import cli_args, cli_env, kill_group, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.load]

DAY = date(2026, 3, 1)
WINDOW = f"{DAY}T00:00:00Z,{DAY + timedelta(days=1)}T00:00:00Z"
RSS_BOUND_MB = 1536
CONFIG = ("warehouse:\n  path: wh/kubeledger.duckdb\n  serving_path: wh/serving.duckdb\n  parquet_path: wh/parquet\n"
          "clusters:\n  - name: demo\n    source: demo\n    demo: {nodes: 12, pods_per_node: 8}\n")

# the shapes a dashboard, a script and a confused client send
SHAPES: list[tuple[str, dict[str, str]]] = [
    ("/model/allocation", {"aggregate": "namespace"}),
    ("/model/allocation", {"aggregate": "controller", "shareIdle": "true"}),
    ("/model/allocation", {"aggregate": "label:app", "shareIdle": "true", "shareNamespaces": "kube-system"}),
    ("/model/allocation", {"aggregate": "pod", "accumulate": "true"}),
    ("/model/allocation", {"aggregate": "cluster,node", "idleByNode": "true", "splitIdle": "true"}),
    ("/allocation", {"aggregate": "namespace", "includeIdle": "true", "step": "1d"}),
    ("/allocation/compute", {"aggregate": "namespace", "resolution": "1m"}),
    ("/v2/allocation", {"aggregate": "namespace,pod"}),
    ("/model/allocation", {"aggregate": "namespace", "format": "csv"}),
    ("/model/allocation", {"aggregate": "nonsense"}),  # 400
    ("/model/allocation", {"window": "banana"}),  # 400
]


def _get(port: int, route: str, params: dict[str, str], timeout: float = 120) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", f"{route}?{urllib.parse.urlencode(params)}")
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    workdir = tmp_path_factory.mktemp("load")
    (workdir / "kubeledger.yaml").write_text(CONFIG)
    run_cli(workdir, "materialize", "--date", DAY.isoformat())
    port = free_port()
    proc = subprocess.Popen(cli_args(workdir, "serve", "--host", "127.0.0.1", "--port", str(port)), cwd=workdir,
                            env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if _get(port, "/healthz", {}, timeout=2)[0] == 200:
                break
        except OSError:
            time.sleep(0.2)
    else:
        kill_group(proc)
        pytest.fail("kubeledger serve did not come up: " + (proc.stderr.read().decode() if proc.stderr else ""))
    yield workdir, port, proc
    kill_group(proc)


def test_200_clients_2000_requests_no_500_bounded_rss(served: Any) -> None:
    _workdir, port, proc = served
    rng = random.Random(11)
    jobs = [SHAPES[rng.randrange(len(SHAPES))] for _ in range(2000)]
    statuses: dict[int, int] = {}
    slow_503: list[float] = []
    problems: list[str] = []
    peak = [0.0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mb(proc.pid))
            time.sleep(0.1)

    def one(job: tuple[str, dict[str, str]]) -> None:
        route, extra = job
        params = {"window": WINDOW, **extra}
        t0 = time.monotonic()
        try:
            status, headers, body = _get(port, route, params)
        except OSError as exc:
            problems.append(f"{route} {extra}: {type(exc).__name__} {exc}")
            return
        took = time.monotonic() - t0
        statuses[status] = statuses.get(status, 0) + 1
        if status == 503:
            if "retry-after" not in headers:
                problems.append(f"503 without Retry-After: {body[:200]!r}")
            slow_503.append(took)
        elif status not in (200, 400):
            problems.append(f"{status} for {route} {extra}: {body[:300]!r}")
        elif status == 400 and not json.loads(body)["message"]:
            problems.append("400 without a message")

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=200) as pool:
        list(pool.map(one, jobs))
    elapsed = time.monotonic() - started
    stop.set()
    sampler.join()
    print(f"\n2000 requests by 200 clients in {elapsed:.1f} s: {statuses}; peak server RSS {peak[0]:.0f} MiB; "
          f"503s answered in p95 {sorted(slow_503)[int(len(slow_503) * .95)] if slow_503 else 0:.2f} s")
    assert not problems, problems[:5]
    assert statuses.get(500, 0) == 0
    assert statuses.get(200, 0) >= 100, statuses
    assert peak[0] < RSS_BOUND_MB, peak[0]
    # a query nobody asked before (no cache) answers fast once the crowd is gone
    t0 = time.monotonic()
    status, _, body = _get(port, "/model/allocation", {"window": WINDOW, "aggregate": "namespace,controllerKind"})
    assert status == 200, body[:300]
    assert time.monotonic() - t0 < 1.0


def _publish_copy_with_extra_day(workdir: Path, day: date) -> None:
    """What a publish does, quickly: a new snapshot file (the current one plus `day`, its rollups rebuilt), renamed
    into place."""
    serving = workdir / "wh" / "serving.duckdb"
    snap_dir = serving.parent / ".api-snapshots"
    tmp = snap_dir / f".build-{day}.duckdb"
    shutil.copyfile(serving, tmp)
    con = duckdb.connect(str(tmp))
    try:
        shift = (day - DAY).days
        con.execute("INSERT INTO marts.fct_allocation_daily SELECT * REPLACE ("
                    "CAST(? AS DATE) AS usage_date, window_start + to_days(?) AS window_start, "
                    "window_end + to_days(?) AS window_end) "
                    "FROM marts.fct_allocation_daily WHERE usage_date = ?", [day, shift, shift, DAY])
        build_rollup(con)  # publish rebuilds the API's rollups from the marts it copies
    finally:
        con.close()
    name = time.strftime("serving-%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time_ns() % 10**9:09d}-load.duckdb"
    os.replace(tmp, snap_dir / name)


def test_publishes_never_fail_requests_in_flight(served: Any) -> None:
    workdir, port, _proc = served
    stop = threading.Event()
    failures: list[str] = []
    answered = [0]

    def client() -> None:
        while not stop.is_set():
            status, _, body = _get(port, "/model/allocation", {"window": WINDOW, "aggregate": "namespace",
                                                                "shareIdle": str(random.random() < 0.5).lower()})
            answered[0] += 1
            if status not in (200, 503):
                failures.append(f"{status}: {body[:300]!r}")

    threads = [threading.Thread(target=client, daemon=True) for _ in range(9)]
    for t in threads:
        t.start()
    new_days = [DAY + timedelta(days=i) for i in range(1, 9)]
    try:
        for i, day in enumerate(new_days):  # a publish every 0.5 s
            if i:
                time.sleep(0.5)
            _publish_copy_with_extra_day(workdir, day)
        published_at = time.monotonic()
    finally:
        stop.set()
    # the newest day is visible to new requests within a second
    last = new_days[-1]
    window = f"{last}T00:00:00Z,{last + timedelta(days=1)}T00:00:00Z"
    deadline = published_at + 1.0
    seen = False
    while time.monotonic() < deadline and not seen:
        status, _, body = _get(port, "/model/allocation", {"window": window, "aggregate": "cluster"})
        seen = status == 200 and bool(json.loads(body)["data"][0]) and "warning" not in json.loads(body)
    for t in threads:
        t.join(timeout=60)
    assert not failures, failures[:5]
    assert answered[0] >= 20
    assert seen, "the last published day was not visible within a second"
