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
from tests.fixtures.prom_scenario import scenario_expected, write_scenario

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


SCENARIO_SOURCES = [Path(__file__).parents[1] / "fixtures" / f"{m}.py"
                    for m in ("prom_scenario", "prom_fleet", "prom_coverage")]


def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where state built once is shared: KUBELEDGER_TEST_CACHE (scripts/test.sh points it at a folder of its own
    run, removed at its end, so the faults and spark groups reuse what the main group built), else this pytest run's
    temp folder (shared by its pytest-xdist workers)."""
    cache = os.environ.get("KUBELEDGER_TEST_CACHE")
    if not cache:
        return run_temp(tmp_path_factory)
    Path(cache).mkdir(parents=True, exist_ok=True)
    return Path(cache)


def _backfilled_blocks(tool: str, clusters: dict[str, Any], shared: Path) -> Path:
    """promtool's TSDB blocks of the scenario, built once (`shared_cache`) and shared by the pytest-xdist workers
    (a file lock makes the others wait for the first); each worker copies them into its own TSDB folder, since a
    Prometheus locks its data folder. The key is the generator's source and the clusters asked for, so the 586 MB
    OpenMetrics file is written only by the one caller that backfills it, and deleted after.
    Blocks of up to 24 h (promtool's default is 2 h): the scenario's day lands in 2 blocks instead of 12, which
    backfills in a third of the time (82 s -> 30 s measured); the samples, hence every query's answer, are the
    same."""
    key = hashlib.sha256(repr(clusters).encode())
    for source in SCENARIO_SOURCES:
        key.update(source.read_bytes())

    def build(work: Path) -> None:
        data = work.parent / f".{work.name}.om"
        try:
            write_scenario(data, clusters)
            subprocess.run([tool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h", str(data),
                            str(work)], check=True, capture_output=True, timeout=600)  # minutes on a loaded runner
        finally:
            data.unlink(missing_ok=True)

    return built_once(shared, f"prom-blocks-{key.hexdigest()[:16]}", build)


@pytest.fixture(scope="session")
def prometheus_scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromServer]:
    """The scenario (clusters `small` and `big` = small + 40 filler pods, plus the two clusters of
    tests/fixtures/prom_fleet.py and the legacy-ksm cluster of tests/fixtures/prom_coverage.py), backfilled into
    one TSDB (once, `_backfilled_blocks`) and served: one Prometheus per session (per worker)."""
    bins = _binaries()
    assert bins is not None
    prom, tool = bins
    root = tmp_path_factory.mktemp("prom")
    clusters = {"small": 0, "big": 40, **fleet_clusters(), **coverage_clusters()}
    expected = scenario_expected(clusters)
    tsdb = root / "tsdb"
    shutil.copytree(_backfilled_blocks(tool, clusters, shared_cache(tmp_path_factory)), tsdb)
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
