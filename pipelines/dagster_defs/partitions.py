"""Hourly partitions for extracts, daily for the warehouse build. Both start at PARTITIONS_START (UTC)."""


import os

import dagster as dg

PARTITIONS_START = os.environ.get("KUBELEDGER_PARTITIONS_START", "2025-01-01")

hourly_partitions = dg.HourlyPartitionsDefinition(start_date=f"{PARTITIONS_START}-00:00", timezone="UTC")
daily_partitions = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START, timezone="UTC")

RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
