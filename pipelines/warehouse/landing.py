"""Idempotent landing: every write replaces exactly its partitions inside one transaction.

A crash mid-write rolls back, so the previous rows stay intact; re-running a partition gives the same rows.
Identifiers are allow-listed against the live catalogue; partition values are bound parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb
import pandas as pd

# table -> the columns that identify one partition of it
PARTITION_KEYS: dict[str, tuple[str, ...]] = {
    "container_hours": ("cluster", "hour_ts"),
    "pod_hours": ("cluster", "hour_ts"),
    "node_hours": ("cluster", "hour_ts"),
    "namespace_hours": ("cluster", "hour_ts"),
    "volume_hours": ("cluster", "hour_ts"),
    "pod_volume_hours": ("cluster", "hour_ts"),
    "service_hours": ("cluster", "hour_ts"),
    "gpu_hours": ("cluster", "hour_ts"),
    "metric_coverage_hours": ("cluster", "hour_ts"),
    "k8s_objects": ("cluster", "hour_ts"),
    "carbon_intensity_hours": ("provider", "zone", "hour_ts"),
    "boavizta_impacts": ("provider", "instance_type"),
    "price_sheet": ("source_file",),
    "price_node_csv": ("source_file",),
    "price_custom": ("source_file",),
}

METRICS_TABLES = (
    "container_hours", "pod_hours", "node_hours", "namespace_hours",
    "volume_hours", "pod_volume_hours", "service_hours", "gpu_hours", "metric_coverage_hours",
)


class LandingError(ValueError):
    """A batch that does not fit its landing table."""


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    rows = con.execute(
        "select column_name from information_schema.columns where table_schema = 'raw' and table_name = ? "
        "order by ordinal_position",
        [table],
    ).fetchall()
    return [r[0] for r in rows]


def _checked(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> pd.DataFrame:
    if table not in PARTITION_KEYS:
        raise LandingError(f"raw.{table}: not a landing table; allowed: {', '.join(sorted(PARTITION_KEYS))}")
    cols = table_columns(con, table)
    extra = sorted(set(frame.columns) - set(cols))
    if extra:
        raise LandingError(f"raw.{table}: unknown column(s) {extra}; the table has {cols}")
    if "_extracted_at" in cols and "_extracted_at" not in frame.columns:
        frame = frame.assign(_extracted_at=datetime.now(UTC).replace(tzinfo=None))
    return frame


def replace_partitions(
    con: duckdb.DuckDBPyConnection,
    batches: Mapping[str, pd.DataFrame],
    partitions: Sequence[Mapping[str, Any]],
) -> dict[str, int]:
    """Replace `partitions` (e.g. [{"cluster": "c", "hour_ts": h}]) in every table of `batches` atomically.

    Rows of a batch that fall outside the given partitions are rejected: a writer owns only what it names.
    Returns rows written per table.
    """
    checked = {t: _checked(con, t, f) for t, f in batches.items()}
    written: dict[str, int] = {}
    con.execute("begin transaction")
    try:
        for table, frame in checked.items():
            keys = PARTITION_KEYS[table]
            part_frame = pd.DataFrame([{k: p[k] for k in keys} for p in partitions]).drop_duplicates()
            if part_frame.empty:
                continue
            con.register("_kl_parts", part_frame)
            on = " and ".join(f"t.{k} = p.{k}" for k in keys)
            # identifiers come from PARTITION_KEYS / the catalogue, never from the caller's data
            con.execute(f"delete from raw.{table} t using _kl_parts p where {on}")  # noqa: S608
            if len(frame):
                con.register("_kl_batch", frame)
                outside = con.execute(
                    "select count(*) from _kl_batch b anti join _kl_parts p on "  # noqa: S608
                    + " and ".join(f"b.{k} = p.{k}" for k in keys)
                ).fetchone()[0]
                if outside:
                    raise LandingError(f"raw.{table}: {outside} row(s) fall outside the partitions being replaced")
                col_list = ", ".join(frame.columns)
                con.execute(f"insert into raw.{table} ({col_list}) select {col_list} from _kl_batch")  # noqa: S608
                con.unregister("_kl_batch")
            con.unregister("_kl_parts")
            written[table] = len(frame)
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return written
