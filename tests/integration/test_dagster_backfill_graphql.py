"""A 3-day backfill launched the way the UI launches it: `dagster dev` (webserver + daemon) on the project's
workspace, one asset backfill over GraphQL (hourly ranges for the extract assets, daily ranges for dbt and serving,
the unpartitioned reference assets whole), run by the daemon to completion; every daily partition of the marts
and of the serving asset is materialised and the serving copy holds the three days. No dagster process survives."""

import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import requests

from pipelines import PROJECT_ROOT
from tests.fixtures.pipeline_workdir import D1, D3, cli_env, day_totals, live_processes, write_config
from tests.fixtures.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.daemon]

DAGSTER = str(Path(sys.executable).parent / "dagster")
DAILY_CHECKED = (["marts", "fct_allocation_daily"], ["marts", "fct_cluster_daily"], ["serving", "warehouse"])
TERMINAL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}
BACKFILL_DEADLINE_S = 1800

ASSET_NODES = """
query { assetNodes { assetKey { path } groupName isPartitioned isMaterializable partitionDefinition { type fmt } } }
"""
WORKSPACE = """
query { workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus
  locationOrLoadError { __typename ... on PythonError { message stack } } } } } }
"""
LAUNCH = """
mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message stack }
  ... on Error { message } } }
"""
BACKFILL = """
query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename
  ... on PartitionBackfill { id status numPartitions error { message stack } runs(limit: 50) { runId status jobName } }
  ... on Error { message } } }
"""
PARTITIONS = """
query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { __typename ... on AssetNode {
  partitionStats { numMaterialized numFailed numMaterializing }
  assetPartitionStatuses { __typename ... on TimePartitionStatuses { ranges { startKey endKey status } } } } } }
"""
RUN_LOGS = """
query($id: ID!) { logsForRun(runId: $id) { __typename ... on EventConnection { events { __typename
  ... on ExecutionStepFailureEvent { stepKey error { message } } ... on RunFailureEvent { message } } } } }
"""


def _descendants(root: int) -> set[int]:
    """Every live process below `root` (by parent pid), whatever its process group."""
    children: dict[int, list[int]] = {}
    for pid, ppid, _group in live_processes():
        children.setdefault(ppid, []).append(pid)
    out: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def _group(pgid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    out.add(int(entry))
            except (ProcessLookupError, PermissionError):
                continue
    return out


def stop_dagster(proc: subprocess.Popen) -> set[int]:
    """SIGTERM the group (dagster dev shuts its webserver, daemon and code servers down), then SIGKILL whatever is
    left in the group or below the dagster process. Returns the pids still alive at the end (should be none)."""
    tracked = _descendants(proc.pid) | _group(proc.pid) | {proc.pid}
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    tracked |= _descendants(proc.pid) | _group(proc.pid)
    for pid in tracked:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    time.sleep(0.5)
    return {pid for pid in tracked if Path(f"/proc/{pid}").exists() and not _zombie(pid)}


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2:].split()[0] == "Z"


class Dagster:
    def __init__(self, url: str, proc: subprocess.Popen, log: Path):
        self.url, self.proc, self.log = url, proc, log

    def gql(self, query: str, **variables) -> dict:
        resp = requests.post(f"{self.url}/graphql", json={"query": query, "variables": variables}, timeout=120)
        assert resp.status_code == 200, resp.text[:2000]
        body = resp.json()
        assert not body.get("errors"), body["errors"]
        return body["data"]

    def tail(self, n: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


@pytest.fixture()
def dagster_dev(tmp_path):
    workdir = tmp_path / "kl"
    config = write_config(workdir)
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = cli_env(DAGSTER_HOME=str(home), KUBELEDGER_DAGSTER_STORAGE=str(home / "storage"),
                  KUBELEDGER_CONFIG=str(config), KUBELEDGER_WAREHOUSE=str(workdir / "wh" / "kubeledger.duckdb"))
    port = free_port()
    log = tmp_path / "dagster-dev.log"
    with log.open("w") as out:
        proc = subprocess.Popen([DAGSTER, "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"), "-h", "127.0.0.1",
                                 "-p", str(port)], cwd=PROJECT_ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    dag = Dagster(f"http://127.0.0.1:{port}", proc, log)
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, f"dagster dev exited with {proc.returncode}:\n{dag.tail()}"
            try:
                if requests.get(f"{dag.url}/server_info", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, f"dagster dev not up after 240 s:\n{dag.tail()}"
            time.sleep(0.5)
        # the code location (which parses the dbt project) loads after the webserver answers
        while True:
            entries = dag.gql(WORKSPACE)["workspaceOrError"]["locationEntries"]
            if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                errors = [e["locationOrLoadError"] for e in entries
                          if e["locationOrLoadError"]["__typename"] == "PythonError"]
                assert not errors, errors
                break
            assert time.monotonic() < deadline, f"code location not loaded after 240 s:\n{dag.tail()}"
            time.sleep(1)
        yield dag, workdir
    finally:
        survivors = stop_dagster(proc)
        assert not survivors, f"dagster processes survived: {survivors}"


def _keys(start: str, end: str, hourly: bool) -> list[str]:
    step = timedelta(hours=1) if hourly else timedelta(days=1)
    fmt = "%Y-%m-%d-%H:%M" if hourly else "%Y-%m-%d"
    cur, stop = datetime.strptime(start, fmt), datetime.strptime(end, fmt)
    out = []
    while cur <= stop:
        out.append(cur.strftime(fmt))
        cur += step
    return out


def _dbt_errors(workdir: Path, runs: list[dict]) -> list[str]:
    """The error lines of the failed runs' dbt logs (dagster-dbt's message only points at them)."""
    out = []
    for run in runs:
        for log in sorted((workdir / "wh" / "state" / "dbt" / "runs").glob(f"*/*-{run['runId'][:8]}/dbt.log")):
            lines = log.read_text(errors="replace").splitlines()
            out += [f"{log.parent.name}: {line}" for line in lines if "error" in line.lower()][-40:]
    return out


def test_three_day_asset_backfill_over_graphql(dagster_dev):
    dag, workdir = dagster_dev
    nodes = dag.gql(ASSET_NODES)["assetNodes"]
    selection = []
    for node in nodes:
        key = {"path": node["assetKey"]["path"]}
        if not node["isMaterializable"]:  # the CLI's decision ledger (raw.recommendation_actions): as the UI, left out
            continue
        if not node["isPartitioned"]:
            selection.append({"assetKey": key})  # reference data: the whole asset
            continue
        fmt = node["partitionDefinition"]["fmt"] or ""
        if "%H" in fmt:
            rng = {"start": f"{D1.isoformat()}-00:00", "end": f"{D3.isoformat()}-23:00"}
        else:
            rng = {"start": D1.isoformat(), "end": D3.isoformat()}
        selection.append({"assetKey": key, "partitions": {"ranges": [rng]}})
    groups = {n["groupName"] for n in nodes}
    assert {"extract", "reference", "serving"} <= groups, groups

    t0 = time.monotonic()
    launched = dag.gql(LAUNCH, params={"partitionsByAssets": selection, "title": "test 3-day backfill"})
    result = launched["launchPartitionBackfill"]
    assert result["__typename"] == "LaunchBackfillSuccess", result
    backfill_id = result["backfillId"]

    # a hang guard, not a speed test: quiet, the backfill takes about 9 min (most of it the daemon's 30 s ticks);
    # beside the main group on a loaded 2-core runner it passed 900 s with its runs still succeeding one by one
    deadline = t0 + BACKFILL_DEADLINE_S
    while True:
        backfill = dag.gql(BACKFILL, id=backfill_id)["partitionBackfillOrError"]
        assert backfill["__typename"] == "PartitionBackfill", backfill
        if backfill["status"] in TERMINAL:
            break
        assert time.monotonic() < deadline, f"backfill still {backfill['status']} after {BACKFILL_DEADLINE_S} s: {backfill['runs']}"
        assert dag.proc.poll() is None, f"dagster dev died:\n{dag.tail()}"
        time.sleep(3)
    elapsed = time.monotonic() - t0
    failed = [r for r in backfill["runs"] if r["status"] != "SUCCESS"]
    details = [[e for e in dag.gql(RUN_LOGS, id=r["runId"])["logsForRun"].get("events", [])
                if e["__typename"] in ("ExecutionStepFailureEvent", "RunFailureEvent")] for r in failed[:2]]
    # the step's own error first: the assertion's repr of the whole backfill cuts it off
    messages = [f"{e.get('stepKey', 'run')}: {(e.get('error') or {}).get('message') or e.get('message')}"
                for events in details for e in events]
    assert backfill["status"] in {"COMPLETED", "COMPLETED_SUCCESS"} and not failed, "\n".join(
        [f"backfill {backfill['status']}, failed runs {failed}", *messages, *_dbt_errors(workdir, failed),
         dag.tail(3000)])
    assert backfill["runs"], "the backfill launched no run"
    print(f"backfill {backfill_id}: {len(backfill['runs'])} runs in {elapsed:.0f} s")

    want = set(_keys(D1.isoformat(), D3.isoformat(), hourly=False))
    for path in DAILY_CHECKED:
        node = dag.gql(PARTITIONS, key={"path": path})["assetNodeOrError"]
        assert node["__typename"] == "AssetNode", node
        stats = node["partitionStats"]
        assert stats["numMaterialized"] == 3 and stats["numFailed"] == 0, (path, stats)
        ranges = node["assetPartitionStatuses"]["ranges"]
        done = {k for r in ranges if r["status"] == "MATERIALIZED" for k in _keys(r["startKey"], r["endKey"], False)}
        assert done == want, (path, ranges)
    extract = dag.gql(PARTITIONS, key={"path": ["raw", "node_hours"]})["assetNodeOrError"]
    assert extract["partitionStats"]["numMaterialized"] == 72, extract["partitionStats"]

    serving = workdir / "wh" / "serving.duckdb"
    totals = day_totals(serving)
    assert sorted(totals) == [D1, D1 + timedelta(days=1), D3]
    for rows, cost in totals.values():
        assert rows > 20 and cost > 0
