"""Integration fixtures: a real Prometheus (Debian 2.42 binaries) serving a backfilled scenario."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.fixtures.pipeline_workdir import built_once, run_temp
from tests.fixtures.ports import free_port
from tests.fixtures.prom_coverage import coverage_clusters
from tests.fixtures.prom_fleet import fleet_clusters
from tests.fixtures.prom_scenario import write_scenario

PROM_CONFIG = "global:\n  scrape_interval: 1m\nscrape_configs: []\n"  # no scrape jobs: only the backfill


@dataclass
class PromServer:
    url: str
    expected: dict[str, dict[str, Any]]  # cluster label value -> known values
    tsdb: Path


def _binaries() -> tuple[str, str] | None:
    prom, tool = shutil.which("prometheus"), shutil.which("promtool")
    if prom and tool:
        return prom, tool
    msg = ("prometheus/promtool not on PATH; install with scripts/ci/setup_prometheus.sh "
           "(Debian package `prometheus`)")
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)
    return None


def _backfilled_blocks(tool: str, data: Path, shared: Path) -> Path:
    """promtool's TSDB blocks of `data`, built once per pytest run and shared by the pytest-xdist workers (a file
    lock makes the others wait for the first); each worker copies them into its own TSDB folder, since a Prometheus
    locks its data folder. The backfill takes minutes on a loaded 2-core runner: once, not once per worker."""
    digest = hashlib.sha256(data.read_bytes()).hexdigest()[:16]
    return built_once(shared, f"prom-blocks-{digest}", lambda work: subprocess.run(
        [tool, "tsdb", "create-blocks-from", "openmetrics", str(data), str(work)],
        check=True, capture_output=True, timeout=600))  # minutes on a loaded 2-core runner


@pytest.fixture(scope="session")
def prometheus_scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromServer]:
    """Writes the scenario (clusters `small` and `big` = small + 40 filler pods, plus the two clusters of
    tests/fixtures/prom_fleet.py and the legacy-ksm cluster of tests/fixtures/prom_coverage.py), backfills it into
    one TSDB (once per pytest run, shared by the workers) and serves it: one Prometheus per session (per worker)."""
    bins = _binaries()
    assert bins is not None
    prom, tool = bins
    root = tmp_path_factory.mktemp("prom")
    data = root / "scenario.om"
    expected = write_scenario(data, {"small": 0, "big": 40, **fleet_clusters(), **coverage_clusters()})
    tsdb = root / "tsdb"
    shutil.copytree(_backfilled_blocks(tool, data, run_temp(tmp_path_factory)), tsdb)
    cfg = root / "prom.yml"
    cfg.write_text(PROM_CONFIG)
    port = free_port()
    log = (root / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [prom, f"--config.file={cfg}", f"--storage.tsdb.path={tsdb}", "--storage.tsdb.retention.time=100y",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {proc.returncode}; see {root / 'prometheus.log'}")
            try:
                if requests.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"prometheus not ready after 30 s; see {root / 'prometheus.log'}")
            time.sleep(0.2)
        yield PromServer(url=url, expected=expected, tsdb=tsdb)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        log.close()
