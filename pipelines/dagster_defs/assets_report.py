"""The HTML report, written after each publish from the serving copy (pipelines/report)."""

import base64
from datetime import date, timedelta

import dagster as dg

from pipelines.dagster_defs.metadata import safe_metadata
from pipelines.dagster_defs.partitions import daily_partitions
from pipelines.dagster_defs.resources import WRITER_POOL, KubeledgerResource


def _days(start: date, end: date) -> list[date]:
    return [start + timedelta(days=i) for i in range((end - start).days)]


@dg.asset(key=["serving", "report"], deps=[["serving", "warehouse"]], partitions_def=daily_partitions,
          backfill_policy=dg.BackfillPolicy.single_run(), pool=WRITER_POOL, group_name="serving", kinds={"html"},
          description="Self-contained HTML report per day and per ISO week (cost, kWh and CO2e per cluster over 30 "
          "days, top namespaces and controllers, idle and estimated shares, recommendations), under "
          "<warehouse folder>/reports.")
def serving_report(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource) -> dg.MaterializeResult:
    from pipelines.report.writer import (
        write_reports,  # matplotlib loads when a report is written, not with the definitions
    )

    settings = kubeledger.settings
    window = context.partition_time_window
    # a daily report per day and one weekly per ISO week the run touched, on one lease of the serving copy
    daily, weekly = write_reports(settings, _days(window.start.date(), window.end.date()))
    last = daily[-1]
    chart = base64.b64encode(last.main_chart_svg.encode()).decode()
    return dg.MaterializeResult(metadata=safe_metadata({
        "report": dg.MetadataValue.path(str(last.path)),
        "report_url": dg.MetadataValue.url(last.path.as_uri()),
        "weekly_report": dg.MetadataValue.path(str(weekly[-1].path)),
        "main_chart": dg.MetadataValue.md(
            f"Cost per cluster per day, last 30 days to {last.period.end} ([open the report]({last.path.as_uri()}))"
            f"\n\n![cost per cluster](data:image/svg+xml;base64,{chart})"),
        "reports_written": len(daily) + len(weekly),
        "clusters": last.clusters,
        "recommendations_shown": last.recommendations if last.recommendations is not None else "no mart",
    }))
