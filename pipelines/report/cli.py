"""`kubeledger report --date D [--week] [--open]`: write the HTML report of a day (or its ISO week) from the
serving copy and print its path."""

from __future__ import annotations

import argparse
import sys
import webbrowser
from datetime import date
from typing import Any

from pipelines.settings import Settings


def add_report_parser(sub: Any, parse_date: Any, common: Any) -> None:
    """Register the subcommand on the main parser's subparsers."""
    report = sub.add_parser("report", help="write the HTML report of a published day (or its ISO week)",
                            description="Write a self-contained HTML report (charts inline, viewable offline) "
                            "from the serving copy to <warehouse folder>/reports/daily/<date>.html, or "
                            "reports/weekly/<year>-W<week>.html with --week, and print its path.")
    report.add_argument("--date", type=parse_date, required=True, help="day to report, YYYY-MM-DD (UTC)")
    report.add_argument("--week", action="store_true", help="the report of the ISO week holding --date")
    report.add_argument("--open", action="store_true", help="open the report in the default browser")
    common(report)


def report_path_for(settings: Settings, day: date, weekly: bool = False) -> str:
    from pipelines.report.queries import Period
    from pipelines.report.writer import report_path

    return str(report_path(settings, Period.of(day, weekly)))


def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.report.writer import write_report
    from pipelines.serving.query.snapshots import ServingUnavailable

    try:
        report = write_report(settings, args.date, weekly=args.week)
    except ServingUnavailable as exc:
        print(f"kubeledger: cannot read the serving copy: {exc.reason}", file=sys.stderr)
        return 1
    print(report.path)
    if args.open:
        webbrowser.open(report.path.as_uri())
    return 0
