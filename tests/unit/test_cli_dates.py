"""Dates are checked before any work: today, the future and days before the first partition are one line, exit 2,
in well under 5 s, and nothing is written. The first partition comes from the settings (pipelines/days.py)."""

from __future__ import annotations

import argparse
import time
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import build_parser, main
from pipelines.days import (
    DEFAULT_LOOKBACK_DAYS,
    DEMO_START,
    START_ENV,
    DateError,
    check_range,
    first_day,
    format_ranges,
    record_first_day,
    start_file,
    utc_today,
)
from pipelines.settings import SettingsError, load_settings

DEMO = ("warehouse:\n  path: wh/kubeledger.duckdb\n  serving_path: wh/serving.duckdb\n  parquet_path: wh/parquet\n"
        "clusters:\n  - name: demo\n    source: demo\n")
PROM = ("warehouse:\n  path: wh/kubeledger.duckdb\n  serving_path: wh/serving.duckdb\n"
        "clusters:\n  - name: prod\n    source: prometheus\n    prometheus: {url: 'http://127.0.0.1:9'}\n")


@pytest.fixture(autouse=True)
def _own_env(monkeypatch, tmp_path):
    # main() exports the warehouse path for dbt: keep it inside this test
    monkeypatch.setenv("KUBELEDGER_WAREHOUSE", str(tmp_path / "wh" / "kubeledger.duckdb"))
    monkeypatch.delenv(START_ENV, raising=False)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)


def write(tmp_path: Path, text: str = DEMO) -> Path:
    p = tmp_path / "kubeledger.yaml"
    p.write_text(text)
    return p


def refused(capsys, tmp_path: Path, argv: list[str]) -> str:
    """Run the CLI, assert it refused in one line, fast, with nothing written; return the line."""
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    started = time.perf_counter()
    assert main(argv) == 2
    assert time.perf_counter() - started < 5.0
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("kubeledger: ") and err.count("\n") == 1, (out, err)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # no raw rows, no Dagster run
    return err.strip()


def test_today_future_and_too_early_are_refused_before_any_work(tmp_path, capsys):
    cfg = str(write(tmp_path))
    today, yesterday = utc_today(), utc_today() - timedelta(days=1)
    line = refused(capsys, tmp_path, ["--config", cfg, "materialize", "--date", today.isoformat()])
    assert line == (f"kubeledger: --date {today} is today and not complete yet; the newest day you can "
                    f"materialise is {yesterday}")
    line = refused(capsys, tmp_path, ["--config", cfg, "materialize", "--date", str(today + timedelta(days=3))])
    assert "is in the future" in line and f"the newest day you can materialise is {yesterday}" in line
    line = refused(capsys, tmp_path, ["--config", cfg, "materialize", "--date", "2024-12-31"])
    assert "before the first partition 2025-01-01" in line and "schedule.start_date" in line
    line = refused(capsys, tmp_path, ["--config", cfg, "demo", "--date", today.isoformat()])
    assert "is today" in line


def test_backfill_and_rebuild_check_both_ends(tmp_path, capsys):
    cfg = str(write(tmp_path))
    today = utc_today()
    line = refused(capsys, tmp_path, ["--config", cfg, "backfill", "--start", "2026-01-01", "--end", str(today)])
    assert line.startswith(f"kubeledger: --end {today} is today")
    line = refused(capsys, tmp_path, ["--config", cfg, "backfill", "--start", "2024-06-01", "--end", "2025-01-02"])
    assert line.startswith("kubeledger: --start 2024-06-01 is before the first partition 2025-01-01")
    line = refused(capsys, tmp_path, ["--config", cfg, "backfill", "--start", "2025-02-02", "--end", "2025-02-01"])
    assert "--end 2025-02-01 is before --start 2025-02-02" in line
    line = refused(capsys, tmp_path, ["--config", cfg, "rebuild", "--start", str(today), "--end", str(today)])
    assert "is today" in line
    # no warehouse: nothing to rebuild from, said per cluster with the days
    line = refused(capsys, tmp_path, ["--config", cfg, "rebuild", "--start", "2026-03-01", "--end", "2026-03-03"])
    assert "no raw rows to rebuild from (cluster demo: 2026-03-01..2026-03-03)" in line


def test_rebuild_names_the_days_without_raw_rows(tmp_path, capsys):
    cfg = str(write(tmp_path, DEMO + "schedule:\n  start_date: 2026-01-01\n"))
    (tmp_path / "wh").mkdir()
    con = duckdb.connect(str(tmp_path / "wh" / "kubeledger.duckdb"))
    con.execute("create schema raw; create table raw.node_hours (cluster varchar, hour_ts timestamp)")
    con.execute("insert into raw.node_hours select 'demo', timestamp '2026-03-02' + to_hours(h) from range(24) t(h)")
    con.close()
    line = refused(capsys, tmp_path, ["--config", cfg, "rebuild", "--start", "2026-03-01", "--end", "2026-03-04"])
    assert "(cluster demo: 2026-03-01, 2026-03-03..2026-03-04)" in line


def test_config_after_the_command_and_start_date_from_settings(tmp_path, capsys):
    cfg = str(write(tmp_path, DEMO + "schedule:\n  start_date: 2026-02-01\n"))
    line = refused(capsys, tmp_path, ["materialize", "--date", "2026-01-31", "--config", cfg])
    assert line == (f"kubeledger: --date 2026-01-31 is before the first partition 2026-02-01 (schedule.start_date); "
                    f"materialise 2026-02-01 or later, or set schedule.start_date in {cfg} to 2026-01-31 or earlier "
                    "to go further back")
    # after the command wins over before it
    other = tmp_path / "other.yaml"
    other.write_text(DEMO)
    line = refused(capsys, tmp_path, ["--config", str(other), "materialize", "--date", "2026-01-31", "--config", cfg])
    assert "(schedule.start_date)" in line


def test_version_and_help_on_every_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == "kubeledger 0.1.0"
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in [("kubeledger", parser), *subparsers.choices.items()]:
        if name in ("allocation", "bench"):  # they parse their own options
            continue
        for action in sub._actions:
            assert action.help and action.help != argparse.SUPPRESS, (name, action.option_strings)


def test_first_day_rules(tmp_path, monkeypatch):
    today = date(2026, 12, 1)
    demo = load_settings(write(tmp_path))
    assert first_day(demo, today).day == DEMO_START
    prom = load_settings(write(tmp_path, PROM))
    assert first_day(prom, today).day == today - timedelta(days=DEFAULT_LOOKBACK_DAYS)
    # the earliest raw hour, when the warehouse has rows
    (tmp_path / "wh").mkdir()
    con = duckdb.connect(str(tmp_path / "wh" / "kubeledger.duckdb"))
    con.execute("create schema raw; create table raw.node_hours (cluster varchar, hour_ts timestamp)")
    con.execute("insert into raw.node_hours values ('prod', ?), ('prod', ?)",
                [datetime(2026, 9, 3, 5), datetime(2026, 9, 9)])
    con.close()
    assert first_day(prom, today).day == date(2026, 9, 3)
    # recorded once, then it stays put (pruned raw rows do not move the partitions)
    assert record_first_day(prom, today).day == date(2026, 9, 3)
    assert start_file(prom).read_text().strip() == "2026-09-03"
    (tmp_path / "wh" / "kubeledger.duckdb").unlink()
    assert first_day(prom, today).day == date(2026, 9, 3) and "recorded" in first_day(prom, today).why
    assert record_first_day(prom, date(2027, 1, 1)).day == date(2026, 9, 3)
    # the setting wins over what was recorded, the environment over both
    with_start = load_settings(write(tmp_path, PROM + "schedule:\n  start_date: '2026-06-01'\n"))
    assert first_day(with_start, today).day == date(2026, 6, 1)
    monkeypatch.setenv(START_ENV, "2025-05-05")
    assert first_day(with_start, today).day == date(2025, 5, 5)
    monkeypatch.setenv(START_ENV, "soon")
    with pytest.raises(DateError, match=START_ENV):
        first_day(with_start, today)


def test_check_range_accepts_the_edges(tmp_path):
    s = load_settings(write(tmp_path, DEMO + "schedule:\n  start_date: 2026-02-01\n"))
    today = date(2026, 12, 1)
    check_range(s, date(2026, 2, 1), date(2026, 11, 30), today)
    with pytest.raises(DateError, match="--end 2026-12-01 is today"):
        check_range(s, date(2026, 2, 1), today, today)


@pytest.mark.parametrize(("value", "fragment"), [
    ("2026-13-01", "not a real date"),
    ("'2026-1-5'", "use a day as YYYY-MM-DD"),
    ("'2999-01-01'", "it is in the future"),
    ("yes", "read as a boolean"),
])
def test_start_date_is_validated_in_one_line(tmp_path, value, fragment):
    p = write(tmp_path, DEMO + f"schedule:\n  start_date: {value}\n")
    with pytest.raises(SettingsError) as info:
        load_settings(p)
    message = str(info.value)
    assert message.startswith(str(p)) and fragment in message and "\n" not in message


def test_unquoted_and_quoted_start_dates_load(tmp_path):
    assert load_settings(write(tmp_path, DEMO + "schedule:\n  start_date: 2026-01-05\n")).schedule.start_date \
        == "2026-01-05"
    assert load_settings(write(tmp_path, DEMO + "schedule:\n  start_date: '2026-01-05'\n")).schedule.start_date \
        == "2026-01-05"


def test_format_ranges():
    d = date(2026, 3, 1)
    days = [d, d + timedelta(days=1), d + timedelta(days=2), d + timedelta(days=5)]
    assert format_ranges(days) == "2026-03-01..2026-03-03, 2026-03-06"


def test_an_existing_warehouse_keeps_its_older_marts_in_the_partitions(tmp_path):
    # raw rows are pruned after warehouse.raw_retention_days, marts are kept: the older marts stay materialisable
    prom = load_settings(write(tmp_path, PROM))
    (tmp_path / "wh").mkdir()
    con = duckdb.connect(str(tmp_path / "wh" / "kubeledger.duckdb"))
    con.execute("create schema raw; create table raw.node_hours (cluster varchar, hour_ts timestamp)")
    con.execute("insert into raw.node_hours values ('prod', timestamp '2026-10-01 00:00')")
    con.execute("create schema marts; create table marts.fct_cluster_daily (cluster varchar, usage_date date)")
    con.execute("insert into marts.fct_cluster_daily values ('prod', date '2025-06-15')")
    con.close()
    first = first_day(prom, date(2026, 12, 1))
    assert first.day == date(2025, 6, 15) and first.why == "the earliest day in the warehouse"


def test_config_is_taken_out_of_a_pass_through_command():
    from pipelines.cli import _pop_config

    assert _pop_config(["--window", "7d", "--config", "a.yaml", "--aggregate", "namespace"]) == (
        ["--window", "7d", "--aggregate", "namespace"], "a.yaml")
    assert _pop_config(["--config=b.yaml"]) == ([], "b.yaml")
    assert _pop_config(["--window", "7d"]) == (["--window", "7d"], None)
