"""The CLI on real runs (demo cluster, temp dirs): a short console with the full detail in a log file, `rebuild`
from raw rows without any extraction, `status` on a published warehouse, dates refused fast on a warehouse with
data, and --config after the command."""

from __future__ import annotations

import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from tests.fixtures.pipeline_workdir import (
    D1,
    KUBELEDGER,
    MART_TABLES,
    cli_args,
    cli_env,
    fingerprint,
    published_workdir,
    run_cli,
    write_config,
)

pytestmark = pytest.mark.integration

MAX_DEMO_LINES = 40


def _marts(workdir: Path) -> dict:
    con = duckdb.connect(str(workdir / "wh" / "kubeledger.duckdb"), read_only=True)
    try:
        return fingerprint(con, D1)
    finally:
        con.close()


def _mart_frames(workdir: Path) -> dict[str, pd.DataFrame]:
    """Every mart's rows for D1, in a stable order (by their non-float columns)."""
    con = duckdb.connect(str(workdir / "wh" / "kubeledger.duckdb"), read_only=True)
    try:
        out = {}
        for table in MART_TABLES:
            df = con.execute(f"select * from marts.{table} where usage_date = ?", [D1]).fetchdf()  # noqa: S608
            keys = [c for c in df.columns if not pd.api.types.is_float_dtype(df[c])]
            out[table] = df.astype({c: str for c in keys}).sort_values(keys).reset_index(drop=True)
        return out
    finally:
        con.close()


def _same_marts(before: dict[str, pd.DataFrame], after: dict[str, pd.DataFrame]) -> None:
    """Equal rows; doubles within 1e-9 relative (sums of doubles depend on DuckDB's summation order, the
    project's tolerance everywhere: macros/float_tolerance.sql)."""
    assert before.keys() == after.keys()
    for table in before:
        pd.testing.assert_frame_equal(before[table], after[table], check_exact=False, rtol=1e-9, atol=1e-12,
                                      obj=table)


def _raw_rows(workdir: Path) -> tuple:
    con = duckdb.connect(str(workdir / "wh" / "kubeledger.duckdb"), read_only=True)
    try:
        return con.execute("select count(*), sum(hash(t)::hugeint) from raw.node_hours t").fetchone()
    finally:
        con.close()


def _runs_since(workdir: Path, job: str, since: float, monkeypatch) -> list:
    """Runs of `job` created after `since` (epoch s), read from the workdir's Dagster instance."""
    import dagster as dg

    home = workdir / "wh" / "dagster"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("KUBELEDGER_DAGSTER_STORAGE", str(home / "storage"))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.get_run_records(filters=dg.RunsFilter(job_name=job))
        return [r for r in records if r.create_timestamp.timestamp() >= since]


def test_demo_prints_a_short_summary_and_logs_everything(tmp_path):
    workdir = tmp_path / "demo"
    write_config(workdir)
    day = datetime.now(UTC).date() - timedelta(days=2)
    proc = subprocess.run([KUBELEDGER, "demo", "--date", day.isoformat(), "--config", str(workdir / "kubeledger.yaml")],
                          cwd=workdir, env=cli_env(), capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    lines = output.splitlines()
    assert len(lines) < MAX_DEMO_LINES, output
    for stage in ("setup", "reference", "extract", "transform", "checks", "publish"):
        assert any(ln.startswith(f"  {stage}: ok in ") for ln in lines), (stage, output)
    assert f"Top 10 namespaces on {day}" in output
    assert "AssetObservation" not in output and " DEBUG " not in output and "Running with dbt" not in output
    log_line = [ln for ln in lines if ln.startswith("log: ")]
    assert len(log_line) == 1
    log = Path(log_line[0][len("log: "):])
    assert log.parent == workdir / "wh" / "state" / "logs" and log.is_file()
    text = log.read_text()
    # the full detail: dbt's own output, every Dagster event, the notices the console leaves out
    for fragment in ("Running with dbt=", "OK created sql", "STEP_START", "STEP_SUCCESS", "ASSET_MATERIALIZATION",
                     "ASSET_CHECK_EVALUATION", "RUN_SUCCESS"):
        assert fragment in text, fragment
    assert len(text.splitlines()) > 10 * len(lines)
    # the singular reconciliation and no-negative tests are asset checks now: no "instead of an AssetCheckResult"
    # notice for them (only dbt source tests, which the extract assets own, are recorded as observations)
    notices = [ln for ln in text.splitlines() if "instead of an `AssetCheckResult`" in ln]
    assert not [ln for ln in notices if "`assert_" in ln], notices[:3]


def test_rebuild_reproduces_the_marts_from_raw_rows_without_extracting(tmp_path_factory, monkeypatch):
    workdir = published_workdir(tmp_path_factory, "rebuild")
    before, raw_before, counts_before = _mart_frames(workdir), _raw_rows(workdir), _marts(workdir)
    con = duckdb.connect(str(workdir / "wh" / "kubeledger.duckdb"))
    con.execute("delete from marts.fct_allocation_daily where usage_date = ?", [D1])  # something to rebuild
    con.close()
    started = time.time()
    proc = run_cli(workdir, "rebuild", "--start", D1.isoformat(), "--end", D1.isoformat())
    assert "extract" not in proc.stdout.replace("no extraction", ""), proc.stdout
    assert "rebuilt 1 day(s)" in proc.stdout
    _same_marts(before, _mart_frames(workdir))
    assert {t: n for t, (n, _h) in _marts(workdir).items()} == {t: n for t, (n, _h) in counts_before.items()}
    assert _raw_rows(workdir) == raw_before
    assert _runs_since(workdir, "extract_hourly", started, monkeypatch) == []  # no request to any source
    builds = _runs_since(workdir, "daily_warehouse", started, monkeypatch)
    assert len(builds) == 1 and builds[0].dagster_run.status.value == "SUCCESS"


def test_status_on_a_published_workdir_and_config_after_the_command(tmp_path_factory):
    workdir = published_workdir(tmp_path_factory, "status")
    config = str(workdir / "kubeledger.yaml")
    proc = subprocess.run([KUBELEDGER, "status", "--config", config], cwd=workdir.parent, env=cli_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert f"config: {config}" in out
    assert f"  demo: {D1} (1 day)" in out
    assert f"  {D1}: demo 24/24 h, 100%" in out
    assert "  daily_warehouse: SUCCESS" in out and "  extract_hourly: SUCCESS" in out
    assert "    checks: " in out and " 0 failed" in out
    for label in ("warehouse", "serving copy", "parquet", "dagster home", "state"):
        assert f"  {label:<13}" in out, label


def test_dates_are_refused_fast_on_a_warehouse_with_data(tmp_path_factory, monkeypatch):
    workdir = published_workdir(tmp_path_factory, "dates")
    before, raw_before = _marts(workdir), _raw_rows(workdir)
    today = datetime.now(UTC).date()
    started = time.time()
    for args in (["materialize", "--date", today.isoformat()],
                 ["materialize", "--date", (today + timedelta(days=30)).isoformat()],
                 ["materialize", "--date", "2024-12-31"],
                 ["backfill", "--start", (today - timedelta(days=2)).isoformat(), "--end", today.isoformat()]):
        t0 = time.perf_counter()
        proc = subprocess.run(cli_args(workdir, *args), cwd=workdir, env=cli_env(), capture_output=True, text=True,
                              timeout=60)
        took = time.perf_counter() - t0
        assert proc.returncode == 2 and proc.stdout == "", (args, proc.stdout, proc.stderr)
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("kubeledger: --"), proc.stderr
        assert took < 5.0, (args, took)
    assert _marts(workdir) == before and _raw_rows(workdir) == raw_before
    assert _runs_since(workdir, "extract_hourly", started, monkeypatch) == []
    assert _runs_since(workdir, "daily_warehouse", started, monkeypatch) == []
