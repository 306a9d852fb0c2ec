"""DuckDB connections with the project's memory and thread settings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from pipelines import SQL_DIR

if TYPE_CHECKING:
    from pipelines.settings import Settings


def connect(path: str | Path, read_only: bool = False, memory_limit: str | None = None,
            threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """Open the warehouse; creates the folder for a new file."""
    p = Path(path)
    if not read_only:
        p.parent.mkdir(parents=True, exist_ok=True)
    config: dict[str, str] = {}
    if memory_limit:
        config["memory_limit"] = memory_limit
    if threads:
        config["threads"] = str(threads)
    return duckdb.connect(str(p), read_only=read_only, config=config)


def ensure_raw_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create the `raw` landing tables from sql/raw/*.sql (idempotent)."""
    for sql_file in sorted((SQL_DIR / "raw").glob("*.sql")):
        con.execute(sql_file.read_text())


def open_warehouse(settings: Settings, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """The configured warehouse with its memory and thread limits; a writable one has the raw tables."""
    con = connect(settings.warehouse_path, read_only=read_only, memory_limit=settings.warehouse.memory_limit,
                  threads=settings.warehouse.threads)
    if not read_only:
        ensure_raw_schema(con)
    return con
