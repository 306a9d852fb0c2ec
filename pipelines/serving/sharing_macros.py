"""The sharing macro file (dbt_project/macros/allocation_sharing.sql) loaded as a Jinja module, so the API renders
the very SQL the shared mart runs: the sharing algorithm, its policy options, the month, and the label lookup."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2

from pipelines import DBT_PROJECT_DIR

MACRO_PATH = DBT_PROJECT_DIR / "macros" / "allocation_sharing.sql"


@lru_cache(maxsize=1)
def sharing_macros() -> Any:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)  # noqa: S701 - renders SQL
    return env.from_string(MACRO_PATH.read_text()).module
