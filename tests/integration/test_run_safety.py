"""Runs that cannot corrupt shared state: the Dagster instance is created under a lock (two CLIs starting at the
same instant on a new warehouse), a broken storage is named with its repair command, and a run uses the settings
it was launched with even when kubeledger.yaml is edited while it runs."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from dagster._core.storage.sqlite import LAST_KNOWN_STAMPED_SQLITE_ALEMBIC_REVISION

from pipelines.dagster_defs.instance import (
    InstanceError,
    instance_lock,
    open_instance,
    repair_instance,
    storage_problems,
)
from pipelines.dagster_defs.resources import pin_settings
from pipelines.settings import load_settings, settings_to_json
from tests.fixtures.pipeline_workdir import CONFIG, cli_args, cli_env

pytestmark = pytest.mark.integration

_OPEN = """
import sys, time
from pipelines.settings import load_settings
from pipelines.dagster_defs.instance import open_instance
settings = load_settings(sys.argv[1])
start_at = float(sys.argv[2])
time.sleep(max(0.0, start_at - time.time()))
open_instance(settings, log=lambda *_: None)
"""


@pytest.fixture(autouse=True)
def _own_dagster_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process instances go under each test's warehouse, not the suite's DAGSTER_HOME (scripts/test.sh sets one)."""
    for name in ("DAGSTER_HOME", "KUBELEDGER_DAGSTER_STORAGE"):
        monkeypatch.delenv(name, raising=False)


def _fresh(tmp: Path) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "kubeledger.yaml").write_text(CONFIG)
    return tmp / "kubeledger.yaml"


def test_two_processes_create_the_instance_at_the_same_instant(tmp_path: Path) -> None:
    for trial in range(3):
        cfg = _fresh(tmp_path / f"t{trial}")
        env = cli_env(PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        start_at = time.time() + 4.0  # both import Dagster first, then start together
        procs = [subprocess.Popen([sys.executable, "-c", _OPEN, str(cfg), str(start_at)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        for p in procs:
            out, err = p.communicate(timeout=180)
            assert p.returncode == 0, err[-3000:]
        home = cfg.parent / "wh" / "dagster"
        assert storage_problems(home) == []
        # and a later start works normally
        env_before = dict(os.environ)
        try:
            open_instance(load_settings(cfg), log=lambda *_: None)
        finally:
            os.environ.clear()
            os.environ.update(env_before)


def test_instance_creation_waits_for_the_lock(tmp_path: Path) -> None:
    """Deterministic half of the race test: while another process holds the instance lock, open_instance waits."""
    cfg = _fresh(tmp_path)
    home = cfg.parent / "wh" / "dagster"
    env = cli_env(PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    with instance_lock(home):
        proc = subprocess.Popen([sys.executable, "-c", _OPEN, str(cfg), "0"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(8)  # ample time to import Dagster and reach the lock
        assert proc.poll() is None, "open_instance did not wait for the lock"
        assert not list(home.rglob("*.db")), "storage was created without the lock"
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-3000:]
    assert storage_problems(home) == [] and list(home.rglob("*.db"))


def test_an_inconsistent_storage_is_named_with_its_repair_command(tmp_path: Path) -> None:
    cfg = _fresh(tmp_path)
    settings = load_settings(cfg)
    env_before = dict(os.environ)
    try:
        open_instance(settings, log=lambda *_: None)
        home = cfg.parent / "wh" / "dagster"
        dbs = [db for db in home.rglob("*.db") if _has_version_table(db)]
        assert dbs
        con = sqlite3.connect(str(dbs[0]))
        with con:
            # what the race left behind: one process stamped head, the other an older revision
            con.execute("INSERT INTO alembic_version VALUES (?)", [LAST_KNOWN_STAMPED_SQLITE_ALEMBIC_REVISION])
        con.close()
        with pytest.raises(InstanceError, match="kubeledger repair-instance"):
            open_instance(settings, log=lambda *_: None)
        assert repair_instance(home, log=lambda *_: None) == 1
        assert storage_problems(home) == []
        open_instance(settings, log=lambda *_: None)
    finally:
        os.environ.clear()
        os.environ.update(env_before)


def _has_version_table(db: Path) -> bool:
    con = sqlite3.connect(str(db))
    try:
        con.execute("SELECT version_num FROM alembic_version").fetchall()
        return True
    except sqlite3.Error:
        return False
    finally:
        con.close()


def test_a_run_is_pinned_to_its_settings(tmp_path: Path) -> None:
    cfg = _fresh(tmp_path)
    first = pin_settings(str(cfg), None, "run-1")
    cfg.write_text(CONFIG + "pricing:\n  cluster_management_fee_per_hour: 0.5\n")
    assert pin_settings(str(cfg), None, "run-1") == first  # a later step of the same run
    assert pin_settings(str(cfg), None, "run-2").pricing.cluster_management_fee_per_hour == 0.5  # a new run
    # a snapshot passed at launch wins over the file
    assert pin_settings(str(cfg), settings_to_json(first), "run-3") == first


@pytest.mark.slow
def test_config_edited_during_a_run_does_not_leak_into_it(tmp_path: Path) -> None:
    cfg = _fresh(tmp_path)
    proc = subprocess.Popen(cli_args(tmp_path, "materialize", "--date", "2026-03-01"), cwd=tmp_path, env=cli_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "reference: ok" in line:  # the run is under way: extraction and the build are still to come
            cfg.write_text(CONFIG + "pricing:\n  cluster_management_fee_per_hour: 0.5\n")
            break
    rest, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, "".join(lines) + rest[-4000:]
    con = duckdb.connect(str(tmp_path / "wh" / "kubeledger.duckdb"), read_only=True)
    try:
        overhead = con.execute("SELECT sum(overhead_cost) FROM marts.fct_cluster_daily").fetchone()[0]
    finally:
        con.close()
    assert overhead == 0, "the run used the fee written into kubeledger.yaml after it started"
