"""The allocation row is listed once (dbt_project/macros/allocation_columns.sql): the contract YAML of both
allocation marts, docs/CONTRACTS.md, the sharing macro's output and the API fields must agree with it."""

from __future__ import annotations

import re

import duckdb
import yaml

from pipelines import DBT_PROJECT_DIR
from pipelines.serving.query.allocation import render_sharing_sql, to_allocation
from pipelines.warehouse.allocation_columns import allocation_columns, api_fields, column_names, mart_columns

ROOT = DBT_PROJECT_DIR.parent
GROUPS = {"window", "property", "span", "sum", "average", "max", "efficiency", "energy", "intensity", "ratio",
          "flag", "internal"}


def test_every_column_has_a_known_group_and_type():
    names = [c["name"] for c in allocation_columns()]
    assert len(names) == len(set(names))
    for c in allocation_columns():
        assert c["group"] in GROUPS, c
        assert c["type"] in ("date", "timestamp", "varchar", "double", "boolean"), c
        assert not (c.get("derived") and c.get("received")), c


def test_contract_yaml_matches_the_list():
    doc = yaml.safe_load((DBT_PROJECT_DIR / "models" / "marts" / "_marts__models.yml").read_text())
    models = {m["name"]: m for m in doc["models"]}
    expected = [(n, t.lower()) for n, t in mart_columns()]
    for name in ("fct_allocation_daily", "fct_allocation_shared_daily"):
        assert [(c["name"], c["data_type"]) for c in models[name]["columns"]] == expected, name
        assert all(c.get("description") for c in models[name]["columns"]), name


def _contract_doc_columns() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "CONTRACTS.md").read_text()
    section = text.split("## marts.fct_allocation_daily", 1)[1].split("\n## ", 1)[0]
    out = []
    for line in section.splitlines():
        m = re.match(r"^\| ([a-z0-9_, ]+) \| ([a-z]+) \|", line)
        if m and m.group(1) != "column":  # not the header
            out += [(name.strip(), m.group(2)) for name in m.group(1).split(",")]
    return out


def test_contracts_doc_matches_the_list():
    """Every column the doc's table names exists with that type, in contract order. (The
    full list with a description per column is the contract YAML, checked above; a new column needs the list, its
    model and the YAML, the doc's table may follow.)"""
    listed = [(n, t.lower()) for n, t in mart_columns()]
    documented = _contract_doc_columns()
    assert documented, "no column table found in docs/CONTRACTS.md"
    assert [c for c in documented if c not in listed] == []
    assert documented == [c for c in listed if c in documented], "doc order differs from the contract order"


def test_sharing_macro_outputs_every_column():
    con = duckdb.connect()
    cols = ", ".join(f"{n} {t}" for n, t in mart_columns())
    con.execute(f"CREATE TABLE a ({cols}, agg_key VARCHAR, step_start TIMESTAMP, step_end TIMESTAMP, "
                "is_shared_row BOOLEAN, is_filtered_out BOOLEAN)")
    sql = f"SELECT * FROM ({render_sharing_sql('a', {})})"  # noqa: S608 - fixed table name
    out = [d[0] for d in con.execute(sql).description]
    assert out == ["step_start", "step_end", "agg_key", *column_names()]


def test_api_fields_come_from_their_columns():
    row = {n: (1.5 if t == "DOUBLE" else None) for n, t in mart_columns()}
    row.update({c: 0.0 for c in column_names("sum") if c.endswith("_idle")},
               agg_key="k", step_start=None, step_end=None, is_estimated=False, estimation_reasons="")
    for i, (_, col) in enumerate(api_fields()):
        row[col] = 10.0 + i
    alloc = to_allocation(row)
    assert api_fields(), "no kubeledger field in the list"
    for i, (field, _) in enumerate(api_fields()):
        assert alloc[field] == 10.0 + i, field
