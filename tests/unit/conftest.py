"""Unit-test fixtures shared by several modules."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from pipelines.warehouse.connection import connect, ensure_raw_schema


@pytest.fixture()
def raw_warehouse(tmp_path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh warehouse file with the raw landing schema."""
    c = connect(tmp_path / "w.duckdb")
    ensure_raw_schema(c)
    yield c
    c.close()
