"""Retention: prune_raw drops raw hourly rows older than N days before the newest hour, in one transaction,
from every raw hourly table, and never touches the marts or the non-hourly raw tables."""

from datetime import UTC, date, datetime, timedelta

import duckdb
import pytest

from pipelines.warehouse import retention
from pipelines.warehouse.connection import connect, ensure_raw_schema
from pipelines.warehouse.retention import HOURLY_RAW_TABLES, prune_raw

NEWEST = datetime(2026, 11, 30, 23)
RETENTION = 35
CUTOFF = NEWEST - timedelta(days=RETENTION)  # rows strictly before this go
OLD_HOURS = [CUTOFF - timedelta(days=10), CUTOFF - timedelta(hours=1)]
KEPT_HOURS = [CUTOFF, CUTOFF + timedelta(hours=1), NEWEST]


def _value(data_type: str, hour: datetime, i: int):
    t = data_type.upper()
    if t.startswith("TIMESTAMP"):
        return hour
    if t == "DATE":
        return hour.date()
    if t in {"DOUBLE", "FLOAT", "REAL"} or t.startswith("DECIMAL"):
        return 1.0
    if t in {"BIGINT", "INTEGER", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT", "UINTEGER"}:
        return 1
    if t == "BOOLEAN":
        return False
    return f"v{i}"


def insert_row(con: duckdb.DuckDBPyConnection, table: str, hour: datetime, i: int) -> None:
    """One row with every NOT NULL column filled (hour_ts = hour); nullable columns left NULL."""
    cols = con.execute(
        "select column_name, data_type, is_nullable from duckdb_columns() "
        "where schema_name = 'raw' and table_name = ? order by column_index", [table]).fetchall()
    names, values = [], []
    for name, data_type, nullable in cols:
        if name == "hour_ts":
            names.append(name)
            values.append(hour)
        elif not nullable:
            names.append(name)
            values.append(_value(data_type, hour, i))
    placeholders = ", ".join("?" for _ in names)
    con.execute(f"insert into raw.{table} ({', '.join(names)}) values ({placeholders})", values)  # noqa: S608


@pytest.fixture()
def con(tmp_path):
    c = connect(tmp_path / "w.duckdb")
    ensure_raw_schema(c)
    for table in HOURLY_RAW_TABLES:
        for i, hour in enumerate(OLD_HOURS + KEPT_HOURS):
            insert_row(c, table, hour, i)
    # non-hourly raw tables and a mart with old rows: retention must leave them alone
    insert_row(c, "boavizta_impacts", OLD_HOURS[0], 0)
    c.execute("create schema if not exists marts")
    c.execute("create table marts.fct_allocation_daily (usage_date date, cluster varchar, total_cost double)")
    c.execute("insert into marts.fct_allocation_daily values (?, 'c1', 1.5), (?, 'c1', 2.5), (?, 'c1', 3.5)",
              [date(2025, 1, 1), OLD_HOURS[0].date(), NEWEST.date()])
    yield c
    c.close()


def _has_hour(con, table: str) -> bool:
    return bool(con.execute("select count(*) from duckdb_columns() where schema_name = 'raw' and table_name = ? "
                            "and column_name = 'hour_ts'", [table]).fetchone()[0])


def hours_in(con, table: str) -> list[datetime]:
    return [r[0] for r in con.execute(f"select hour_ts from raw.{table} order by 1").fetchall()]  # noqa: S608


def test_every_hourly_raw_table_exists_and_has_hour_ts(con):
    tables = {r[0] for r in con.execute(
        "select table_name from duckdb_tables() where schema_name = 'raw'").fetchall()}
    hourly = {t for t in tables if _has_hour(con, t)}
    # every raw table keyed by hour is pruned; nothing else is
    assert hourly == set(HOURLY_RAW_TABLES)


def test_rows_older_than_retention_are_deleted_from_every_table(con):
    deleted = prune_raw(con, RETENTION, NEWEST)
    assert deleted == {t: len(OLD_HOURS) for t in HOURLY_RAW_TABLES}
    for table in HOURLY_RAW_TABLES:
        # the boundary hour (exactly N days before the newest) is kept
        assert hours_in(con, table) == KEPT_HOURS, table


def test_marts_and_non_hourly_raw_tables_are_untouched(con):
    before = con.execute("select * from marts.fct_allocation_daily order by all").fetchall()
    cached = con.execute("select * from raw.boavizta_impacts").fetchall()
    prune_raw(con, RETENTION, NEWEST)
    assert con.execute("select * from marts.fct_allocation_daily order by all").fetchall() == before
    assert len(before) == 3
    assert con.execute("select * from raw.boavizta_impacts").fetchall() == cached
    assert len(cached) == 1


def test_second_prune_is_a_no_op(con):
    prune_raw(con, RETENTION, NEWEST)
    assert prune_raw(con, RETENTION, NEWEST) == {t: 0 for t in HOURLY_RAW_TABLES}
    for table in HOURLY_RAW_TABLES:
        assert hours_in(con, table) == KEPT_HOURS


def test_timezone_aware_newest_is_treated_as_utc(con):
    aware = NEWEST.replace(tzinfo=UTC)
    deleted = prune_raw(con, RETENTION, aware)
    assert deleted == {t: len(OLD_HOURS) for t in HOURLY_RAW_TABLES}


def test_a_failure_prunes_nothing(con, monkeypatch):
    # the last "table" does not exist: the deletes already done in the earlier tables must roll back
    monkeypatch.setattr(retention, "HOURLY_RAW_TABLES", (*HOURLY_RAW_TABLES, "no_such_table"))
    with pytest.raises(duckdb.CatalogException):
        prune_raw(con, RETENTION, NEWEST)
    for table in HOURLY_RAW_TABLES:
        assert hours_in(con, table) == OLD_HOURS + KEPT_HOURS, table
    # the connection is usable afterwards (no transaction left open)
    monkeypatch.undo()
    assert prune_raw(con, RETENTION, NEWEST)["node_hours"] == len(OLD_HOURS)


def test_zero_retention_keeps_only_the_newest_hour(con):
    prune_raw(con, 0, NEWEST)
    for table in HOURLY_RAW_TABLES:
        assert hours_in(con, table) == [NEWEST]
