"""pipelines/sources/focus.py on small bills written here: CSV and Parquet of different FOCUS versions together, the
charge days a load replaces (and only those), and every broken bill as one 'billing' problem that keeps the rows
loaded before. In-memory DuckDB, fast."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import duckdb
import pytest

from pipelines.settings import BillingSettings, Settings
from pipelines.sources.focus import load_focus_bills
from pipelines.warehouse.connection import ensure_raw_schema

HEAD = "ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ProviderName,ServiceName,BilledCost,EffectiveCost,ListCost,Tags"


def _row(day: str, category: str = "Usage", billed: str = "1", effective: str = "1", service: str = "EC2") -> str:
    return f'{day}T00:00:00Z,{day}T01:00:00Z,{category},AWS,{service},{billed},{effective},2,"{{""team"":""a""}}"'


def _settings(path: Path, reread_days: int = 0) -> Settings:
    return Settings(billing=BillingSettings(focus_path=str(path), reread_days=reread_days))


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    ensure_raw_schema(c)
    return c


def _days(con: duckdb.DuckDBPyConnection) -> dict[date, tuple[int, float]]:
    return {r[0]: (r[1], r[2]) for r in con.execute(
        "select charge_date, count(*), sum(billed_cost) from raw.focus_charges group by 1 order by 1").fetchall()}


def test_csv_and_parquet_of_different_versions_load_together(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    bills = tmp_path / "bills"
    bills.mkdir()
    (bills / "aws.csv").write_text(HEAD + "\n" + _row("2026-02-01") + "\n")
    # FOCUS 1.3 names the provider ServiceProviderName; Parquet keeps types (timestamptz, decimal, a map of tags)
    duckdb.connect().execute(
        "copy (select timestamptz '2026-02-01 05:00:00+05' as ChargePeriodStart, 'Tax' as ChargeCategory, "
        "'Google Cloud' as ServiceProviderName, 3.5::decimal(12, 4) as BilledCost, 3.5 as EffectiveCost, "
        f"map(['team'], ['b']) as Tags) to '{bills / 'gcp.parquet'}' (format parquet)")
    summary = load_focus_bills(_settings(bills), con, date(2026, 2, 1), date(2026, 2, 2))
    assert (summary["files"], summary["rows"], summary["problems"]) == (2, 2, [])
    rows = con.execute("select provider_name, charge_category, billed_cost, tags, charge_period_start "
                       "from raw.focus_charges order by provider_name").fetchall()
    assert [r[:4] for r in rows] == [("AWS", "Usage", 1.0, '{"team":"a"}'),
                                     ("Google Cloud", "Tax", 3.5, '{"team":"b"}')]
    assert str(rows[1][4]) == "2026-02-01 00:00:00"  # the +05 offset read as UTC


def test_a_load_replaces_its_charge_days_only(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    bill = tmp_path / "bill.csv"
    bill.write_text("\n".join([HEAD, _row("2026-02-01"), _row("2026-02-02"), _row("2026-02-03")]) + "\n")
    load_focus_bills(_settings(bill), con, date(2026, 2, 1), date(2026, 2, 4))
    assert _days(con) == {date(2026, 2, d): (1, 1.0) for d in (1, 2, 3)}
    # the provider restates 2 Feb and drops 1 Feb's row; the run of 3 Feb re-reads one day back (2-3 Feb)
    bill.write_text("\n".join([HEAD, _row("2026-02-02", billed="5"), _row("2026-02-02", category="Credit",
                                                                             billed="-1")]) + "\n")
    summary = load_focus_bills(_settings(bill, reread_days=1), con, date(2026, 2, 3), date(2026, 2, 4))
    assert summary["first_day"] == "2026-02-02" and summary["problems"] == []
    assert _days(con) == {date(2026, 2, 1): (1, 1.0), date(2026, 2, 2): (2, 4.0)}  # 1 Feb kept, 3 Feb emptied
    load_focus_bills(_settings(bill, reread_days=1), con, date(2026, 2, 3), date(2026, 2, 4))
    assert _days(con) == {date(2026, 2, 1): (1, 1.0), date(2026, 2, 2): (2, 4.0)}  # idempotent


@pytest.mark.parametrize(("text", "fragment"), [
    (None, "not found"),
    ("ChargePeriodStart,ChargeCategory\n2026-02-01T00:00:00Z,Usage\n", "required FOCUS column BilledCost"),
    (HEAD + "\n" + _row("2026-02-01", billed='"1,5"'), "BilledCost is not a number"),
    (HEAD + "\n" + _row("2026-02-01", category="Refund"), "is not a FOCUS ChargeCategory"),
    (HEAD + "\n" + _row("yesterday"), "ChargePeriodStart is not a date-time"),
    ("\x00\x01not a csv at all", "could not be loaded"),
])
def test_a_broken_bill_is_one_problem_and_keeps_the_rows_loaded_before(
        tmp_path: Path, con: duckdb.DuckDBPyConnection, text: str | None, fragment: str) -> None:
    good = tmp_path / "good.csv"
    good.write_text(HEAD + "\n" + _row("2026-02-01") + "\n")
    load_focus_bills(_settings(good), con, date(2026, 2, 1), date(2026, 2, 2))
    bad = tmp_path / "bad.csv"
    if text is not None:
        bad.write_text(text)
    summary = load_focus_bills(_settings(bad, reread_days=3), con, date(2026, 2, 1), date(2026, 2, 2))
    (problem,) = summary["problems"]
    line = problem.line()
    assert line.startswith("billing degraded: ") and fragment in line, line
    assert "the 1 bill rows loaded before" in line and "What to do:" in line and "\n" not in line
    assert problem.affected == [str(bad)]
    assert _days(con) == {date(2026, 2, 1): (1, 1.0)}
    assert not con.execute("select * from duckdb_tables() where table_name like '_kl_focus%'").fetchall()


def test_check_config_reads_the_bills_and_names_what_is_wrong(tmp_path: Path) -> None:
    from pipelines.check_config import run_checks
    from pipelines.settings import load_settings

    (tmp_path / "bills").mkdir()
    (tmp_path / "bills" / "aws.csv").write_text(HEAD + "\n" + _row("2026-02-01") + "\n" + _row("2026-02-03") + "\n")
    config = tmp_path / "kubeledger.yaml"
    config.write_text("billing: {focus_path: bills}\n")
    (check,) = [c for c in run_checks(load_settings(str(config)), timeout_s=0.1) if c.name.startswith("billing")]
    assert check.ok and check.detail == "1 bill file(s), 2 rows, charge days 2026-02-01..2026-02-03"
    (tmp_path / "bills" / "aws.csv").write_text(HEAD + "\n" + _row("2026-02-01", category="Refund") + "\n")
    (check,) = [c for c in run_checks(load_settings(str(config)), timeout_s=0.1) if c.name.startswith("billing")]
    assert not check.ok and "is not a FOCUS ChargeCategory" in check.detail
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bills", "kubeledger.yaml"]  # nothing written


def test_no_billing_block_does_nothing(con: duckdb.DuckDBPyConnection) -> None:
    summary = load_focus_bills(Settings(), con, date(2026, 2, 1), date(2026, 2, 2))
    assert summary["configured"] is False and summary["problems"] == [] and _days(con) == {}
