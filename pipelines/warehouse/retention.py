"""Retention of the raw hourly rows (the marts are kept indefinitely)."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb

from pipelines.timeutil import naive_utc

HOURLY_RAW_TABLES = (
    "container_hours", "pod_hours", "node_hours", "namespace_hours", "volume_hours", "pod_volume_hours",
    "volume_stats_hours", "service_hours", "gpu_hours", "metric_coverage_hours", "k8s_objects",
    "carbon_intensity_hours",
)


def prune_raw(con: duckdb.DuckDBPyConnection, retention_days: int, newest: datetime) -> dict[str, int]:
    """Drop raw hourly rows older than `retention_days` before `newest`. One transaction: either every table is
    pruned or none is."""
    cutoff = naive_utc(newest) - timedelta(days=retention_days)
    deleted: dict[str, int] = {}
    con.execute("begin transaction")
    try:
        for table in HOURLY_RAW_TABLES:
            # table names come from the fixed tuple above
            n = con.execute(f"select count(*) from raw.{table} where hour_ts < ?", [cutoff]).fetchone()[0]  # noqa: S608
            if n:
                con.execute(f"delete from raw.{table} where hour_ts < ?", [cutoff])  # noqa: S608
            deleted[table] = n
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return deleted
