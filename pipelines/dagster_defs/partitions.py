"""Hourly partitions for extracts, daily for the warehouse build, both starting at the settings' first day (UTC).

The first day comes from the settings (`schedule.start_date`, else the day recorded at the first run, the earliest
raw hour, or 35 days before the first run: pipelines/days.py). The asset and check decorators are written once
against the `hourly_partitions` / `daily_partitions` templates below; `build_definitions(settings)` rebases every
asset and check onto the settings' first day with `with_first_day`, so one process can build definitions for
several configurations and none is fixed at import.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

import dagster as dg

TEMPLATE_START = "2025-01-01"

hourly_partitions = dg.HourlyPartitionsDefinition(start_date=f"{TEMPLATE_START}-00:00", timezone="UTC")
daily_partitions = dg.DailyPartitionsDefinition(start_date=TEMPLATE_START, timezone="UTC")

RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def partitions_for(first: date) -> tuple[dg.HourlyPartitionsDefinition, dg.DailyPartitionsDefinition]:
    """The hourly and daily partitions starting at `first` (midnight UTC)."""
    return (dg.HourlyPartitionsDefinition(start_date=f"{first.isoformat()}-00:00", timezone="UTC"),
            dg.DailyPartitionsDefinition(start_date=first.isoformat(), timezone="UTC"))


def with_first_day(definitions: Iterable[dg.AssetsDefinition], first: date) -> list[dg.AssetsDefinition]:
    """The assets and checks with the template partitions replaced by partitions starting at `first`."""
    hourly, daily = partitions_for(first)
    swap = {hourly_partitions: hourly, daily_partitions: daily}
    out = []
    for assets_def in definitions:
        specs = [spec.replace_attributes(partitions_def=swap.get(spec.partitions_def, spec.partitions_def))
                 if spec.partitions_def is not None else spec for spec in assets_def.specs]
        checks = {name: _check_spec_with(spec, swap.get(spec.partitions_def, spec.partitions_def))
                  for name, spec in assets_def.node_check_specs_by_output_name.items()}
        attributes = {**assets_def.get_attributes_dict(), "specs": specs, "check_specs_by_output_name": checks}
        out.append(assets_def.__class__.dagster_internal_init(**attributes))
    return out


def _check_spec_with(spec: dg.AssetCheckSpec, partitions_def: dg.PartitionsDefinition | None) -> dg.AssetCheckSpec:
    from dagster_shared.record import replace

    return spec if partitions_def is spec.partitions_def else replace(spec, partitions_def=partitions_def)
