"""Aggregation keys (METHOD A13) compiled to DuckDB expressions over marts.fct_allocation_daily columns.

Values travel as bound parameters; label/annotation keys are validated (LABEL_KEY_RE) and rendered as escaped
literals by the sharing macro's lookup; identifiers come from allow-lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipelines.serving.query.errors import QueryError
from pipelines.warehouse.sharing_macros import LABEL_KEY_RE, label_value_sql

UNALLOCATED = "__unallocated__"
DEFAULT_AGGREGATE = "cluster,node,namespace,pod,container"
MAX_KEYS = 12

# Plain columns: aggregate name → column.
_COLUMNS = {"cluster": "cluster", "node": "node", "namespace": "namespace", "pod": "pod", "container": "container"}
_KIND_KEYS = ("deployment", "statefulset", "daemonset", "job")
AGGREGATE_ALLOWED = ("use a comma list of cluster, node, namespace, controllerKind, controller, deployment, "
                     "statefulset, daemonset, job, service, pod, container, label:<key>, annotation:<key>, or all")


class NotOnRollup(Exception):
    """The request needs a column the allocation rollup does not keep: the engine reads the detail table."""


@dataclass
class Params:
    """Named query parameters ($p0, $p1, …) collected while compiling, and the relation compiled against:
    the detail table (`rollup` None) or an allocation rollup (`rollup` = its label key -> column map)."""

    values: dict[str, Any] = field(default_factory=dict)
    rollup: dict[str, str] | None = None
    rollup_columns: frozenset[str] = frozenset()  # the detail columns the rollup keeps

    def bind(self, value: Any) -> str:
        name = f"p{len(self.values)}"
        self.values[name] = value
        return f"${name}"

    def col(self, name: str) -> str:
        """A detail column the expression reads; NotOnRollup when compiling for the rollup and it lacks it."""
        if self.rollup is not None and name not in self.rollup_columns:
            raise NotOnRollup(name)
        return name


def check_map_key(param: str, raw: str, key: str) -> str:
    if not LABEL_KEY_RE.match(key):
        raise QueryError(param, raw, "label and annotation keys use letters, digits, '.', '_', '-', '/' (max 253)")
    return key


def map_lookup_sql(kind: str, key: str, params: Params) -> str:
    """Value of label/annotation `key` on a row: pod's own map first, then the namespace's (A13 precedence)."""
    if params.rollup is not None:
        if kind != "label" or key not in params.rollup:
            raise NotOnRollup(f"{kind}:{key}")
        return params.rollup[key]  # the same lookup, evaluated per detail row when the rollup was built
    # every caller has validated the key with check_map_key, and the macro embeds it escaped
    return label_value_sql(kind, key)


def _or_unallocated(expr: str) -> str:
    return f"coalesce(nullif(CAST({expr} AS VARCHAR), ''), '{UNALLOCATED}')"


def key_segment_sql(name: str, raw: str, params: Params) -> str:
    n = name.strip()
    low = n.lower()
    if low in _COLUMNS:
        return _or_unallocated(params.col(_COLUMNS[low]))
    if low == "controllerkind":
        return _or_unallocated(f"lower({params.col('controller_kind')})")
    if low == "controller":
        params.col("controller_kind")
        return (f"CASE WHEN nullif({params.col('controller')}, '') IS NULL THEN '{UNALLOCATED}' "
                f"WHEN nullif(controller_kind, '') IS NULL THEN controller "
                f"ELSE lower(controller_kind) || ':' || controller END")
    if low in _KIND_KEYS:
        params.col("controller_kind")
        return (f"CASE WHEN lower(controller_kind) = '{low}' AND nullif({params.col('controller')}, '') IS NOT NULL "
                f"THEN controller ELSE '{UNALLOCATED}' END")
    if low == "service":
        return _or_unallocated(f"json_extract_string({params.col('services')}, '$[0]')")
    for prefix in ("label:", "annotation:"):
        if low.startswith(prefix):
            key = check_map_key("aggregate", raw, n[len(prefix):].strip())
            return _or_unallocated(map_lookup_sql(prefix[:-1], key, params))
    raise QueryError("aggregate", raw, AGGREGATE_ALLOWED)


def aggregate_key_sql(aggregate: str | None, params: Params) -> str:
    """SQL for the post-aggregation key; several keys join with '/' in request order."""
    raw = aggregate if aggregate is not None else ""
    text = raw.strip() or DEFAULT_AGGREGATE
    if text.lower() == "all":
        return "'__all__'"
    names = text.split(",")
    if len(names) > MAX_KEYS or any(not n.strip() for n in names):
        raise QueryError("aggregate", raw, AGGREGATE_ALLOWED)
    segments = [key_segment_sql(n, raw, params) for n in names]
    return segments[0] if len(segments) == 1 else "(" + " || '/' || ".join(segments) + ")"
