"""The fault matrix's shared state: the enrichment sources on real HTTP stand-ins behind fault-injecting proxies,
and ONE warm workdir per pytest run (a published demo day, a warm Dagster instance, the seeds loaded; built by the
first pytest-xdist worker that needs it) that each test copies before running `kubeledger materialize` itself.

Every test in this folder runs the real CLI job (Dagster, dbt, checks, publish) because the faults it covers broke
only there: the fetch functions' own tests passed while a datetime in the carbon failure records failed the whole
run at the asset (issue "Never lose a day to an outage").
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.days import newest_day
from tests.fixtures.boavizta_server import boavizta_url  # noqa: F401 - session fixture
from tests.fixtures.carbon_standins import (
    EM_TOKEN,
    EMState,
    WattnetState,
    electricitymaps_standin,
    wattnet_standin,
)
from tests.fixtures.fault_proxy import FaultProxy
from tests.fixtures.k8s_standin import K8sStandIn, default_cluster, deployment_with_pods, pdb
from tests.fixtures.pipeline_workdir import built_once, cli_args, cli_env, run_temp

DAY: date = newest_day()  # yesterday: inside the providers' refresh window and the snapshot reach
ZONES = {"BE", "FR", "US-MIDA-PJM"}  # the carbon zones of the 6-node demo cluster
DEMO_NODES, DEMO_PODS_PER_NODE = 6, 4
# the 6-node demo's one Deployment with >= 2 replicas all day: stateless, partly on on-demand nodes (spot_eligible)
SPOT_WORKLOAD = ("checkout", "checkout-web")
PDB_PATH = "/apis/policy/v1/poddisruptionbudgets"
TIMEOUT_S = 2  # per request, in the faults' configs: a silent server costs seconds, not minutes
PRICE_SHEET = "provider,region,instance_type,hourly_usd\naws,us-east-1,m5.large,0.0961\n"
# a FOCUS bill the price-file cells break the same way (billing.focus_path): a FinOps Foundation sample file
FOCUS_BILL = (Path(__file__).parents[1] / "fixtures" / "focus" / "aws_savings_plan_all_upfront_75pct.csv").read_text()


@dataclass
class Sources:
    em: FaultProxy
    wattnet: FaultProxy
    boavizta: FaultProxy
    k8s: FaultProxy
    k8s_api: K8sStandIn  # behind the k8s proxy: its objects, for a test that changes what the API lists

    def all(self) -> list[FaultProxy]:
        return [self.em, self.wattnet, self.boavizta, self.k8s]

    def clear(self) -> None:
        for proxy in self.all():
            proxy.clear()


def demo_pods(namespace: str, controller: str) -> list[dict[str, Any]]:
    """The pods of a Deployment of the demo cluster running in DAY's last hour as its metrics know them (uid, node,
    ReplicaSet, labels, annotations, container requests): what the apiserver of that cluster would list."""
    from pipelines.settings_models import ClusterSettings, DemoSettings
    from pipelines.sources.demo import extract_demo_hours

    cluster = ClusterSettings(name="demo", demo=DemoSettings(nodes=DEMO_NODES, pods_per_node=DEMO_PODS_PER_NODE))
    frames = extract_demo_hours(cluster, [datetime.combine(DAY, time(23))]).batches
    pods, containers = frames["pod_hours"], frames["container_hours"]
    mine = pods[(pods["namespace"] == namespace) & (pods["controller_name"] == controller)]
    return [{"name": p.pod, "uid": p.pod_uid, "node": p.node, "replicaset": p.owner_name,
             "labels": json.loads(p.labels or "{}"), "annotations": json.loads(p.annotations or "{}"),
             "containers": [(c.container, c.cpu_request_cores, c.ram_request_bytes)
                            for c in containers[containers["pod_uid"] == p.pod_uid].itertuples()]}
            for p in mine.itertuples()]


def spot_pdb(blocks: bool) -> dict[str, Any]:
    """The PodDisruptionBudget of SPOT_WORKLOAD: one disruption allowed (spot-eligible), or none (minAvailable
    100 %: an eviction would break it, so the workload stays on demand)."""
    namespace, name = SPOT_WORKLOAD
    if blocks:
        return pdb(name, namespace, {"app": name}, min_available="100%", expected=3, healthy=3, allowed=0)
    return pdb(name, namespace, {"app": name}, max_unavailable=1, expected=3, healthy=3, allowed=1)


def standin_objects() -> dict[str, list[dict[str, Any]]]:
    """The stand-in's default cluster plus SPOT_WORKLOAD as the demo's metrics know it (its pods by their uids) and
    a PDB on it that allows a disruption: the recommendations that read the API (spot_eligible) check it."""
    objects = default_cluster()
    for path, items in deployment_with_pods(SPOT_WORKLOAD[1], SPOT_WORKLOAD[0], demo_pods(*SPOT_WORKLOAD)).items():
        objects[path] = objects[path] + items
    objects[PDB_PATH] = objects[PDB_PATH] + [spot_pdb(blocks=False)]
    return objects


@pytest.fixture(scope="session")
def sources(boavizta_url: str) -> Iterator[Sources]:  # noqa: F811 - the imported session fixture
    """Electricity Maps, Wattnet, Boavizta (the real API) and the Kubernetes API, each behind its own proxy."""
    em_state = EMState(zones=set(ZONES))
    w_state = WattnetState(zones={"BE", "FR"})
    with electricitymaps_standin(em_state) as (em_url, _), wattnet_standin(w_state) as (w_url, _), \
            K8sStandIn(standin_objects()) as k8s, FaultProxy(em_url) as em, FaultProxy(w_url) as wattnet, \
            FaultProxy(boavizta_url) as boavizta, FaultProxy(k8s.url) as k8s_proxy:
        yield Sources(em=em, wattnet=wattnet, boavizta=boavizta, k8s=k8s_proxy, k8s_api=k8s)


def config_text(sources: Sources, carbon: str = "electricitymaps") -> str:
    carbon_url = sources.em.url if carbon == "electricitymaps" else sources.wattnet.url
    return f"""
warehouse: {{path: wh/kubeledger.duckdb, serving_path: wh/serving.duckdb, parquet_path: wh/parquet}}
clusters:
  - name: demo
    source: demo
    demo: {{nodes: {DEMO_NODES}, pods_per_node: {DEMO_PODS_PER_NODE}}}
    kubernetes: {{enabled: true, host: "{sources.k8s.url}", timeout_s: {TIMEOUT_S}, snapshot_reach_hours: 48}}
carbon: {{provider: {carbon}, base_url: "{carbon_url}", token_env: FAULTS_EM_TOKEN, timeout_s: {TIMEOUT_S},
          time_budget_s: 60}}
boavizta: {{url: "{sources.boavizta.url}", timeout_s: {TIMEOUT_S}, time_budget_s: 60}}
pricing: {{instance_sheet: prices.csv}}
billing: {{focus_path: bill.csv}}
"""


def materialize(workdir: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cli_args(workdir, "materialize", "--date", DAY.isoformat()), cwd=workdir,
                          env=cli_env(FAULTS_EM_TOKEN=EM_TOKEN), capture_output=True, text=True, timeout=timeout)


def query(path: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def built_template(wd: Path, config: str, run: Callable[[Path], subprocess.CompletedProcess],
                   files: dict[str, str] | None = None) -> Path:
    """`wd` with `config` (and `files`) after one good `run`: a warm Dagster instance and seeds to copy."""
    (wd / "kubeledger.yaml").write_text(config)
    for name, text in (files or {}).items():
        (wd / name).write_text(text)
    proc = run(wd)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return wd


@contextmanager
def warm_copy(template: Path, tmp_path: Path, *proxies: FaultProxy) -> Iterator[Path]:
    """A copy of a warm template for one test; the proxies are healthy again afterwards."""
    target = tmp_path / "wd"
    shutil.copytree(template, target)
    try:
        yield target
    finally:
        for proxy in proxies:
            proxy.clear()


@pytest.fixture(scope="session")
def warm_template(sources: Sources, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The day built once per pytest run with every source answering (built_once: the first worker builds it with
    its stand-ins, the others copy it; every test writes its own kubeledger.yaml, and the stand-ins answer the same
    on every worker): the warm instance and seeds every test copies. Its warehouse is also the no-fault run the
    faulted runs are compared with."""
    return built_once(run_temp(tmp_path_factory), "faults-template", lambda wd: built_template(
        wd, config_text(sources), materialize, {"prices.csv": PRICE_SHEET, "bill.csv": FOCUS_BILL}))


@pytest.fixture
def workdir(warm_template: Path, tmp_path: Path, sources: Sources) -> Iterator[Path]:
    with warm_copy(warm_template, tmp_path, *sources.all()) as wd:
        (wd / "kubeledger.yaml").write_text(config_text(sources))  # this worker's stand-ins, not the builder's
        # the copy stands where the template stood: its price rows name the copy's file (a moved file is a new
        # file, whose failure would fall back to the defaults instead of the last good load)
        con = duckdb.connect(str(wd / "wh" / "kubeledger.duckdb"))
        try:
            con.execute("update raw.price_sheet set source_file = ?", [str((wd / "prices.csv").resolve())])
        finally:
            con.close()
        yield wd
