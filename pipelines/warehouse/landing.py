"""Idempotent landing: every write replaces exactly its partitions inside one transaction.

A crash mid-write rolls back, so the previous rows stay intact; re-running a partition gives the same rows.
Identifiers are allow-listed against the live catalogue; partition values are bound parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb
import numpy as np
import pandas as pd

# table -> the columns that identify one partition of it
PARTITION_KEYS: dict[str, tuple[str, ...]] = {
    "container_hours": ("cluster", "hour_ts"),
    "pod_hours": ("cluster", "hour_ts"),
    "node_hours": ("cluster", "hour_ts"),
    "namespace_hours": ("cluster", "hour_ts"),
    "volume_hours": ("cluster", "hour_ts"),
    "pod_volume_hours": ("cluster", "hour_ts"),
    "volume_stats_hours": ("cluster", "hour_ts"),
    "service_hours": ("cluster", "hour_ts"),
    "gpu_hours": ("cluster", "hour_ts"),
    "metric_coverage_hours": ("cluster", "hour_ts"),
    "k8s_objects": ("cluster", "hour_ts"),
    "carbon_intensity_hours": ("provider", "zone", "hour_ts"),
    "boavizta_impacts": ("provider", "instance_type"),
    "price_sheet": ("source_file",),
    "price_node_csv": ("source_file",),
    "price_custom": ("source_file",),
    "source_health": ("source", "scope"),
    "focus_charges": ("charge_date",),
    "cur2_line_items": ("charge_date",),
    # user state written by `kubeledger recommend` (warehouse/recommendation_actions.py), not landed; listed so the
    # Spark engine's lake gets its snapshot (warehouse/lake.py SNAPSHOT_TABLES) like the other whole tables
    "recommendation_actions": ("recommendation_id",),
}

METRICS_TABLES = (
    "container_hours", "pod_hours", "node_hours", "namespace_hours",
    "volume_hours", "pod_volume_hours", "volume_stats_hours", "service_hours", "gpu_hours",
    "metric_coverage_hours",
)


class LandingError(ValueError):
    """A batch that does not fit its landing table."""


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return _catalogue(con).get(table, [])


def _catalogue(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """raw table -> its columns in order, in one catalogue read (information_schema costs ~7 ms a query)."""
    out: dict[str, list[str]] = {}
    for table, column in con.execute(
        "select table_name, column_name from duckdb_columns() where schema_name = 'raw' "
        "and database_name = current_database() order by table_name, column_index"
    ).fetchall():
        out.setdefault(table, []).append(column)
    return out


def _key(value: Any) -> Any:
    """A partition value as both the caller's partitions and the frame's cells compare: timestamps naive UTC."""
    if isinstance(value, datetime | np.datetime64):  # pd.Timestamp is a datetime
        ts = pd.Timestamp(value)
        return ts.tz_convert(UTC).tz_localize(None) if ts.tzinfo is not None else ts
    return value


def _partition_set(table: str, partitions: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    keys = PARTITION_KEYS[table]
    return list(dict.fromkeys(tuple(p[k] for k in keys) for p in partitions))


def _outside(table: str, frame: pd.DataFrame, parts: list[tuple[Any, ...]]) -> int:
    """Rows of `frame` whose partition key is not one of `parts` (grouped once: a day has a few dozen keys)."""
    keys = list(PARTITION_KEYS[table])
    if frame.empty:
        return 0
    missing = [k for k in keys if k not in frame.columns]
    if missing:  # a NOT NULL key column absent: every row is outside any partition
        return len(frame)
    allowed = {tuple(_key(v) for v in p) for p in parts}
    sizes = frame.groupby(keys, dropna=False, sort=False, observed=True).size()
    bad = 0
    for key, n in sizes.items():
        key = key if isinstance(key, tuple) else (key,)
        if tuple(_key(v) for v in key) not in allowed:
            bad += int(n)
    return bad


def _checked(catalogue: Mapping[str, list[str]], table: str, frame: pd.DataFrame,
             parts: list[tuple[Any, ...]]) -> list[str]:
    """Validate a batch before the transaction: a landing table, known columns, every row inside `parts`.
    Returns the table's columns."""
    if table not in PARTITION_KEYS:
        raise LandingError(f"raw.{table}: not a landing table; allowed: {', '.join(sorted(PARTITION_KEYS))}")
    cols = catalogue.get(table, [])
    extra = sorted(set(frame.columns) - set(cols))
    if extra:
        raise LandingError(f"raw.{table}: unknown column(s) {extra}; the table has {cols}")
    outside = _outside(table, frame, parts) if parts else 0
    if outside:
        raise LandingError(f"raw.{table}: {outside} row(s) fall outside the partitions being replaced")
    return cols


def _delete_sql(table: str, parts: list[tuple[Any, ...]]) -> tuple[str, list[Any]]:
    """ONE delete for all of a table's partitions: per leading-key group, the last key in a list, and the last
    key's overall range first so DuckDB's zone maps skip the row groups of other hours/days."""
    keys = PARTITION_KEYS[table]
    *lead, last = keys
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for p in parts:
        groups.setdefault(p[:-1], []).append(p[-1])
    lasts = [p[-1] for p in parts]
    params: list[Any] = []
    terms = []
    for prefix, values in groups.items():
        conds = [f"{k} = ?" for k in lead]
        conds.append(f"{last} in ({', '.join('?' * len(values))})")
        params += [*prefix, *values]
        terms.append("(" + " and ".join(conds) + ")")
    where = f"{last} between ? and ? and ({' or '.join(terms)})"
    try:
        bounds = [min(lasts), max(lasts)]
    except TypeError:  # values that do not order (mixed types): no range, the list alone
        where, bounds = " or ".join(terms), []
    # identifiers come from PARTITION_KEYS, never from the caller's data; values are bound
    return f"delete from raw.{table} where {where}", [*bounds, *params]  # noqa: S608


def replace_partitions(
    con: duckdb.DuckDBPyConnection,
    batches: Mapping[str, pd.DataFrame],
    partitions: Sequence[Mapping[str, Any]],
) -> dict[str, int]:
    """Replace `partitions` (e.g. [{"cluster": "c", "hour_ts": h}]) in every table of `batches` atomically.

    Rows of a batch that fall outside the given partitions are rejected: a writer owns only what it names.
    Every batch is checked before the transaction starts; then per table one delete over the named partitions
    and one insert straight from the frame (DuckDB scans the pandas columns; no row conversion, no copy).
    Returns rows written per table.
    """
    catalogue = _catalogue(con)
    plan = []
    for table, frame in batches.items():
        parts = _partition_set(table, partitions) if table in PARTITION_KEYS else []
        cols = _checked(catalogue, table, frame, parts)
        if parts:
            plan.append((table, frame, parts, cols))
    extracted_at = datetime.now(UTC).replace(tzinfo=None)
    written: dict[str, int] = {}
    con.execute("begin transaction")
    try:
        for table, frame, parts, cols in plan:
            con.execute(*_delete_sql(table, parts))
            if len(frame):
                con.register("_kl_batch", frame)
                names = list(frame.columns)
                select = ", ".join(names)
                params: list[Any] = []
                if "_extracted_at" in cols and "_extracted_at" not in names:
                    names.append("_extracted_at")
                    select += ", ?::timestamp"
                    params.append(extracted_at)
                con.execute(f"insert into raw.{table} ({', '.join(names)}) select {select} from _kl_batch",  # noqa: S608
                            params)
                con.unregister("_kl_batch")
            written[table] = len(frame)
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return written
