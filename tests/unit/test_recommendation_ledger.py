"""Dismiss and track (issue 27 item 6): `kubeledger recommend --dismiss/--applied/--undismiss` writes the ledger
raw.recommendation_actions of the working warehouse in one transaction, refuses in one line (unknown id, no reason,
a warehouse held by a run), and the listing, /model/savings and /kubeledger/recommendations show what the marts carry
(dismissed apart, applied with the realised saving beside the estimate), reading the serving copy only.

Fast: hand-made warehouses, `pipelines.cli.main` in process. The dbt side (the exclusion from the total, the
realised-saving arithmetic) is in the dbt unit tests ut_rec_dismissed_counts_nothing and
ut_recommendation_outcome_realised_saving; the CLI on a pipeline-built warehouse in
tests/integration/test_recommendation_ledger_demo.py.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import date, datetime
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main
from pipelines.serving.http.app import Reply
from pipelines.serving.query.recommendations import (
    COLUMNS,
    Selection,
    load_outcomes,
    load_recommendations,
    recommendation_row,
)
from pipelines.serving.routes.savings import savings_routes
from pipelines.settings import load_settings

DAY = date(2026, 3, 2)
RID = "container_rightsizing:c1/shop/deployment/api:app"
GONE = "abandoned_workload:c1/ops/deployment/old"
POOL = "idle_node_pool:c1/m5.xlarge@a"
TYPES = {"usage_date": "DATE", "applied_date": "DATE", "window_days": "INTEGER", "days_of_data": "INTEGER",
         "hours_covered": "INTEGER", "stage": "INTEGER", "is_estimated": "BOOLEAN", "days_before": "INTEGER",
         "days_after": "INTEGER"}
NUMBERS = ("_cores", "_bytes", "_per_month")


def _column_type(name: str) -> str:
    return TYPES.get(name) or ("DOUBLE" if name.endswith(NUMBERS) else "VARCHAR")


def _rec(rid: str, kind: str, saving: float, status: str | None = None, reason: str | None = None,
         applied: date | None = None) -> dict:
    row = dict.fromkeys(COLUMNS)
    row.update(usage_date=DAY, cluster="c1", recommendation_id=rid, kind=kind, target=rid.split("/", 1)[1],
               action="change it", window_days=7, days_of_data=7, hours_covered=168, evidence="{}",
               confidence="high", saving_usd_per_month=saving, saving_kwh_per_month=saving / 10,
               saving_co2e_g_per_month=saving * 10, is_estimated=False, estimation_reasons="", stage=2,
               saving_class="saving", counted_usd_per_month=0.0 if status == "dismissed" else saving,
               counted_kwh_per_month=0.0 if status == "dismissed" else saving / 10,
               counted_co2e_g_per_month=0.0 if status == "dismissed" else saving * 10, risk_fix_usd_per_month=0.0,
               risk_fix_kwh_per_month=0.0, risk_fix_co2e_g_per_month=0.0, status=status, status_reason=reason,
               applied_date=applied)
    return row


def _write_mart(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    con.execute("create schema if not exists marts")
    con.execute(f"create table marts.fct_recommendation_daily ({', '.join(f'{c} {_column_type(c)}' for c in COLUMNS)})")
    for r in rows:
        con.execute(f"insert into marts.fct_recommendation_daily values ({', '.join('?' * len(COLUMNS))})",  # noqa: S608
                    [r[c] for c in COLUMNS])


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """kubeledger.yaml and a working warehouse whose mart holds RID and POOL (no ledger table yet: an older file)."""
    (tmp_path / "kubeledger.yaml").write_text(
        "warehouse:\n  path: wh/kubeledger.duckdb\n  serving_path: wh/serving.duckdb\n"
        "clusters:\n  - name: c1\n    source: demo\n")
    (tmp_path / "wh").mkdir()
    con = duckdb.connect(str(tmp_path / "wh" / "kubeledger.duckdb"))
    _write_mart(con, [_rec(RID, "container_rightsizing", 35.5), _rec(POOL, "idle_node_pool", 140.16)])
    con.close()
    return tmp_path


def _cli(workdir: Path, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = main(["--config", str(workdir / "kubeledger.yaml"), "recommend", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _ledger(workdir: Path) -> list[tuple]:
    con = duckdb.connect(str(workdir / "wh" / "kubeledger.duckdb"), read_only=True)
    try:
        return con.execute("select recommendation_id, cluster, kind, status, reason, applied_date "
                           "from raw.recommendation_actions order by recommendation_id").fetchall()
    finally:
        con.close()


def test_dismiss_apply_and_undismiss_keep_one_row_per_id(workdir, capsys):
    code, out, err = _cli(workdir, capsys, "--dismiss", RID, "--reason", "batch peaks on month end")
    assert (code, err) == (0, ""), err
    assert out.startswith(f"recorded: {RID}: dismissed") and "next build" in out
    assert _ledger(workdir) == [(RID, "c1", "container_rightsizing", "dismissed", "batch peaks on month end", None)]

    assert _cli(workdir, capsys, "--applied", POOL, "--on", "2026-03-01")[0] == 0
    assert _cli(workdir, capsys, "--applied", RID, "--on", "2026-03-02")[0] == 0  # the latest decision replaces
    assert _ledger(workdir) == [(RID, "c1", "container_rightsizing", "applied", None, date(2026, 3, 2)),
                                (POOL, "c1", "idle_node_pool", "applied", None, date(2026, 3, 1))]

    assert _cli(workdir, capsys, "--dismiss", POOL, "--reason", "capacity for the sale")[0] == 0
    code, out, _ = _cli(workdir, capsys, "--undismiss", POOL)
    assert code == 0 and "dismissal removed" in out
    assert [r[0] for r in _ledger(workdir)] == [RID]


@pytest.mark.parametrize(("args", "words"), [
    (("--dismiss", "container_rightsizing:c1/nope", "--reason", "x"),
     ["'container_rightsizing:c1/nope'", "kubeledger recommend --format csv"]),
    (("--dismiss", RID), ["--dismiss", RID, "needs --reason"]),
    (("--dismiss", RID, "--reason", "   "), ["needs --reason"]),
    (("--undismiss", RID), [RID, "is not dismissed"]),
    (("--applied", RID, "--on", "2999-01-01"), ["--on 2999-01-01 is in the future"]),
    (("--applied", RID, "--reason", "x"), ["--reason goes with --dismiss"]),
    (("--dismiss", RID, "--applied", RID, "--reason", "x"), ["one of --dismiss"]),
    (("--on", "2026-03-01",), ["--on with --applied"]),
])
def test_refusals_are_one_line_exit_2_and_write_nothing(workdir, capsys, args, words):
    code, out, err = _cli(workdir, capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert all(w in err for w in words), err
    try:  # the table may exist (made when the warehouse was opened for writing), but holds nothing
        assert _ledger(workdir) == []
    except duckdb.CatalogException:
        pass


def test_a_warehouse_held_by_a_run_is_one_line_naming_the_lock(workdir, capsys):
    path = workdir / "wh" / "kubeledger.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('held', "
         "flush=True); time.sleep(60)", str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code, out, err = _cli(workdir, capsys, "--dismiss", RID, "--reason", "x")
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "is locked by another process" in err and f"PID {holder.pid}" in err and str(path) in err, err


def test_no_warehouse_yet_is_one_line(tmp_path, capsys):
    (tmp_path / "kubeledger.yaml").write_text("warehouse:\n  path: wh/kubeledger.duckdb\n")
    code, _, err = _cli(tmp_path, capsys, "--dismiss", RID, "--reason", "x")
    assert code == 1 and err.count("\n") == 1 and "no warehouse at" in err, err
    assert not (tmp_path / "wh" / "kubeledger.duckdb").exists()


# --- reading: the serving copy's marts carry the ledger ------------------------------------------------------

OUTCOME = {"usage_date": DAY, "cluster": "c1", "recommendation_id": GONE, "kind": "abandoned_workload",
           "target": "ops/deployment/old", "status": "applied", "reason": None, "applied_date": date(2026, 2, 26),
           "recorded_at": datetime(2026, 2, 26, 9), "estimated_on": date(2026, 2, 25), "estimated_usd_per_month": 12.0,
           "estimated_kwh_per_month": 3.0, "estimated_co2e_g_per_month": 1500.0, "days_before": 7, "days_after": 4,
           "realised_usd_per_month": 11.5, "realised_kwh_per_month": 2.5, "realised_co2e_g_per_month": 1400.0}


@pytest.fixture
def served(workdir: Path) -> Path:
    """A serving copy: RID dismissed, POOL open, and the applied GONE (no longer recommended) in the outcomes."""
    con = duckdb.connect(str(workdir / "wh" / "serving.duckdb"))
    _write_mart(con, [_rec(RID, "container_rightsizing", 35.5, status="dismissed", reason="batch peaks"),
                      _rec(POOL, "idle_node_pool", 140.16, status="open")])
    cols = ", ".join(f"{c} {'TIMESTAMP' if c == 'recorded_at' else _column_type(c)}" for c in OUTCOME)
    con.execute(f"create table marts.fct_recommendation_outcome_daily ({cols})")
    con.execute(f"insert into marts.fct_recommendation_outcome_daily values ({', '.join('?' * len(OUTCOME))})",  # noqa: S608
                list(OUTCOME.values()))
    con.close()
    return workdir


def test_listing_hides_dismissed_and_prints_realised_vs_estimated(served, capsys):
    code, out, _ = _cli(served, capsys)
    assert code == 0
    assert "shop/deployment/api:app" not in out and "m5.xlarge@a" in out  # the table names targets
    assert "1 dismissed recommendation(s) not listed (--all lists them)" in out
    assert "$140.16" in out  # the total: the dismissed row counts nothing
    assert (f"{GONE} (applied 2026-02-26): estimated $12.00, 3.000 kWh, 1.500 kgCO2e; realised $11.50, 2.500 kWh, "
            "1.400 kgCO2e over 4 day(s) after vs 7 before") in out

    code, out, _ = _cli(served, capsys, "--all")
    assert f"{RID}  reason: batch peaks" in out.split("dismissed (1, counted in no total):")[1]
    code, out, _ = _cli(served, capsys, "--format", "csv")
    assert RID not in out and "status,statusReason,appliedDate" in out.splitlines()[0]


def _get(served: Path, path: str, **params: str) -> object:
    settings = load_settings(str(served / "kubeledger.yaml"))
    route = savings_routes(settings)[path]
    con = duckdb.connect(str(served / "wh" / "serving.duckdb"), read_only=True)
    try:
        reply: Reply = route.fn(con.cursor(), {"window": "2026-03-01T00:00:00Z,2026-03-03T00:00:00Z", **params})
        return reply.payload["data"]
    finally:
        con.close()


def test_the_api_shows_the_ledger_read_only(served):
    summary = _get(served, "/model/savings")
    ours = summary["kubeledger"]
    assert ours["total"]["dismissed"] == 1 and ours["total"]["countedUsdPerMonth"] == pytest.approx(140.16)
    [outcome] = ours["outcomes"]
    assert (outcome["id"], outcome["status"], outcome["appliedDate"]) == (GONE, "applied", "2026-02-26")
    assert (outcome["estimatedUsdPerMonth"], outcome["realisedUsdPerMonth"], outcome["daysAfter"]) == (12.0, 11.5, 4)

    rows = {r["id"]: r for r in _get(served, "/kubeledger/recommendations")}
    assert (rows[RID]["status"], rows[RID]["statusReason"], rows[RID]["countedUsdPerMonth"]) == \
        ("dismissed", "batch peaks", 0.0)
    assert (rows[POOL]["status"], rows[POOL]["outcome"]) == ("open", None)


def test_marts_without_the_ledger_columns_read_as_open():
    """Days built before the ledger (no status column values) are open, and no outcome mart is no outcome."""
    con = duckdb.connect()
    _write_mart(con, [_rec(POOL, "idle_node_pool", 1.0)])
    rows, _ = load_recommendations(con, Selection())
    assert recommendation_row(rows[0])["status"] == "open" and load_outcomes(con, rows) == []
    con.close()
