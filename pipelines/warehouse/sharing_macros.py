"""The sharing macro file (dbt_project/macros/allocation_sharing.sql) loaded as a Jinja module, so the API (and the
publish's allocation rollups) render the very SQL the shared mart runs: the sharing algorithm, its policy options,
the month, and the label lookup. It sits in warehouse/, below serving/, because the publish needs the lookup too.

Its few engine-specific pieces are calls to the macros of dbt_project/macros/portable.sql, as in dbt. Outside dbt,
`adapter.dispatch(name)` is stood in for by that file's `default__<name>` macro (the DuckDB form the serving copy
needs) and `return(x)` by x, so both files render with plain Jinja and the SQL is written once."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import jinja2

from pipelines import DBT_PROJECT_DIR

MACRO_PATH = DBT_PROJECT_DIR / "macros" / "allocation_sharing.sql"
PORTABLE_PATH = DBT_PROJECT_DIR / "macros" / "portable.sql"
# the label and annotation keys a lookup may name: the macro embeds a key as an escaped literal, so callers check it
LABEL_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-/]{1,253}$")


class _DuckDBDispatch:
    """`adapter` for plain Jinja: dispatch to portable.sql's default__ (DuckDB) forms."""

    def __init__(self, env: jinja2.Environment) -> None:
        self._env = env

    def dispatch(self, name: str, _namespace: str | None = None) -> Any:
        return self._env.globals[f"default__{name}"]


@lru_cache(maxsize=1)
def sharing_macros() -> Any:
    # `do` as dbt has it (portable.sql's Spark forms use it)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False,  # noqa: S701 - renders SQL
                             extensions=["jinja2.ext.do"])
    env.globals["adapter"] = _DuckDBDispatch(env)
    env.globals["return"] = lambda value: value
    portable = env.from_string(PORTABLE_PATH.read_text()).module
    env.globals.update({name: getattr(portable, name) for name in dir(portable) if not name.startswith("_")})
    return env.from_string(MACRO_PATH.read_text()).module


def label_value_sql(kind: str, key: str) -> str:
    """Value of label (or annotation) `key` on a mart row, '' as NULL: the pod's own map first, then the namespace's
    (METHOD A13). The sharing macro's lookup (original key, then any stored key with the same sanitised form), so
    the API's label aggregates, filters and shareLabels and the rollups' label columns match exactly what
    fct_allocation_shared_daily matches. `key` must match LABEL_KEY_RE."""
    own, ns = ("labels", "namespace_labels") if kind == "label" else ("annotations", "namespace_annotations")
    return f"nullif({sharing_macros().label_lookup([own, ns], key)}, '')"
