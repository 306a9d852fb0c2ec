"""The report's pieces that need no warehouse: periods, traceable numbers, the command's failure line."""

from datetime import date
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.report.html import num
from pipelines.report.queries import Period


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
