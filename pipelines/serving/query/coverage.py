"""Whether a mart is in the snapshot, and which days of a window a daily mart keyed by (usage_date, cluster) lacks.

Every engine asks of its own mart (allocation.py of fct_allocation_daily, assets.py of fct_asset_daily and
fct_node_energy_daily): a day can be materialised in one mart and not yet in another."""

from __future__ import annotations

from datetime import date, timedelta

import duckdb

from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.windows import DaySpan

# the marts this module may name in SQL text (identifiers never come from a request)
KNOWN_MARTS = ("fct_allocation_daily", "fct_asset_daily", "fct_cluster_daily", "fct_node_energy_daily")


def has_mart(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    row = con.execute("SELECT count(*) FROM information_schema.tables "
                      "WHERE table_schema = 'marts' AND table_name = ?", [table]).fetchone()
    return bool(row and row[0])


def has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    """Whether marts.<table> has <column> (a serving copy published before the column was added has not)."""
    row = con.execute("SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'marts' AND table_name = ? "
                      "AND column_name = ?", [table, column]).fetchone()
    return bool(row and row[0])


def require_mart(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """A 503 naming `marts.<table>` when the snapshot lacks it (nothing published yet), before any query runs."""
    # duckdb_tables()/duckdb_views(): information_schema.tables took ~3 ms of every query
    exists = con.execute("SELECT (SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'marts' AND table_name = $t)"
                         " + (SELECT count(*) FROM duckdb_views() WHERE schema_name = 'marts' AND view_name = $t)",
                         {"t": table}).fetchone()
    if not exists or not exists[0]:
        raise QueryError("window", "", "", status=503, message=(
            f"marts.{table} is not in the serving snapshot; run the pipeline (kubeledger materialize) to publish"))


def missing_days(con: duckdb.DuckDBPyConnection, table: str, start: date, end: date,
                 source: str | None = None) -> list[date]:
    """Days of [start, end) the mart lacks: beyond its materialised range, or a gap in a cluster's life.
    `source`: a smaller relation with the mart's (cluster, usage_date) pairs to read instead (an allocation rollup,
    schema api)."""
    assert table in KNOWN_MARTS
    assert source is None or source.startswith("api.allocation_rollup_")
    rows = con.execute(
        f"SELECT cluster, min(usage_date), max(usage_date), "  # noqa: S608 - allow-listed table name
        f"list(DISTINCT usage_date) FILTER (WHERE usage_date >= $s AND usage_date < $e) "
        f"FROM {source or 'marts.' + table} GROUP BY cluster", {"s": start, "e": end}).fetchall()
    wanted = {start + timedelta(days=i) for i in range((end - start).days)}
    if not rows:
        return sorted(wanted)
    first = min(r[1] for r in rows)
    last = max(r[2] for r in rows)
    missing = {d for d in wanted if d < first or d > last}
    for _cluster, c_first, c_last, present in rows:
        have = set(present or [])
        missing |= {d for d in wanted if c_first <= d <= c_last and d not in have}
    return sorted(missing)


def day_ranges(days: list[date], shown: int = 10) -> str:
    """2026-11-01..2026-11-03, 2026-11-07 — compact, at most `shown` ranges."""
    spans: list[tuple[date, date]] = []
    for d in sorted(days):
        if spans and d == spans[-1][1] + timedelta(days=1):
            spans[-1] = (spans[-1][0], d)
        else:
            spans.append((d, d))
    text = [a.isoformat() if a == b else f"{a.isoformat()}..{b.isoformat()}" for a, b in spans[:shown]]
    more = f" and {len(spans) - shown} more range(s)" if len(spans) > shown else ""
    return ", ".join(text) + more


def mart_coverage_notes(con: duckdb.DuckDBPyConnection, span: DaySpan, table: str,
                        source: str | None = None) -> tuple[list[str], bool]:
    """Notes naming the days of the span `marts.<table>` lacks, and whether any day of the span is there
    (read from `source`, see missing_days)."""
    if span.empty:
        return [], False
    start, end = span.start.date(), span.end.date()
    missing = missing_days(con, table, start, end, source)
    if not missing:
        return [], True
    row = con.execute(f"SELECT min(usage_date), max(usage_date) FROM {source or 'marts.' + table}").fetchone()  # noqa: S608
    have = f"materialised: {row[0]}..{row[1]}" if row and row[0] else "nothing is materialised yet"
    total = (end - start).days
    note = (f"{len(missing)} of the {total} day(s) {start}..{end - timedelta(days=1)} are not materialised in "
            f"marts.{table} of the serving copy and were left out: {day_ranges(missing)} ({have}; backfill "
            "them with kubeledger backfill)")
    return [note], len(missing) < total
