"""A Spark DataFrame into a DuckDB table, with or without pyarrow (pyspark's Arrow path needs it; the `spark` extra
does not install it, so small frames such as the lookups go row by row with their Spark types mapped)."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

# Spark's simple type names -> DuckDB's (anything else is carried as text)
SPARK_TO_DUCKDB = {"string": "VARCHAR", "bigint": "BIGINT", "int": "INTEGER", "smallint": "SMALLINT",
                   "tinyint": "TINYINT", "double": "DOUBLE", "float": "FLOAT", "boolean": "BOOLEAN", "date": "DATE",
                   "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP", "binary": "BLOB"}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def duckdb_type(spark_type: str) -> str:
    if spark_type.startswith("decimal"):
        return spark_type.upper()
    return SPARK_TO_DUCKDB.get(spark_type, "VARCHAR")


def frame_to_duckdb(con: duckdb.DuckDBPyConnection, df: Any, view: str) -> int:
    """Register `df`'s rows in `con` as the view or table `view` (a temporary table without pyarrow); rows."""
    if importlib.util.find_spec("pyarrow") is not None:
        table = df.toArrow()
        con.register(view, table)
        return table.num_rows
    columns = [(name, duckdb_type(t)) for name, t in df.dtypes]
    con.execute(f"create or replace temp table {_quote(view)} "
                f"({', '.join(f'{_quote(n)} {t}' for n, t in columns)})")
    rows = [tuple(r) for r in df.collect()]
    if rows:
        marks = ", ".join("?" for _ in columns)
        con.executemany(f"insert into {_quote(view)} values ({marks})", rows)  # noqa: S608 - names from Spark
    return len(rows)
