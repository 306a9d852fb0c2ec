"""Every dbt unit test of dbt_project passes (CI runs them here: the scheduled daily build skips them).

Unit tests need the relations of their models' parents (dbt reads their columns to type the fixtures), so the
project is first built empty (`--empty`: seeds and models as zero-row tables, on empty raw landing tables) in a
temporary warehouse, then `dbt test --select test_type:unit` runs them. dbt's target and log folders go to the
temp dir too: nothing is written into the code tree.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dbt.cli.main import dbtRunner

from pipelines import DBT_PROJECT_DIR
from pipelines.warehouse.connection import connect, ensure_raw_schema

pytestmark = pytest.mark.integration


def _dbt(args: list[str], tmp: Path):
    common = ["--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR),
              "--target-path", str(tmp / "target"), "--log-path", str(tmp / "logs")]
    return dbtRunner().invoke([*args, *common])


def test_every_dbt_unit_test_passes(tmp_path, monkeypatch):
    warehouse = tmp_path / "kubeledger.duckdb"
    con = connect(warehouse)
    try:
        ensure_raw_schema(con)
    finally:
        con.close()
    monkeypatch.setenv("KUBELEDGER_WAREHOUSE", str(warehouse))
    monkeypatch.setenv("KUBELEDGER_DUCKDB_MEMORY", "1GB")
    monkeypatch.setenv("DO_NOT_TRACK", "1")

    built = _dbt(["build", "--empty", "--resource-type", "seed", "--resource-type", "model"], tmp_path)
    assert built.success, f"empty build failed: {built.exception or built.result}"

    res = _dbt(["test", "--select", "test_type:unit"], tmp_path)
    assert res.exception is None, res.exception
    # the project's on-run-start hook (Spark's lake views, empty on DuckDB) reports as an operation
    results = [r for r in res.result if r.node.resource_type != "operation"]
    names = [r.node.name for r in results]
    failed = [f"{r.node.name}: {r.status}\n{r.message}" for r in results if str(r.status) != "pass"]
    assert len(results) > 0, "no dbt unit test ran"
    assert all(r.node.resource_type == "unit_test" for r in results), names
    assert not failed, "\n\n".join(failed)
    print(f"{len(results)} dbt unit tests passed")
    assert res.success
