"""What BI tools read agrees with the allocation API, keeps the warehouse's documentation and never goes stale.

On a real demo day (the pipeline through the CLI, shared with the other serving tests): the bi.* views equal the API
engine's answer for the same day and key (namespace, controller, cluster) to 1e-9; no key column of a view and no
`namespace` in the Parquet export is NULL; every table and column comment of the working marts is in the serving
copy; every mart is exported to Parquet, and lake.duckdb's views return exactly the marts. A connection kept open to
lake.duckdb sees a newly published day; one kept open to serving.duckdb does not until it reconnects, which the
README's reconnect-on-swap patterns (plain Python, SQLAlchemy pool) do.
"""

from __future__ import annotations

import os
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pytest

from pipelines.serving.query.allocation import AllocationQuery, policy_defaults, query_allocations
from pipelines.settings import load_settings
from pipelines.warehouse.publish import (
    LAKE_FILE,
    MART_TABLES,
    NAMESPACE_KEY_SQL,
    PARQUET_MARTS,
    export_parquet,
    publish_serving_copy,
    write_lake,
)
from tests.fixtures.bi_serving import add_day
from tests.fixtures.pipeline_workdir import D1, D2, D3, published_workdir

pytestmark = pytest.mark.integration

BI_VIEWS = ("namespace_daily", "controller_daily", "controller_daily_shared", "cluster_daily", "asset_daily",
            "node_energy_daily")
KEY_COLUMNS = ("usage_date", "cluster", "namespace", "controller_kind", "controller", "controller_key",
               "asset_kind", "asset_name", "node")
# API field -> bi.namespace_daily / bi.controller_daily column
NAMESPACE_FIELDS = {"totalCost": "total_cost", "cpuCost": "cpu_cost", "ramCost": "ram_cost", "gpuCost": "gpu_cost",
                    "pvCost": "pv_cost", "networkCost": "network_cost", "loadBalancerCost": "load_balancer_cost",
                    "sharedCost": "shared_cost", "externalCost": "external_cost", "energyKwh": "energy_kwh",
                    "co2eOperationalG": "co2e_operational_g", "co2eEmbodiedG": "co2e_embodied_g",
                    "co2eTotalG": "co2e_total_g"}
CONTROLLER_FIELDS = {"totalCost": "total_cost", "cpuCost": "cpu_cost", "ramCost": "ram_cost", "gpuCost": "gpu_cost",
                     "pvCost": "pv_cost", "networkCost": "network_cost", "loadBalancerCost": "load_balancer_cost",
                     "energyKwh": "energy_kwh", "co2eTotalG": "co2e_total_g"}
TOL = 1e-9


def bi_warehouse(tmp_path_factory, name: str) -> Path:
    """wh/ of a fresh copy of a workdir with D1 built and published by the real CLI.

    lake.duckdb names the Parquet folder by its absolute path, so the copy's is rewritten to read the copy's files
    (as the next export would)."""
    wh = published_workdir(tmp_path_factory, name) / "wh"
    assert write_lake(wh / "kubeledger.duckdb", wh / "parquet", wh / "parquet" / LAKE_FILE)
    return wh


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    return bi_warehouse(tmp_path_factory, "bi")


def day_window(day: date) -> str:
    return f"{day.isoformat()}T00:00:00Z,{(day + timedelta(days=1)).isoformat()}T00:00:00Z"


def api(serving: Path, day: date, **kw) -> dict[str, dict]:
    con = duckdb.connect(str(serving), read_only=True)
    try:
        # the views are list-priced (total_cost); the API adds the demo bill's adjustments unless reconcile=false
        sets = query_allocations(con, AllocationQuery(window=day_window(day), **{"reconcile": False, **kw}))
    finally:
        con.close()
    assert len(sets) == 1
    return sets[0]


def rows(path: Path, sql: str, params: list | None = None) -> list[dict]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        cur = con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


def summed(records: list[dict], key, columns) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for r in records:
        acc = out.setdefault(key(r), dict.fromkeys(columns, 0.0))
        for c in columns:
            acc[c] += r[c] or 0.0
    return out


def assert_agree(view: dict[str, dict[str, float]], answer: dict[str, dict], fields: dict[str, str], what: str):
    assert set(view) == set(answer), f"{what}: keys only in the view {sorted(set(view) - set(answer))}, " \
                                     f"only in the API {sorted(set(answer) - set(view))}"
    problems = []
    for key, alloc in answer.items():
        for api_field, column in fields.items():
            got, want = view[key][column], alloc[api_field] or 0.0
            if abs(got - want) > TOL * max(1.0, abs(want)):
                problems.append(f"{key}.{api_field}: view {got!r} != API {want!r}")
    assert not problems, f"{what}: " + "; ".join(problems[:10])


def test_bi_views_agree_with_the_api_to_the_cent(wh: Path) -> None:
    serving = wh / "serving.duckdb"
    ns = rows(serving, "select * from bi.namespace_daily where usage_date = ?", [D1])
    view = summed(ns, lambda r: r["namespace"], NAMESPACE_FIELDS.values())
    answer = api(serving, D1, aggregate="namespace")
    # idle and unmounted volumes are rows of their own, never folded into a namespace or into each other
    assert {"__idle__", "__unmounted__"} <= set(view)
    assert_agree(view, answer, NAMESPACE_FIELDS, "namespace")
    estimated = {r["namespace"]: r["is_estimated"] for r in ns}
    assert estimated == {k: a["isEstimated"] for k, a in answer.items()}

    ctrl = rows(serving, "select * from bi.controller_daily where usage_date = ?", [D1])
    assert_agree(summed(ctrl, lambda r: r["controller_key"], CONTROLLER_FIELDS.values()),
                 api(serving, D1, aggregate="controller"), CONTROLLER_FIELDS, "controller")
    assert "__unallocated__" in {r["controller_key"] for r in ctrl}, "the demo has a bare pod"

    def ns_ctrl(r):  # the API's key for aggregate=namespace,controller
        special = r["controller_key"] in ("__idle__", "__unmounted__")
        return r["controller_key"] if special else f"{r['namespace']}/{r['controller_key']}"
    assert_agree(summed(ctrl, ns_ctrl, CONTROLLER_FIELDS.values()),
                 api(serving, D1, aggregate="namespace,controller"), CONTROLLER_FIELDS, "namespace,controller")

    # the shared view = the API with the marts' sharing policy, pooled per cluster-day
    sharing = load_settings(wh.parent / "kubeledger.yaml").sharing
    shared = rows(serving, "select * from bi.controller_daily_shared where usage_date = ?", [D1])
    answer = api(serving, D1, aggregate="controller", **policy_defaults(sharing), share_scope="cluster")
    for alloc in answer.values():
        alloc["idleReceived"] = (alloc["cpuCostIdle"] or 0) + (alloc["ramCostIdle"] or 0) + (alloc["gpuCostIdle"] or 0)
    assert_agree(summed(shared, lambda r: r["controller_key"],
                        ("total_cost", "shared_cost", "idle_cost_received", "energy_kwh", "co2e_total_g")),
                 answer, {"totalCost": "total_cost", "sharedCost": "shared_cost", "idleReceived": "idle_cost_received",
                          "energyKwh": "energy_kwh", "co2eTotalG": "co2e_total_g"}, "controller (shared)")

    clusters = rows(serving, "select * from bi.cluster_daily where usage_date = ?", [D1])
    view = {c["cluster"]: {"total_cost": c["workload_cost"]} for c in clusters}
    for key, column in (("__idle__", "idle_cost"), ("__unmounted__", "unmounted_cost")):
        if any(c[column] for c in clusters):
            view[key] = {"total_cost": sum(c[column] for c in clusters)}
    assert_agree(view, api(serving, D1, aggregate="cluster"), {"totalCost": "total_cost"}, "cluster")
    # allocation_total_cost is what the namespace rows add up to
    assert sum(c["allocation_total_cost"] for c in clusters) == pytest.approx(
        sum(r["total_cost"] for r in ns), rel=1e-12)


def test_no_null_keys_in_any_bi_view_or_parquet_file(wh: Path) -> None:
    for path in (wh / "serving.duckdb", wh / "parquet" / LAKE_FILE):
        con = duckdb.connect(str(path), read_only=True)
        try:
            views = {r[0] for r in con.execute(
                "select view_name from duckdb_views() where schema_name = 'bi'").fetchall()}
            assert set(BI_VIEWS) <= views, (path.name, sorted(views))
            for view in views:
                cols = [r[0] for r in con.execute(
                    "select column_name from duckdb_columns() where schema_name = 'bi' and table_name = ?",
                    [view]).fetchall()]
                keys = [c for c in cols if c in KEY_COLUMNS]
                nulls = con.execute("select " + ", ".join(  # noqa: S608 - names from the catalog
                    f'count(*) filter (where "{c}" is null)' for c in keys) + f" from bi.{view}").fetchone()
                assert not any(nulls), f"{path.name} bi.{view}: NULLs in {dict(zip(keys, nulls, strict=True))}"
                assert con.execute(f"select count(*) from bi.{view}").fetchone()[0] > 0, view  # noqa: S608
        finally:
            con.close()
    for table in ("fct_allocation_daily", "fct_allocation_shared_daily"):
        glob = wh / "parquet" / table / "*" / "*" / "data.parquet"
        n, nulls, idle_named = duckdb.connect().sql(
            f"select count(*), count(*) filter (where namespace is null), "  # noqa: S608
            f"bool_and(namespace = '__idle__') filter (where allocation_kind = 'idle') "
            f"from read_parquet('{glob}', hive_partitioning = true)").fetchall()[0]
        assert n > 0 and nulls == 0 and idle_named, (table, n, nulls, idle_named)


def test_serving_copy_keeps_every_comment_of_the_working_marts(wh: Path) -> None:
    sql_tables = ("select table_name, comment from duckdb_tables() where schema_name = 'marts' "
                  "and comment is not null and comment <> ''")
    sql_columns = ("select table_name, column_name, comment from duckdb_columns() where schema_name = 'marts' "
                   "and comment is not null and comment <> ''")
    working_tables = {r["table_name"]: r["comment"] for r in rows(wh / "kubeledger.duckdb", sql_tables)}
    working_columns = {(r["table_name"], r["column_name"]): r["comment"]
                       for r in rows(wh / "kubeledger.duckdb", sql_columns)}
    working_tables = {t: c for t, c in working_tables.items() if t in MART_TABLES}
    working_columns = {k: c for k, c in working_columns.items() if k[0] in MART_TABLES}
    assert set(working_tables) == set(MART_TABLES), "dbt persist_docs should comment every mart"
    assert len(working_columns) > 100
    serving = wh / "serving.duckdb"
    assert {r["table_name"]: r["comment"] for r in rows(serving, sql_tables)} == working_tables
    assert {(r["table_name"], r["column_name"]): r["comment"] for r in rows(serving, sql_columns)} == working_columns
    # the lake's views over Parquet carry the same documentation
    lake = wh / "parquet" / LAKE_FILE
    lake_views = {r["view_name"]: r["comment"] for r in rows(
        lake, "select view_name, comment from duckdb_views() where schema_name = 'marts'")}
    # (the lake holds the marts partitioned by cluster and day: PARQUET_MARTS)
    assert lake_views == {t: c for t, c in working_tables.items() if t in PARQUET_MARTS}
    assert {(r["table_name"], r["column_name"]): r["comment"] for r in rows(lake, sql_columns)} == {
        k: c for k, c in working_columns.items() if k[0] in PARQUET_MARTS}
    # and every bi view and each of its columns is documented
    for path in (serving, lake):
        undocumented = rows(path, "select table_name, column_name from duckdb_columns() where schema_name = 'bi' "
                                  "and (comment is null or comment = '')")
        assert not undocumented, (path.name, undocumented)
        views = rows(path, "select view_name, comment from duckdb_views() where schema_name = 'bi'")
        assert all(v["comment"] for v in views), views


def test_every_mart_is_exported_and_the_lake_returns_exactly_the_marts(wh: Path) -> None:
    parquet = wh / "parquet"
    with duckdb.connect(str(wh / "serving.duckdb"), read_only=True) as serving:
        filled = [t for t in PARQUET_MARTS  # a mart no day has rows for (the outcomes of an empty ledger) has no file
                  if serving.execute(f"select count(*) from marts.{t}").fetchone()[0]]  # noqa: S608
    assert {"fct_allocation_daily", "fct_recommendation_daily"} <= set(filled)
    for table in filled:
        assert (parquet / table / "cluster=demo" / f"date={D1.isoformat()}" / "data.parquet").exists(), table
        file_cols = [r[0] for r in duckdb.connect().sql(
            f"describe select * from read_parquet('{parquet / table}/cluster=demo/date={D1.isoformat()}/data.parquet', "  # noqa: S608
            "hive_partitioning = false)"
        ).fetchall()]
        assert "cluster" not in file_cols, "cluster is the partition, not a file column"
    con = duckdb.connect(str(parquet / LAKE_FILE), read_only=True)
    try:
        sources = con.execute("select view_name, sql from duckdb_views() where schema_name = 'marts'").fetchall()
        assert {v for v, _ in sources} == set(PARQUET_MARTS)
        assert all(f"'{parquet.resolve() / v}/*/*/data.parquet'" in sql for v, sql in sources if v in filled), sources
        con.execute(f"attach '{wh / 'serving.duckdb'}' as s (read_only)")
        for table in PARQUET_MARTS:
            lake_cols, serving_cols = (con.execute(
                "select column_name, data_type from duckdb_columns() where database_name = ? "
                "and schema_name = 'marts' and table_name = ? order by column_index", [db, table]).fetchall()
                for db in ("lake", "s"))
            assert lake_cols == serving_cols, table
            names = {c for c, _ in serving_cols}
            # the Parquet rows are the mart's rows, namespace filled with the API's names
            fill = f" replace ({NAMESPACE_KEY_SQL} as namespace)" if {"namespace", "allocation_kind"} <= names else ""
            expected = f"select *{fill} from s.marts.{table}"  # noqa: S608 - names from MART_TABLES
            in_lake = f"select * from marts.{table}"  # noqa: S608
            for a, b in ((in_lake, expected), (expected, in_lake)):
                extra = con.execute(f"select count(*) from ({a} except all {b})").fetchone()[0]  # noqa: S608
                assert extra == 0, f"{table}: {extra} rows differ between the lake and the serving copy"
        # the bi views give the same answer over Parquet as over the serving copy
        for view in BI_VIEWS:
            cols = con.execute(
                "select column_name, data_type from duckdb_columns() where database_name = 's' "
                "and schema_name = 'bi' and table_name = ? order by column_index", [view]).fetchall()
            keys = ", ".join(f'"{c}"' for c, t in cols if t != "DOUBLE")
            lake_rows = con.execute(f"select * from bi.{view} order by {keys}").fetchall()  # noqa: S608
            serving_rows = con.execute(f"select * from s.bi.{view} order by {keys}").fetchall()  # noqa: S608
            assert len(lake_rows) == len(serving_rows) > 0, view
            for a, b in zip(lake_rows, serving_rows, strict=True):
                for x, y in zip(a, b, strict=True):
                    if isinstance(y, float):
                        assert x == pytest.approx(y, rel=1e-12, abs=1e-12), (view, a, b)
                    else:
                        assert x == y, (view, a, b)
    finally:
        con.close()


class Reconnecting:
    """The README's plain-Python pattern: reopen the serving copy when it was swapped (new inode or mtime).

    DuckDB shares one database instance per file within a process, so the reopen sees the new file only once no
    other connection of the process still has the old one open."""

    def __init__(self, path: Path) -> None:
        self.path, self.ident, self.con = path, None, None

    def connection(self) -> duckdb.DuckDBPyConnection:
        st = os.stat(self.path)
        if (st.st_ino, st.st_mtime_ns) != self.ident or self.con is None:
            self.close()
            self.con = duckdb.connect(str(self.path), read_only=True)
            self.ident = (st.st_ino, st.st_mtime_ns)
        return self.con

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None


DAYS_SQL = "select distinct usage_date from marts.fct_allocation_daily order by 1"
BI_DAYS_SQL = "select distinct usage_date from bi.namespace_daily order by 1"


def publish_next_day(wh: Path, source: date, target: date) -> None:
    working = wh / "kubeledger.duckdb"
    assert add_day(working, source, target)["fct_allocation_daily"] > 0
    publish_serving_copy(working, wh / "serving.duckdb")
    export_parquet(working, wh / "parquet", [target])


def test_lake_connection_sees_a_new_day_and_a_reopened_serving_connection_too(tmp_path_factory) -> None:
    wh = bi_warehouse(tmp_path_factory, "bi-fresh")
    serving, lake = wh / "serving.duckdb", wh / "parquet" / LAKE_FILE
    held_lake = duckdb.connect(str(lake), read_only=True)
    snapshot = duckdb.connect(str(serving), read_only=True)
    pattern = Reconnecting(serving)
    try:
        assert [r[0] for r in held_lake.execute(DAYS_SQL).fetchall()] == [D1]
        assert [r[0] for r in snapshot.execute(DAYS_SQL).fetchall()] == [D1]
        assert [r[0] for r in pattern.connection().execute(DAYS_SQL).fetchall()] == [D1]

        publish_next_day(wh, D1, D2)

        # lake.duckdb: the same connection sees the new day, in the marts and in the bi views
        assert [r[0] for r in held_lake.execute(DAYS_SQL).fetchall()] == [D1, D2]
        assert [r[0] for r in held_lake.execute(BI_DAYS_SQL).fetchall()] == [D1, D2]
        # serving.duckdb: a connection opened before the swap keeps reading its snapshot, without an error
        assert [r[0] for r in snapshot.execute(DAYS_SQL).fetchall()] == [D1]
        snapshot.close()
        # the reconnect-on-swap pattern sees the new day
        assert [r[0] for r in pattern.connection().execute(DAYS_SQL).fetchall()] == [D1, D2]
        assert [r[0] for r in pattern.connection().execute(BI_DAYS_SQL).fetchall()] == [D1, D2]
        pattern.close()
        # and the new day agrees with the API like the first one
        ns = rows(serving, "select * from bi.namespace_daily where usage_date = ?", [D2])
        assert_agree(summed(ns, lambda r: r["namespace"], NAMESPACE_FIELDS.values()),
                     api(serving, D2, aggregate="namespace"), NAMESPACE_FIELDS, "namespace D2")
    finally:
        snapshot.close()
        held_lake.close()
        pattern.close()


def test_sqlalchemy_pool_sees_a_new_day_only_with_the_documented_pattern(tmp_path_factory) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    wh = bi_warehouse(tmp_path_factory, "bi-pool")
    serving = wh / "serving.duckdb"
    url = f"duckdb:///{serving}"
    # a pooled engine: pool_pre_ping and pool_recycle do not help, the old file still answers the ping
    pooled = create_engine(url, connect_args={"read_only": True}, pool_pre_ping=True, pool_recycle=3600)
    seen: dict[str, tuple] = {}

    def fresh_engine():
        """The README's helper: dispose the pool when serving.duckdb was swapped."""
        st = os.stat(serving)
        if seen.get("ident") != (st.st_ino, st.st_mtime_ns):
            pooled.dispose()
            seen["ident"] = (st.st_ino, st.st_mtime_ns)
        return pooled

    per_query = create_engine(url, connect_args={"read_only": True}, poolclass=NullPool)
    try:
        with fresh_engine().connect() as c:
            assert [r[0] for r in c.execute(text(DAYS_SQL))] == [D1]
        publish_next_day(wh, D1, D2)
        with pooled.connect() as c:  # the pooled connection still has the replaced file open
            assert [r[0] for r in c.execute(text(DAYS_SQL))] == [D1]
        with fresh_engine().connect() as c:
            assert [r[0] for r in c.execute(text(DAYS_SQL))] == [D1, D2]
            assert [r[0] for r in c.execute(text(BI_DAYS_SQL))] == [D1, D2]
        pooled.dispose()
        # NullPool (Superset's default for queries): every query opens the file as it is now
        with per_query.connect() as c:
            assert [r[0] for r in c.execute(text(DAYS_SQL))] == [D1, D2]
        publish_next_day(wh, D1, D3)
        with per_query.connect() as c:
            assert [r[0] for r in c.execute(text(DAYS_SQL))] == [D1, D2, D3]
    finally:
        pooled.dispose()
        per_query.dispose()
