"""A `kubeledger materialize` killed with SIGKILL mid-write loses nothing that was published and blocks nothing:
the serving copy keeps the previous publication, the working warehouse recovers (DuckDB WAL) with D1 intact, and
re-running the same day completes and publishes D1 + D2 with D1 unchanged."""

import os
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest

from tests.fixtures.pipeline_workdir import (
    D1,
    D2,
    cli_args,
    cli_env,
    day_totals,
    fingerprint,
    group_alive,
    kill_group,
    published_workdir,
    run_cli,
)

pytestmark = pytest.mark.integration


def daily_build_started(wh: Path, before: set[Path]) -> bool:
    """The run's daily dbt build (in the materialize process) has started writing: a new run folder of the
    `dbt_daily` asset holds dbt's log."""
    return any(f.parent not in before for f in (wh / "state" / "dbt" / "runs" / "dbt_daily").glob("*/dbt.log"))


def publishing(wh: Path) -> bool:
    """The serving copy is being written (its temporary file exists next to the target)."""
    return any(p.name.startswith(".serving.duckdb.") and ".tmp" in p.name for p in wh.iterdir())


def kill_when(proc: subprocess.Popen, ready, after_s: float, timeout: float = 400) -> float:
    """SIGKILL the whole process group `after_s` seconds after `ready()` first holds; returns when it was killed
    (seconds since start). Fails if the process finishes before the kill point."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    seen = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"materialize finished (rc {proc.returncode}) before the kill point")
        now = time.monotonic()
        if seen is None and ready():
            seen = now
        if seen is not None and now - seen >= after_s:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            # every process of the group (dbt included) is gone: nothing finishes the write behind our back
            end = time.monotonic() + 10
            while group_alive(proc.pid) and time.monotonic() < end:
                time.sleep(0.05)
            assert not group_alive(proc.pid)
            return now - t0
        time.sleep(0.005 if seen is not None or after_s == 0 else 0.05)
    pytest.fail(f"kill point not reached in {timeout} s")
    return 0.0


@pytest.mark.parametrize("kill_point", ["dbt", "publish"])
def test_sigkill_mid_materialize_then_rerun(tmp_path_factory, kill_point):
    workdir = published_workdir(tmp_path_factory, f"crash-{kill_point}")
    wh = workdir / "wh"
    serving, working = wh / "serving.duckdb", wh / "kubeledger.duckdb"
    con = duckdb.connect(str(serving), read_only=True)
    serving_before = fingerprint(con)
    con.close()
    con = duckdb.connect(str(working), read_only=True)
    working_d1_before = fingerprint(con, D1)
    con.close()
    totals_before = day_totals(serving)
    assert sorted(totals_before) == [D1]

    daily_before = set((wh / "state" / "dbt" / "runs" / "dbt_daily").glob("*"))
    log = (workdir / f"materialize-{kill_point}.log").open("w")
    proc = subprocess.Popen(cli_args(workdir, "materialize", "--date", D2.isoformat()), cwd=workdir, env=cli_env(),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if kill_point == "dbt":
            killed_at = kill_when(proc, lambda: daily_build_started(wh, daily_before), after_s=3.0)
        else:
            killed_at = kill_when(proc, lambda: publishing(wh), after_s=0.0)
    finally:
        if proc.poll() is None or group_alive(proc.pid):
            kill_group(proc, grace=1)
        log.close()
    assert killed_at > 0

    # the serving copy opens and still holds exactly the previous publication
    con = duckdb.connect(str(serving), read_only=True)
    try:
        assert fingerprint(con) == serving_before
    finally:
        con.close()
    assert day_totals(serving) == totals_before

    # the working warehouse opens read-write (DuckDB replays or discards its WAL) with D1's marts intact
    con = duckdb.connect(str(working))
    try:
        assert fingerprint(con, D1) == working_d1_before
        assert con.execute("select count(*) from raw.node_hours").fetchone()[0] > 0
    finally:
        con.close()

    # the same command again completes: no stale lock, temp file or run record blocks it
    run_cli(workdir, "materialize", "--date", D2.isoformat())
    after = day_totals(serving)
    assert sorted(after) == [D1, D2]
    assert after[D1] == totals_before[D1]
    con = duckdb.connect(str(serving), read_only=True)
    try:
        # D1's rows in the new publication are the very rows published before the crash
        assert fingerprint(con, D1) == serving_before
    finally:
        con.close()
    con = duckdb.connect(str(serving), read_only=True)
    try:
        d1_serving_after = fingerprint(con, D1)
    finally:
        con.close()
    con = duckdb.connect(str(working), read_only=True)
    try:
        assert fingerprint(con, D1) == working_d1_before
        assert fingerprint(con, D1) == d1_serving_after  # published = built
    finally:
        con.close()
    # the crashed publish's temporary file is gone
    assert not publishing(wh), sorted(p.name for p in wh.iterdir())
