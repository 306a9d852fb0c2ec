"""The one Dagster Definitions of kubeledger (loaded by workspace.yaml).

Everything is configured from the Settings object (kubeledger.yaml or $KUBELEDGER_CONFIG), and only from the one
given: building (or importing) the Definitions never changes the process environment. The partitions start at the
settings' first day (pipelines/days.py); dbt gets the warehouse path for each call only (pipelines/environ.py).
"""

from __future__ import annotations

import warnings

import dagster as dg

from pipelines.settings import Settings, load_settings

# Partitioned asset checks and backfill policies are Dagster beta/preview features we rely on on purpose.
warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)


def build_definitions(settings: Settings | None = None, config_path: str | None = None) -> dg.Definitions:
    settings = settings or load_settings(config_path)

    from pipelines.dagster_defs.assets_dbt import dbt_daily_assets, dbt_lookups_assets, dbt_reference_assets
    from pipelines.dagster_defs.assets_extract import extract_assets, raw_pricing
    from pipelines.dagster_defs.assets_report import serving_report
    from pipelines.dagster_defs.assets_serving import serving_warehouse
    from pipelines.dagster_defs.checks import quality_checks
    from pipelines.dagster_defs.jobs import (
        build_daily_schedule,
        daily_job,
        extract_job,
        hourly_extract_schedule,
        reference_job,
    )
    from pipelines.dagster_defs.partitions import with_first_day
    from pipelines.dagster_defs.resources import KubeledgerResource
    from pipelines.days import first_day

    # the asset decorators use template partitions: move them to this configuration's first day
    first = first_day(settings).day
    assets = with_first_day([*extract_assets, raw_pricing, dbt_reference_assets, dbt_lookups_assets, dbt_daily_assets,
                             serving_warehouse, serving_report], first)
    checks = with_first_day(quality_checks, first)

    return dg.Definitions(
        # every writing step holds the one DuckDB writer slot, so steps never ran side by side: a process per step
        # (Dagster's default for UI runs and backfills) only added a Definitions import per step
        executor=dg.in_process_executor,
        assets=assets,
        asset_checks=checks,
        jobs=[extract_job, reference_job, daily_job],
        schedules=[hourly_extract_schedule, build_daily_schedule(settings)],
        resources={
            "kubeledger": KubeledgerResource(config_path=settings.source_file or config_path),
        },
    )


defs = build_definitions()
