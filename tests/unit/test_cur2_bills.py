"""pipelines/sources/cur2.py on small CUR 2.0 exports written here: Parquet (the map of tags as JSON text) and CSV
together, the charge days a load replaces (its re-read days included, and only those), and a broken export as one
'billing' problem that keeps the rows loaded before. A warehouse file in the test's temp folder, fast."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from pipelines.settings import BillingSettings, Settings
from pipelines.sources.cur2 import load_cur2_bills
from tests.fixtures.cur2 import write_cur2


def _line(day: date, kind: str = "Usage", cost: float = 1.0, **more: object) -> dict[str, object]:
    start = datetime(day.year, day.month, day.day)
    return {"line_item_usage_start_date": start, "line_item_usage_end_date": start + timedelta(hours=1),
            "line_item_line_item_type": kind, "line_item_unblended_cost": cost, **more}


def _settings(path: Path, reread_days: int = 0) -> Settings:
    return Settings(billing=BillingSettings(cur2_path=str(path), reread_days=reread_days))


@pytest.fixture
def con(raw_warehouse: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    return raw_warehouse  # the unit tests' shared warehouse with the raw landing schema (tests/unit/conftest.py)


def _days(con: duckdb.DuckDBPyConnection) -> dict[date, tuple[int, float]]:
    return {r[0]: (r[1], r[2]) for r in con.execute(
        "select charge_date, count(*), sum(line_item_unblended_cost) from raw.cur2_line_items "
        "group by 1 order by 1").fetchall()}


def test_parquet_and_csv_exports_load_together(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    export = tmp_path / "export"
    export.mkdir()
    write_cur2(export / "part-0.parquet", [_line(date(2026, 2, 1), "SavingsPlanCoveredUsage", 2.0,
                                                 line_item_resource_id="i-0abc",
                                                 resource_tags={"user:team": "web"})])
    (export / "part-1.csv").write_text("line_item_usage_start_date,line_item_line_item_type,line_item_unblended_cost,"
                                       "bill_payer_account_id\n2026-02-01T10:00:00Z,Tax,0.5,123456789012\n")
    summary = load_cur2_bills(_settings(export), con, date(2026, 2, 1), date(2026, 2, 2))
    assert (summary["files"], summary["rows"], summary["problems"]) == (2, 2, [])
    rows = con.execute("select line_item_line_item_type, line_item_resource_id, resource_tags, bill_payer_account_id "
                       "from raw.cur2_line_items order by 1").fetchall()
    assert rows == [("SavingsPlanCoveredUsage", "i-0abc", '{"user:team":"web"}', None),
                    ("Tax", None, None, "123456789012")]


def test_a_load_replaces_its_days_and_the_reread_days_only(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    export = tmp_path / "cur.parquet"
    days = [date(2026, 2, d) for d in (1, 2, 3, 4)]
    write_cur2(export, [_line(d) for d in days])
    load_cur2_bills(_settings(export), con, days[0], days[-1] + timedelta(days=1))
    write_cur2(export, [_line(d, cost=5.0) for d in days])  # the export restated
    summary = load_cur2_bills(_settings(export, reread_days=1), con, days[3], days[3] + timedelta(days=1))
    assert (summary["rows"], summary["days"]) == (2, 2)
    assert _days(con) == {days[0]: (1, 1.0), days[1]: (1, 1.0), days[2]: (1, 5.0), days[3]: (1, 5.0)}


def test_a_broken_export_is_one_problem_and_keeps_the_rows_loaded_before(tmp_path: Path,
                                                                          con: duckdb.DuckDBPyConnection) -> None:
    export = tmp_path / "cur.csv"
    export.write_text("line_item_usage_start_date,line_item_line_item_type,line_item_unblended_cost\n"
                      "2026-02-01T00:00:00Z,Usage,1\n")
    load_cur2_bills(_settings(export), con, date(2026, 2, 1), date(2026, 2, 2))
    export.write_text("line_item_usage_start_date,line_item_line_item_type,line_item_unblended_cost\n"
                      "2026-02-01T00:00:00Z,Usage,one dollar\n")
    summary = load_cur2_bills(_settings(export), con, date(2026, 2, 1), date(2026, 2, 2))
    (problem,) = summary["problems"]
    assert problem.source == "billing" and "line_item_unblended_cost is not a number" in problem.message
    assert "the 1 CUR rows loaded before for 2026-02-01..2026-02-01 stay in use" in problem.message
    assert _days(con) == {date(2026, 2, 1): (1, 1.0)}
    export.write_text("line_item_usage_start_date,line_item_unblended_cost\n2026-02-01T00:00:00Z,1\n")
    (problem,) = load_cur2_bills(_settings(export), con, date(2026, 2, 1), date(2026, 2, 2))["problems"]
    assert "required CUR 2.0 column line_item_line_item_type is missing" in problem.message
