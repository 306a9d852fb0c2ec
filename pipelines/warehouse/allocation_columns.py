"""The allocation row (marts.fct_allocation_daily / fct_allocation_shared_daily) as Python reads it.

The list is defined once, in dbt_project/macros/allocation_columns.sql (a YAML text inside a macro, so dbt and
Python read the same file): names in contract order, types, and the group that says how each column is shared and
aggregated. The query engine, its CSV fields, the allocation rollups and the test fixture take their column lists
from here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2
import yaml

from pipelines import DBT_PROJECT_DIR

COLUMNS_MACRO_PATH = DBT_PROJECT_DIR / "macros" / "allocation_columns.sql"


@lru_cache(maxsize=1)
def allocation_columns() -> tuple[dict[str, Any], ...]:
    """Every column of the list, internal ones included, in list order."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)  # noqa: S701 - renders YAML
    text = str(env.from_string(COLUMNS_MACRO_PATH.read_text()).module.allocation_columns_yaml())
    return tuple(yaml.safe_load(text))


def column_names(*groups: str) -> tuple[str, ...]:
    """The mart's column names (internal ones left out) in contract order; only those of `groups` if given."""
    return tuple(c["name"] for c in allocation_columns()
                 if c["group"] != "internal" and (not groups or c["group"] in groups))


def mart_columns() -> list[tuple[str, str]]:
    """(name, upper-case type) of the mart's columns in contract order."""
    return [(c["name"], c["type"].upper()) for c in allocation_columns() if c["group"] != "internal"]


@lru_cache(maxsize=1)  # called once per answer row
def api_fields() -> tuple[tuple[str, str], ...]:
    """(API field, column) of kubeledger's own fields in the allocation answer and its CSV, in list order."""
    return tuple((c["api"], c["name"]) for c in allocation_columns() if c.get("api"))
