"""Jobs and schedules, built from the partitioned assets."""


from datetime import timedelta

import dagster as dg

from pipelines.dagster_defs.partitions import RANGE_END_TAG, RANGE_START_TAG
from pipelines.dagster_defs.resources import pinned_run_config
from pipelines.days import first_day
from pipelines.settings import Settings, load_settings
from pipelines.timeutil import day_key, hourly_range_keys, utc_now

extract_job = dg.define_asset_job(
    "extract_hourly", selection=dg.AssetSelection.groups("extract"),
    description="Extract the metrics and the Kubernetes snapshot for an hour (or an hour range in a backfill).",
)

reference_job = dg.define_asset_job(
    "reference", selection=dg.AssetSelection.groups("reference"),
    description="Load seeds and the configured price files.",
)

daily_job = dg.define_asset_job(
    "daily_warehouse",
    selection=(dg.AssetSelection.all() - dg.AssetSelection.groups("extract", "reference")),
    description="Build a day: the dbt lookups, the carbon-intensity and Boavizta extracts they drive, then staging "
                "→ intermediate → marts; run the quality gates and publish.",
)

hourly_extract_schedule = dg.build_schedule_from_partitioned_job(
    extract_job, minute_of_hour=5, name="extract_every_hour",
    description="Extract the hour that just ended, five minutes after it closes.",
)


def build_daily_schedule(settings: Settings) -> dg.ScheduleDefinition:
    late_days = settings.schedule.late_days

    @dg.schedule(job=daily_job, cron_schedule=settings.schedule.daily_cron, execution_timezone="UTC",
                 name="daily_warehouse_yesterday",
                 description=f"Materialise yesterday, then re-materialise the {late_days} previous days so late "
                             "samples land. Each day re-extracts its 24 hours first (queued in order, one writer).")
    def daily_schedule(context: dg.ScheduleEvaluationContext):
        now = utc_now(context.scheduled_execution_time)
        yesterday = (now - timedelta(days=1)).date()
        # one tick, one configuration: every run it requests is pinned to the file as it is now
        current = load_settings(settings.source_file) if settings.source_file else settings
        pinned = pinned_run_config(current)
        first = first_day(current, today=now.date()).day
        for offset in range(late_days + 1):
            day = yesterday - timedelta(days=offset)
            if day < first:  # no partition before the first day
                break
            key = day_key(day)
            first_hour, last_hour = hourly_range_keys(day, day)
            yield dg.RunRequest(
                run_key=f"extract-{key}-{now:%Y%m%d}",
                job_name=extract_job.name,
                tags={RANGE_START_TAG: first_hour, RANGE_END_TAG: last_hour},
                run_config=pinned,
            )
            yield dg.RunRequest(run_key=f"build-{key}-{now:%Y%m%d}", partition_key=key, run_config=pinned)

    return daily_schedule
