"""The allocation rollups: marts.fct_allocation_daily collapsed per day, cluster, row kind and estimation reasons, and
per (namespace) / (configured label keys) / (namespace, controller, label keys), in the serving copy, so the common
allocation queries read thousands of rows instead of millions.

A rollup row holds only sums, minima/maxima and properties kept where all its members agree, of mart columns: the
engine's own pre-sharing collapse (`collapse_columns`) split in two stages, build (detail rows -> rollup rows, with
time- and energy-weighted averages kept as weighted sums) and read (rollup rows -> what the detail collapse gives).
Every step of that collapse is a sum, min, max or an all-members-agree test, so collapsing rollup rows gives the
detail collapse's answer (the coarser rollups are merged from the finest one the same way). The engine reads the
smallest rollup that keeps every column the request names, and the detail table when none does (tests/integration/test_allocation_rollup.py asserts both paths answer the same).

The build and the collapse live here, below serving/, because the publish (warehouse/publish.py) builds the rollups
and the engine (serving/query/allocation.py, which finds them with `rollups`) collapses with the same columns.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from pipelines.warehouse.allocation_columns import column_names
from pipelines.warehouse.sharing_macros import LABEL_KEY_RE, label_value_sql

ROLLUP_SCHEMA = "api"
ROLLUPS_TABLE = f"{ROLLUP_SCHEMA}.allocation_rollups"  # one row per rollup: table, detail columns kept, rows
ROLLUP_LABELS_TABLE = f"{ROLLUP_SCHEMA}.allocation_rollup_labels"  # label key -> rollup column
# label keys kept as rollup columns: `app` (label:app aggregates, the `product` filter alias); more keys add groups
DEFAULT_LABEL_KEYS: tuple[str, ...] = ("app",)
# detail-collapse group keys every request has; the engine adds the step, key, shared and filtered flags (and node)
BASE_GROUP = ("allocation_kind", "cluster", "estimation_reasons")
# rollup table -> (detail columns it keeps beyond BASE_GROUP, whether it keeps the label columns); the first is the
# finest (built from the detail table), the others are merged from it
LEVELS: dict[str, tuple[tuple[str, ...], bool]] = {
    "allocation_rollup_controller": (("namespace", "controller_kind", "controller"), True),
    "allocation_rollup_namespace": (("namespace",), False),
    "allocation_rollup_label": ((), True),
}
# columns averaged by weight: time-weighted averages, and the energy-weighted intensity and PUE
_INTENSITIES = ("carbon_intensity_g_per_kwh", "pue")
_STAGES = ("detail", "build", "merge", "read")


def _weighted() -> dict[str, str]:
    return {**{c: "minutes" for c in column_names("average")}, **{c: "energy_kwh" for c in _INTENSITIES}}


def collapse_columns(group: Sequence[str], stage: str) -> list[str]:
    """SELECT items collapsing rows to one per `group`: stage `detail` (detail rows -> final values), `build`
    (detail rows -> rollup rows: weighted averages as weighted sums), `merge` (rollup rows -> coarser rollup rows)
    or `read` (rollup rows -> final values).

    Properties that differ inside a group become NULL (equal-on-all-members by hash: comparing long JSON strings
    row by row dominated), averages stay time-weighted, and `_rows` keeps the member count."""
    assert stage in _STAGES
    props = [c for c in column_names("property") if c not in group]
    cols = list(group)
    cols += [f"CASE WHEN count({c}) = count(*) AND min(hash({c})) = max(hash({c})) THEN any_value({c}) END AS {c}"
             for c in props]
    cols += ["min(start_ts) AS start_ts", "max(end_ts) AS end_ts", "sum(minutes) AS minutes"]
    for c, w in _weighted().items():
        cols.append({"detail": f"sum({c} * {w}) / nullif(sum({w}), 0) AS {c}",
                     "build": f"sum({c} * {w}) AS {c}",
                     "merge": f"sum({c}) AS {c}",
                     "read": f"sum({c}) / nullif(sum({w}), 0) AS {c}"}[stage])
    cols += [f"max({c}) AS {c}" for c in column_names("max")]
    cols += [f"sum({c}) AS {c}" for c in column_names("sum", "energy")]
    cols += ["bool_or(idle_clamped) AS idle_clamped", "bool_or(is_estimated) AS is_estimated",
             "count(*) AS _rows" if stage in ("detail", "build") else "sum(_rows) AS _rows"]
    return cols


def _label_key(key: str) -> str:
    if not LABEL_KEY_RE.match(key):  # embedded escaped in SQL text by the lookup: checked first, as the API does
        raise ValueError(f"serving.label_columns: {key} is not allowed; label and annotation keys use letters, "
                         "digits, '.', '_', '-', '/' (max 253)")
    return key


def build_rollup(con: duckdb.DuckDBPyConnection, catalog: str | None = None,
                 label_keys: Sequence[str] = DEFAULT_LABEL_KEYS, source: str = "marts.fct_allocation_daily"
                 ) -> dict[str, int]:
    """Create the rollups of LEVELS (and the tables naming them and their label columns) in `catalog` (the current
    one if None) from `source`, each sorted by day and cluster so a window's rows sit together; returns their row
    counts."""
    pre = f"{catalog}.{ROLLUP_SCHEMA}" if catalog else ROLLUP_SCHEMA
    labels = {k: f"label_{i}" for i, k in enumerate(_label_key(k) for k in label_keys)}
    extracted = "".join(f", {label_value_sql('label', k)} AS {col}" for k, col in labels.items())
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {pre}")
    counts: dict[str, int] = {}
    finest = next(iter(LEVELS))
    for table, (kept, with_labels) in LEVELS.items():
        group = ["usage_date", "window_start", *BASE_GROUP, *kept, *(labels.values() if with_labels else ())]
        if table == finest:  # label keys are validated and embedded escaped by the sharing macro's lookup
            stage, rel = "build", f"(SELECT *{extracted} FROM {source})"  # noqa: S608
        else:
            stage, rel = "merge", f"{pre}.{finest}"
        # identifiers are fixed names (LEVELS, the column list)
        con.execute(f"""CREATE OR REPLACE TABLE {pre}.{table} AS
            SELECT {', '.join(collapse_columns(group, stage))} FROM {rel} AS _d
            GROUP BY {', '.join(group)} ORDER BY {', '.join(group)}""")  # noqa: S608
        counts[table] = int(con.execute(f"SELECT count(*) FROM {pre}.{table}").fetchone()[0])  # noqa: S608
    con.execute(f"CREATE OR REPLACE TABLE {pre}.allocation_rollups "
                "(table_name VARCHAR, columns VARCHAR[], row_count BIGINT)")
    con.executemany(f"INSERT INTO {pre}.allocation_rollups VALUES (?, ?, ?)",  # noqa: S608
                    [(t, [*BASE_GROUP, *kept, *(labels.values() if lab else ())], counts[t])
                     for t, (kept, lab) in LEVELS.items()])
    con.execute(f"CREATE OR REPLACE TABLE {pre}.allocation_rollup_labels (label_key VARCHAR, column_name VARCHAR)")
    if labels:
        con.executemany(f"INSERT INTO {pre}.allocation_rollup_labels VALUES (?, ?)",  # noqa: S608
                        list(labels.items()))
    return counts
