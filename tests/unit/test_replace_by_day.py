"""The replace-by-day of the incremental models on DuckDB (macros/portable.sql duckdb__get_delete_insert_merge_sql,
overriding dbt-duckdb's): exactly the stored rows of the (usage_date, cluster) keys being rebuilt go, everything else
stays, and the stored rows are matched against the distinct keys (a semi-join), not joined to every new row — the
join dbt-duckdb writes made a re-built 1,000-node day take over ten minutes."""

from __future__ import annotations

from datetime import date
from types import SimpleNamespace

import duckdb
import jinja2
import pytest

from pipelines import DBT_PROJECT_DIR


@pytest.fixture(scope="module")
def merge_sql():
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False,  # noqa: S701 - renders SQL
                             extensions=["jinja2.ext.do"])
    # dbt's own helper, as dbt-core defines it
    env.globals["get_quoted_csv"] = lambda names: ", ".join(f'"{n}"' for n in names)
    module = env.from_string((DBT_PROJECT_DIR / "macros" / "portable.sql").read_text()).module

    def render(unique_key, predicates=None) -> str:
        columns = [SimpleNamespace(name=n) for n in ("usage_date", "cluster", "pod", "cost")]
        return str(module.duckdb__get_delete_insert_merge_sql("stored", "new_rows", unique_key, columns, predicates))
    return render


def _warehouse(n_per_key: int = 3) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE stored (usage_date DATE, cluster VARCHAR, pod VARCHAR, cost DOUBLE)")
    for day in ("2026-01-01", "2026-01-02"):
        for cluster in ("a", "b"):
            con.executemany("INSERT INTO stored VALUES (?, ?, ?, 1.0)",
                            [[day, cluster, f"old-{i}"] for i in range(n_per_key)])
    # the rebuilt day of cluster a: more rows than before, one NULL cluster row that matches nothing stored
    con.execute("CREATE TABLE new_rows AS SELECT DATE '2026-01-02' AS usage_date, 'a' AS cluster, "
                "'new-' || i AS pod, 2.0 AS cost FROM range(5) t(i)")
    return con


def test_replaces_exactly_the_rebuilt_keys(merge_sql) -> None:
    con = _warehouse()
    con.execute(merge_sql(["usage_date", "cluster"]))
    rows = con.execute("SELECT usage_date, cluster, count(*), sum(cost), min(pod) FROM stored "
                       "GROUP BY ALL ORDER BY ALL").fetchall()
    assert rows == [
        (date(2026, 1, 1), "a", 3, 3.0, "old-0"),
        (date(2026, 1, 1), "b", 3, 3.0, "old-0"),
        (date(2026, 1, 2), "a", 5, 10.0, "new-0"),   # replaced whole, old rows gone
        (date(2026, 1, 2), "b", 3, 3.0, "old-0"),    # same day, other cluster: untouched
    ]


def test_a_rebuilt_day_is_idempotent(merge_sql) -> None:
    con = _warehouse()
    for _ in range(3):
        con.execute(merge_sql(["usage_date", "cluster"]))
    assert con.execute("SELECT count(*), sum(cost) FROM stored").fetchone() == (14, 19.0)


def test_single_key_and_predicates(merge_sql) -> None:
    con = _warehouse()
    con.execute(merge_sql("usage_date", ["DBT_INCREMENTAL_TARGET.cluster = 'a'"]))
    # the key is the day only and the predicate keeps cluster b's rows of that day
    assert con.execute("SELECT cluster, count(*) FROM stored WHERE usage_date = DATE '2026-01-02' "
                       "GROUP BY ALL ORDER BY ALL").fetchall() == [("a", 5), ("b", 3)]


def test_stored_rows_are_matched_to_distinct_keys_not_joined_to_new_rows(merge_sql) -> None:
    con = _warehouse()
    delete = merge_sql(["usage_date", "cluster"]).split(";")[0]
    plan = "\n".join(row[1] for row in con.execute(f"EXPLAIN {delete}").fetchall())
    assert "SEMI" in plan.upper(), plan
    assert "new_rows" in delete and " using " not in delete.lower()
