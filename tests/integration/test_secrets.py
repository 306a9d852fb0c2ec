"""Secrets and causes (issue 31, item 3), through the real CLI.

- A password written into a URL is refused when the settings load: one line naming the file, the key and the
  `*_env` / `*_file` key to use instead, without repeating the password; nothing is written.
- Planted secrets (a token in the environment variable a `*_env` key names, which every stand-in echoes back in
  its 401 answer) are found nowhere after a real `kubeledger materialize`: not in Dagster's run storage, the
  warehouse and serving DuckDB files, the log files, the state folder, the console or the API's answers.
- A source refusing the credentials (401/403) says so on the console, naming the source, the status and the
  setting to check: Prometheus (the primary source) fails the step in that one line; the enrichment sources
  (carbon intensity, Boavizta, the Kubernetes API) publish the day flagged, each with a warning naming its setting.

The stand-in answering 401 is the fault proxy with a dead upstream: it never forwards a request.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from pipelines.days import newest_day
from tests.fixtures.api_client import get_json, serve_api
from tests.fixtures.fault_proxy import FaultProxy
from tests.fixtures.pipeline_workdir import cli_args, cli_env

pytestmark = [pytest.mark.integration]

DAY = newest_day()  # yesterday: inside the Kubernetes snapshot's reach
TOKEN = "planted-token-7f3c9e1d5b"  # in the environment only, named by the *_env keys
PASSWORD = "planted-password-4a8e2b"  # written into a URL: must be refused
DEAD_UPSTREAM = "http://127.0.0.1:9"  # discard port: the 401 rule answers before any forwarding


@pytest.fixture
def refusing() -> Iterator[FaultProxy]:
    """A server answering 401 to everything, echoing the planted token in its body (as careless servers do)."""
    with FaultProxy(DEAD_UPSTREAM) as proxy:
        proxy.set_fault("status", status=401, body=json.dumps({"error": f"invalid token {TOKEN}",
                                                               "message": f"invalid token {TOKEN}"}).encode())
        yield proxy


def _run(wd: Path, config: str, *args: str) -> subprocess.CompletedProcess:
    wd.mkdir(parents=True, exist_ok=True)
    (wd / "kubeledger.yaml").write_text(config)
    return subprocess.run(cli_args(wd, *args), cwd=wd, env=cli_env(KL_PLANTED_TOKEN=TOKEN), capture_output=True,
                          text=True, timeout=600)


def _stored_text(wd: Path) -> list[str]:
    """Files under the workdir's warehouse folder whose bytes hold a planted secret, and DuckDB text columns."""
    found = [str(p) for p in (wd / "wh").rglob("*") if p.is_file() and any(
        s.encode() in p.read_bytes() for s in (TOKEN, PASSWORD))]
    for db in (wd / "wh").glob("*.duckdb"):  # DuckDB compresses strings: ask it, not only the bytes
        con = duckdb.connect(str(db), read_only=True)
        try:
            cols = con.execute("select table_schema, table_name, column_name from information_schema.columns "
                               "where data_type = 'VARCHAR'").fetchall()
            for schema, table, col in cols:
                hit = con.execute(f'select count(*) from "{schema}"."{table}" where "{col}" like ? or "{col}" '  # noqa: S608
                                  "like ?", [f"%{TOKEN}%", f"%{PASSWORD}%"]).fetchone()[0]
                if hit:
                    found.append(f"{db.name}: {schema}.{table}.{col}")
        finally:
            con.close()
    return found


def test_prometheus_refusing_the_token_fails_the_step_in_one_line(tmp_path: Path, refusing: FaultProxy) -> None:
    config = f"""
warehouse: {{path: wh/w.duckdb, serving_path: wh/s.duckdb, parquet_path: wh/parquet}}
clusters:
  - name: small
    source: prometheus
    prometheus: {{url: "{refusing.url.rstrip('/')}", bearer_token_env: KL_PLANTED_TOKEN, retries: 0, timeout_s: 3}}
carbon: {{provider: none}}
schedule: {{start_date: "2025-01-01"}}
"""
    proc = _run(tmp_path / "wd", config, "materialize", "--date", DAY.isoformat())
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    failed = [ln for ln in out.splitlines() if ln.startswith("kubeledger: job")]
    expected = (f"step raw_metrics: Prometheus at {refusing.url.rstrip('/')} answered 401 Unauthorized: check "
                "clusters[0].prometheus.bearer_token_env (cluster small; $KL_PLANTED_TOKEN is set)")
    assert len(failed) == 1 and expected in failed[0], out[-3000:]
    assert "Traceback" not in out and TOKEN not in out
    assert _stored_text(tmp_path / "wd") == []


def test_enrichment_sources_refusing_credentials_warn_naming_the_setting_and_no_secret_is_stored(
        tmp_path: Path, refusing: FaultProxy) -> None:
    wd = tmp_path / "wd"
    base = f"""
warehouse: {{path: wh/kubeledger.duckdb, serving_path: wh/serving.duckdb, parquet_path: wh/parquet}}
clusters:
  - name: demo
    source: demo
    demo: {{nodes: 4, pods_per_node: 3}}
    prometheus: {{bearer_token_env: KL_PLANTED_TOKEN}}
    kubernetes: {{enabled: true, host: "{refusing.url}", timeout_s: 3, snapshot_reach_hours: 48}}
carbon: {{provider: electricitymaps, base_url: "{refusing.url}", token_env: KL_PLANTED_TOKEN, timeout_s: 3}}
boavizta: {{url: "{refusing.url}", timeout_s: 3}}
"""
    # a password written into a URL: refused at load, in one line, without the password; nothing written
    with_password = base.replace(f'boavizta: {{url: "{refusing.url}"',
                                 f'boavizta: {{url: "{refusing.url.replace("://", f"://kl:{PASSWORD}@")}"')
    proc = _run(wd, with_password, "materialize", "--date", DAY.isoformat())
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert "kubeledger.yaml: boavizta.url: " in lines[0] and "a password in a URL" in lines[0], lines
    assert PASSWORD not in lines[0] and not (wd / "wh").exists()

    proc = _run(wd, base, "materialize", "--date", DAY.isoformat())
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    assert "1 day published" in out, out[-3000:]
    url = refusing.url.rstrip("/")
    warnings = [ln for ln in out.splitlines() if ln.lstrip().startswith("warning:")]
    for source, needle in (
            ("carbon degraded", f"Electricity Maps at {url} answered 401 Unauthorized: check carbon.token_env "
                                "($KL_PLANTED_TOKEN is set)"),
            ("boavizta degraded", f"The Boavizta API at {url} answered 401 Unauthorized: check boavizta.url"),
            ("kubernetes (cluster demo) degraded", f"the Kubernetes API at {url} answered 401 Unauthorized: check "
                                                   "clusters[0].kubernetes.kubeconfig")):
        hits = [ln for ln in warnings if source in ln]
        assert len(hits) == 1 and needle in hits[0], (source, warnings)

    # the planted token: not on the console, in any stored file or DuckDB table, nor in the API's answers
    assert TOKEN not in out
    assert _stored_text(wd) == []
    with serve_api(wd / "wh" / "serving.duckdb") as api:
        answers = [get_json(api, "/healthz"), get_json(api, "/allocation", window=f"{DAY}T00:00:00Z,"
                                                                                  f"{DAY}T23:59:59Z")]
    text = json.dumps(answers)
    assert '"degraded"' in text and TOKEN not in text and not re.search(re.escape(PASSWORD), text)
