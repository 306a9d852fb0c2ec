"""The console stays short (stage lines, plain progress without a terminal), the log file keeps everything and
only the newest LOGS_KEPT files are kept."""

from __future__ import annotations

import io
import logging
import os
import time
from types import SimpleNamespace

import pytest

from pipelines import progress, progress_display
from pipelines.progress import DBT_LOGGER, RUN_LOGGER, Reporter, capture_stdout, new_log_file, start_logging


def test_log_files_are_bounded(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    for i in range(25):
        old = folder / f"kubeledger-2026010{i:02d}-1.log"
        old.write_text("x")
        os.utime(old, (time.time() - 1000 + i, time.time() - 1000 + i))
    path = new_log_file(folder, keep=20)
    logs = sorted(folder.glob("kubeledger-*.log"))
    assert len(logs) == 20 and path in logs
    assert not (folder / "kubeledger-202601000-1.log").exists()  # the oldest went first


def test_plain_stage_lines_and_progress(monkeypatch):
    out, err = io.StringIO(), io.StringIO()
    r = Reporter(out, err, live=False)
    monkeypatch.setattr(progress_display, "PLAIN_PROGRESS_EVERY_S", 0.0)
    r.start_stage("extract", total=48, unit="hours")
    r.advance("extract", done=24)
    r.set_status("extract", "ok", "48 hours, 1 cluster")
    r.start_stage("transform")  # finishes extract
    r.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "  extract: 24 of 48 hours"
    assert lines[1].startswith("  extract: ok in ") and lines[1].endswith(" s (48 hours, 1 cluster)")
    assert lines[2].startswith("  transform: ok in ")
    assert err.getvalue() == ""


def test_dbt_output_goes_to_the_log_and_drives_progress(tmp_path):
    settings = SimpleNamespace(warehouse_path=tmp_path / "wh" / "kubeledger.duckdb", source_file=None)
    out, err = io.StringIO(), io.StringIO()
    r = Reporter(out, err, live=False)
    session = start_logging(settings, r, verbose=False, argv=["test"])
    try:
        r.start_stage("transform", unit="dbt nodes")
        with capture_stdout():
            print("\x1b[0m1 of 3 START sql view model staging.stg_a ............ [RUN]")
            print("1 of 3 OK created sql view model staging.stg_a ............ [\x1b[32mOK\x1b[0m in 0.1s]")
            print("2 of 3 PASS not_null_stg_a_cluster ............ [PASS in 0.1s]")
            print("3 of 3 WARN 2 unique_stg_a ............ [WARN 2 in 0.1s]")
        r.set_status("transform", "ok", r.observer.dbt_detail())
        # a run's warning that nobody can act on stays in the file; an actionable one is shown
        run = logging.getLogger(RUN_LOGGER)
        run.warning("Logging an `AssetObservation` instead of an `AssetCheckResult` for dbt test `source_x`.",
                    extra={"dagster_meta": {"orig_message": "Logging an `AssetObservation` instead of an "
                                            "`AssetCheckResult` for dbt test `source_x`.", "step_key": "dbt_daily",
                                            "dagster_event": None}})
        run.warning("no series for kube_pod_labels",
                    extra={"dagster_meta": {"orig_message": "no series for kube_pod_labels",
                                            "step_key": "raw_metrics", "dagster_event": None}})
        logging.getLogger("dagster.builtin").warning("library notice")
        r.close()
    finally:
        session.close()
    assert r.observer.dbt_total == 3 and r.observer.models == 1
    assert out.getvalue().splitlines()[0].startswith("  transform: ok in ")
    assert "(1 model, 2 tests: 1 warn)" in out.getvalue()
    shown = err.getvalue()
    assert "warning: dbt: 3 of 3 WARN 2 unique_stg_a" in shown
    assert "warning: raw_metrics: no series for kube_pod_labels" in shown
    assert "AssetObservation" not in shown and "library notice" not in shown
    text = session.path.read_text()
    assert session.path.parent == tmp_path / "wh" / "state" / "logs"
    for fragment in ("START sql view model staging.stg_a", "PASS not_null_stg_a_cluster", "AssetObservation",
                     "library notice", "no series for kube_pod_labels"):
        assert fragment in text, fragment
    assert "\x1b[" not in text
    # handlers are gone afterwards
    assert all(h is not r.observer for h in logging.getLogger(DBT_LOGGER).handlers)


def test_verbose_shows_everything(tmp_path):
    settings = SimpleNamespace(warehouse_path=tmp_path / "kubeledger.duckdb", source_file=None)
    out, err = io.StringIO(), io.StringIO()
    r = Reporter(out, err, live=False)
    session = start_logging(settings, r, verbose=True, argv=["test"])
    try:
        with capture_stdout():
            print("Running with dbt=1.11")
        logging.getLogger("dagster.builtin").debug("a debug line")
    finally:
        r.close()
        session.close()
    assert "Running with dbt=1.11" in out.getvalue() and "a debug line" in out.getvalue()


@pytest.mark.parametrize("job, step, stage", [
    ("reference", "dbt_reference", "reference"), ("extract_hourly", "raw_metrics", "extract"),
    ("daily_warehouse", "dbt_daily", "transform"), ("daily_warehouse", "serving__warehouse", "publish"),
    ("daily_warehouse", "marts__fct_cluster_daily_hour_coverage", "checks"),
])
def test_stage_of(job, step, stage):
    assert progress.stage_of(job, step) == stage
