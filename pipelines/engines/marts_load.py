"""The marts Spark built, brought into the DuckDB warehouse's `marts` schema: the window's (cluster, usage_date)
partitions of each mart replaced in one transaction, every column cast to the type and put in the order of the
mart's contract (its YAML `data_type`s, read from the manifest of the same dbt call), so the tables are those the
duckdb engine builds and publish, the API, BI views, checks and reports read them unchanged.

The marts' Parquet is `<lake>/marts/<model>/cluster=<c>/usage_date=<d>/*.parquet`. A local lake is read by DuckDB
directly; an object-store lake (s3a://, gs://, ...) through the Spark session, which has its credentials. A mart
without a `cluster` column (the cloud bill, fct_cloud_cost_daily) is a whole table rebuilt by every build: it is
brought back whole.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.timeutil import DAY, days_of_window
from pipelines.warehouse.connection import open_warehouse

if TYPE_CHECKING:
    import duckdb

    from pipelines.settings import Settings

MARTS_SCHEMA = "marts"
PARTITION_COLUMNS = ("cluster", "usage_date")


def mart_contracts(manifest_path: Path) -> dict[str, list[tuple[str, str]]]:
    """{mart: [(column, DuckDB type)]} of every mart model with a contract, in contract order."""
    manifest = json.loads(Path(manifest_path).read_text())
    out: dict[str, list[tuple[str, str]]] = {}
    for node in manifest["nodes"].values():
        if node["resource_type"] != "model" or node["fqn"][1:2] != [MARTS_SCHEMA]:
            continue
        columns = [(name, col.get("data_type")) for name, col in node["columns"].items()]
        if columns and all(t for _, t in columns):
            out[node["alias"] or node["name"]] = [(n, str(t)) for n, t in columns]
    return out


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _whole(columns: list[tuple[str, str]]) -> bool:
    """A mart of no cluster is not partitioned by (cluster, usage_date): it is replaced whole."""
    return "cluster" not in {n for n, _ in columns}


def _files(lake_root: str, model: str, days: list[date], cluster: str | None, whole: bool = False) -> list[str]:
    """The window's Parquet files of one mart in a local lake (every file of a whole mart)."""
    root = Path(lake_root) / MARTS_SCHEMA / model
    if not root.is_dir():
        return []
    if whole:
        return [str(f) for f in sorted(root.rglob("*.parquet")) if not f.name.startswith(("_", "."))]
    clusters = [root / f"cluster={cluster}"] if cluster else sorted(root.glob("cluster=*"))
    return [str(f) for c in clusters for d in days for f in sorted((c / f"usage_date={d}").glob("*.parquet"))]


def _frame_from_spark(settings: Settings, model: str, first: date, end: date, cluster: str | None,
                      whole: bool = False) -> Any:
    from pipelines.engines.spark_session import get_session

    df = get_session(settings).read.parquet(f"{settings.lake_root}/{MARTS_SCHEMA}/{model}")
    if whole:
        return df
    df = df.where((df.usage_date >= first.isoformat()) & (df.usage_date < end.isoformat()))
    if cluster:
        df = df.where(df.cluster == cluster)
    return df


def _replace(con: duckdb.DuckDBPyConnection, model: str, columns: list[tuple[str, str]], source: str,
             first: date, end: date, cluster: str | None) -> int:
    table = f"{MARTS_SCHEMA}.{_quote(model)}"
    con.execute(f"create table if not exists {table} ({', '.join(f'{_quote(n)} {t}' for n, t in columns)})")
    # a contract that gained columns since the table was made: add them (NULL on older days), as the marts'
    # on_schema_change `append_new_columns` does on the duckdb engine
    have = {r[0] for r in con.execute("select column_name from information_schema.columns where table_schema = ? "
                                      "and table_name = ?", [MARTS_SCHEMA, model]).fetchall()}
    for name, type_ in columns:
        if name not in have:
            con.execute(f"alter table {table} add column {_quote(name)} {type_}")
    where = "usage_date >= ? and usage_date < ?" + (" and cluster = ?" if cluster else "")
    params: list[Any] = [first, end] + ([cluster] if cluster else [])
    if _whole(columns):
        where, params = "true", []
    con.execute(f"delete from {table} where {where}", params)  # noqa: S608 - names from the manifest
    if not source:
        return 0
    select = ", ".join(f"cast({_quote(n)} as {t}) as {_quote(n)}" for n, t in columns)
    before = con.execute(f"select count(*) from {table}").fetchone()[0]  # noqa: S608
    names = ", ".join(_quote(n) for n, _ in columns)
    con.execute(f"insert into {table} ({names}) select {select} from {source} where {where}", params)  # noqa: S608
    return con.execute(f"select count(*) from {table}").fetchone()[0] - before  # noqa: S608


def load_marts(settings: Settings, manifest_path: Path, start: datetime, end: datetime,
               cluster: str | None = None) -> dict[str, int]:
    """Replace the window's partitions of every mart in the warehouse with the lake's; rows loaded per mart."""
    days = days_of_window(start, end)
    if not days:
        return {}
    first, after = days[0], days[-1] + DAY
    contracts = mart_contracts(manifest_path)
    local = "://" not in settings.lake_root
    loaded: dict[str, int] = {}
    with open_warehouse(settings) as con:
        con.execute(f"create schema if not exists {MARTS_SCHEMA}")
        if not local:  # fetched before the transaction: the JVM's work never holds the warehouse's write lock
            from pipelines.engines.spark_frames import frame_to_duckdb

            for m, cols in contracts.items():
                frame_to_duckdb(con, _frame_from_spark(settings, m, first, after, cluster, _whole(cols)),
                                f"_spark_{m}")
        con.execute("begin")
        try:
            for model, columns in contracts.items():
                if local and _whole(columns):
                    files = _files(settings.lake_root, model, days, cluster, whole=True)
                    source = (f"read_parquet({files!r}, hive_partitioning = false, union_by_name = true)"
                              if files else "")
                elif local:
                    files = _files(settings.lake_root, model, days, cluster)
                    source = (f"read_parquet({files!r}, hive_partitioning = true, union_by_name = true, "
                              "hive_types = {'cluster': 'VARCHAR', 'usage_date': 'DATE'})") if files else ""
                else:
                    source = f'"_spark_{model}"'
                loaded[model] = _replace(con, model, columns, source, first, after, cluster)
            con.execute("commit")
        except BaseException:
            con.execute("rollback")
            raise
    return loaded
