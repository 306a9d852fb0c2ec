"""What each estimation reason code makes uncertain, read from the one list dbt uses
(dbt_project/macros/reasons.sql: `carbon_reason_codes()`, `cost_reason_codes()`), rendered with plain Jinja as
pipelines/warehouse/sharing_macros.py renders the sharing macros: the marts' estimated shares and the report's
per-reason shares then count the same codes."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2

from pipelines import DBT_PROJECT_DIR

MACRO_PATH = DBT_PROJECT_DIR / "macros" / "reasons.sql"


@lru_cache(maxsize=1)
def reason_codes() -> dict[str, tuple[str, ...]]:
    """{"carbon": codes, "cost": codes}; a code in both (partial_hour_coverage, unknown_vcpu) affects both."""
    returned: list[Any] = []
    # `do` as dbt has it: the file's other macros use it (flag_reason_codes' reader)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False,  # noqa: S701 - no HTML
                             extensions=["jinja2.ext.do"])
    env.globals["return"] = lambda value: returned.append(value) or ""  # dbt's return(): the macro's value
    module = env.from_string(MACRO_PATH.read_text()).module
    codes = {}
    for quantity in ("carbon", "cost"):
        getattr(module, f"{quantity}_reason_codes")()
        codes[quantity] = tuple(returned.pop())
    return codes
