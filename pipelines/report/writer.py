"""Write the report of a day or ISO week.

`write_report(settings, day)` reads the published serving copy (read-only, through the API's snapshot pool so an
analyst's read-write session on serving.duckdb never blocks it), renders the page (pipelines/report/html.py) with
charts as inline SVG (pipelines/report/charts.py) and writes `<warehouse folder>/reports/daily/<day>.html` or
`reports/weekly/<year>-W<week>.html` atomically, keeping the newest `warehouse.keep_reports` of each kind.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from markupsafe import Markup

from pipelines import cli_version
from pipelines.report import queries
from pipelines.report.charts import MEASURES, stacked_daily_svg
from pipelines.report.html import render
from pipelines.report.queries import Period
from pipelines.settings import Settings

MAIN_CHART = "total_cost"  # the chart the Dagster UI shows
CHART_KINDS = {"total_cost": "usd", "energy_kwh": "kwh", "co2e_total_g": "co2e_g"}


@dataclass(frozen=True)
class Report:
    path: Path
    period: Period
    main_chart_svg: str
    clusters: int
    recommendations: int | None  # None: the warehouse has no recommendation mart


def reports_dir(settings: Settings) -> Path:
    return settings.warehouse_path.parent / "reports"


def report_path(settings: Settings, period: Period) -> Path:
    return reports_dir(settings) / period.kind / f"{period.name}.html"


def _chart(series: list[dict[str, Any]], measure: str, period: Period, cache: dict[tuple, str] | None) -> str:
    """The chart's SVG; with a cache, a chart of the same rows and window is drawn once (a week's report and the
    daily report of its Sunday show the same charts). Drawing is nearly all of a report's time."""
    if cache is None:
        return stacked_daily_svg(series, measure, period.chart_start, period.end)
    key = (measure, period.chart_start, period.end,
           tuple((r["usage_date"], r["cluster"], r[measure]) for r in series))
    if key not in cache:
        cache[key] = stacked_daily_svg(series, measure, period.chart_start, period.end)
    return cache[key]


def build_context(con: Any, period: Period, source: str, chart_cache: dict[tuple, str] | None = None
                  ) -> dict[str, Any]:
    """Everything the page shows, from SQL over the marts."""
    clusters = queries.cluster_totals(con, period)
    series = queries.daily_series(con, period)
    # the SVG is matplotlib's own output, inserted as markup
    charts = [{"measure": m, "kind": CHART_KINDS[m], "svg": Markup(_chart(series, m, period, chart_cache))}
              for m in MEASURES]
    rankings = [(level, [(order, queries.top_groups(con, period, level, order)) for order in ("cost", "co2e")])
                for level in queries.GROUP_KEYS]
    recs = queries.recommendations(con, period) if queries.has_recommendations(con) else None
    all_row = next((c for c in clusters if c["cluster"] == "__all__" and c["days"]), None)
    return {
        "period": period, "prev": period.previous(), "source": source, "version": cli_version(),
        "written": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "clusters": clusters if all_row else [], "all_row": all_row, "charts": charts, "series": series,
        "chart_days": queries.CHART_DAYS, "rankings": rankings, "reasons": queries.estimation_reasons(con, period),
        "bill": queries.bill_vs_list(con, period),
        "recommendations": None if recs is None else recs["rows"], "recs": recs,
        "recommendation_mart": queries.RECOMMENDATION_MART,
    }


def write_report(settings: Settings, day: date, weekly: bool = False) -> Report:
    """Write the daily report of `day` (or the weekly report of its ISO week) and prune old ones."""
    return write_periods(settings, [Period.of(day, weekly)])[0]


def write_reports(settings: Settings, days: list[date]) -> tuple[list[Report], list[Report]]:
    """The daily report of each day and one weekly report per ISO week the days touch (written once, with its
    newest day's data): (daily, weekly), in the order of `days`."""
    weeks = {day - timedelta(days=day.weekday()): day for day in days}
    reports = write_periods(settings, [Period.of(day) for day in days]
                            + [Period.of(day, weekly=True) for day in weeks.values()])
    return reports[:len(days)], reports[len(days):]


def write_periods(settings: Settings, periods: list[Period]) -> list[Report]:
    """Write the reports of `periods` on one lease of the serving copy (one snapshot, one connection, each chart
    drawn once), pruning old ones as each is written."""
    from pipelines.serving.query.snapshots import read_once

    source = str(settings.serving_path)
    charts: dict[tuple, str] = {}
    return read_once(settings.serving_path,
                     lambda con: [_write(settings, period, build_context(con, period, source, charts))
                                  for period in periods],
                     memory_limit=settings.warehouse.memory_limit, threads=1)


def _write(settings: Settings, period: Period, context: dict[str, Any]) -> Report:
    path = report_path(settings, period)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(render(context))
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a report is for reading
        os.replace(tmp, path)  # a reader never sees half a page
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    prune_reports(path.parent, settings.warehouse.keep_reports)
    main = next(c["svg"] for c in context["charts"] if c["measure"] == MAIN_CHART)
    recs = context["recommendations"]
    return Report(path=path, period=period, main_chart_svg=main,
                  clusters=sum(1 for c in context["clusters"] if c["cluster"] != "__all__"),
                  recommendations=None if recs is None else len(recs))


def prune_reports(folder: Path, keep: int) -> list[Path]:
    """Remove all but the newest `keep` reports of a folder (names sort by period); returns what went."""
    reports = sorted(folder.glob("*.html"))
    gone = reports[:-keep] if keep > 0 else reports
    for path in gone:
        path.unlink(missing_ok=True)
    return gone
