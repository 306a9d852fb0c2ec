"""The report's pieces that need no warehouse: periods, traceable numbers, the command's failure line."""

from datetime import date
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main
from pipelines.report.html import num
from pipelines.report.queries import Period, estimation_reasons
from pipelines.report.reason_codes import reason_codes


def test_periods_are_a_day_or_an_iso_week_and_the_one_before() -> None:
    day = Period.of(date(2026, 3, 1))
    assert (day.name, day.start, day.end, day.previous().start) == ("2026-03-01", date(2026, 3, 1),
                                                                     date(2026, 3, 1), date(2026, 2, 28))
    week = Period.of(date(2026, 3, 1), weekly=True)  # a Sunday: the week that ends on it
    assert (week.name, week.start, week.end, week.days) == ("2026-W09", date(2026, 2, 23), date(2026, 3, 1), 7)
    assert (week.previous().start, week.previous().end) == (date(2026, 2, 16), date(2026, 2, 22))
    assert week.chart_start == date(2026, 1, 31)


def test_a_number_carries_its_value_scale_and_keys() -> None:
    html = str(num("cluster_co2e_g", 1500.25, "co2e_g", cluster="a&b", start="2026-03-01"))
    assert 'data-metric="cluster_co2e_g" data-value="1500.25" data-scale="1000.0"' in html
    assert 'data-cluster="a&amp;b" data-start="2026-03-01"' in html and ">1.500 kg<" in html
    assert ">+12.5%<" in str(num("x_change", 0.125, "change"))
    # a missing figure is a dash with an empty value, never a made-up zero
    assert 'class="num na"' in str(num("x", None, "usd")) and 'data-value=""' in str(num("x", None, "usd"))
    # the recommendation kind is a key like any other
    assert 'data-kind="idle_node_pool"' in str(num("k", 2, "count", kind="idle_node_pool"))


def test_report_without_a_serving_copy_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    config = tmp_path / "kubeledger.yaml"
    config.write_text("warehouse:\n  path: wh/k.duckdb\n  serving_path: wh/serving.duckdb\n")
    assert main(["--config", str(config), "report", "--date", "2026-03-01"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("kubeledger: cannot read the serving copy") and "does not exist yet" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "wh" / "reports").exists()


def test_reason_codes_are_the_marts_lists() -> None:
    """The report classifies reasons with dbt's own lists (macros/reasons.sql), read, not copied."""
    codes = reason_codes()
    assert "no_egress_classification" in codes["cost"] and "no_egress_classification" not in codes["carbon"]
    assert "default_pue" in codes["carbon"] and "default_pue" not in codes["cost"]
    assert {"partial_hour_coverage", "unknown_vcpu"} <= set(codes["carbon"]) & set(codes["cost"])
    assert len(codes["carbon"]) >= 10 and len(codes["cost"]) >= 10


def test_each_reason_share_is_of_the_quantity_it_affects() -> None:
    """A cost-only reason on rows holding most of the CO2e shows no CO2e share (the issue's 41.7 % "share of CO2e"
    for no_egress_classification); each share is at most its quantity's estimated share."""
    day = date(2026, 3, 1)
    con = duckdb.connect()
    con.execute("create schema marts")
    con.execute("create table marts.fct_allocation_daily (usage_date date, co2e_total_g double, total_cost double, "
                "estimation_reasons varchar)")
    con.executemany("insert into marts.fct_allocation_daily values (?, ?, ?, ?)", [
        (day, 700.0, 1.0, "no_egress_classification"),  # cost-only reason, most of the CO2e
        (day, 100.0, 2.0, "default_pue"),
        (day, 50.0, 3.0, "default_pue,partial_hour_coverage"),
        (day, 25.0, 0.5, "not_a_known_code"),
        (day, 125.0, 3.5, ""),
    ])
    rows = {r["reason"]: r for r in estimation_reasons(con, Period.of(day))}
    assert rows["no_egress_classification"]["co2e_share"] is None
    assert rows["no_egress_classification"]["cost_share"] == pytest.approx(1.0 / 10.0)
    assert rows["no_egress_classification"]["affects"] == "cost"
    assert rows["default_pue"]["co2e_share"] == pytest.approx(150.0 / 1000.0)
    assert rows["default_pue"]["cost_share"] is None
    assert rows["partial_hour_coverage"]["affects"] == "cost and carbon"
    assert (rows["partial_hour_coverage"]["co2e_share"], rows["partial_hour_coverage"]["cost_share"]) == \
        (pytest.approx(0.05), pytest.approx(0.3))
    assert rows["not_a_known_code"]["affects"] == "neither"
    assert rows["not_a_known_code"]["co2e_share"] is None and rows["not_a_known_code"]["cost_share"] is None
    # the headline shares as fct_cluster_daily defines them: the rows with any reason of the quantity
    co2e_headline, cost_headline = 150.0 / 1000.0, (1.0 + 3.0) / 10.0
    for r in rows.values():
        assert r["co2e_share"] is None or r["co2e_share"] <= co2e_headline + 1e-12
        assert r["cost_share"] is None or r["cost_share"] <= cost_headline + 1e-12
