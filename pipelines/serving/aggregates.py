"""Aggregation keys (METHOD A13) compiled to DuckDB expressions over marts.fct_allocation_daily columns.

Every user-supplied string (label keys, values) travels as a bound parameter; identifiers come from allow-lists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pipelines.serving.errors import QueryError

UNALLOCATED = "__unallocated__"
DEFAULT_AGGREGATE = "cluster,node,namespace,pod,container"
LABEL_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-/]{1,253}$")
MAX_KEYS = 12

# Plain columns: aggregate name → column.
_COLUMNS = {"cluster": "cluster", "node": "node", "namespace": "namespace", "pod": "pod", "container": "container"}
_KIND_KEYS = ("deployment", "statefulset", "daemonset", "job")
AGGREGATE_ALLOWED = ("use a comma list of cluster, node, namespace, controllerKind, controller, deployment, "
                     "statefulset, daemonset, job, service, pod, container, label:<key>, annotation:<key>, or all")


@dataclass
class Params:
    """Named query parameters ($p0, $p1, …) collected while compiling."""

    values: dict[str, Any] = field(default_factory=dict)

    def bind(self, value: Any) -> str:
        name = f"p{len(self.values)}"
        self.values[name] = value
        return f"${name}"


def sanitise(key: str) -> str:
    """OpenCost's label-name sanitising: every char outside [a-zA-Z0-9_] becomes '_'."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", key)


def check_map_key(param: str, raw: str, key: str) -> str:
    if not LABEL_KEY_RE.match(key):
        raise QueryError(param, raw, "label and annotation keys use letters, digits, '.', '_', '-', '/' (max 253)")
    return key


def _lookup_one(column: str, key: str, params: Params) -> str:
    # Original key first, then any stored key whose sanitised form equals the requested key's sanitised form.
    exact = f"json_extract_string({column}, {params.bind('$.' + chr(34) + key + chr(34))})"
    if re.fullmatch(r"[A-Za-z0-9]+", key):
        # only the key itself sanitises to a key without '_' or punctuation: skip the (costly) key scan
        return exact
    target = params.bind(sanitise(key))
    match = (f"list_filter(json_keys({column}), lambda k: regexp_replace(k, '[^a-zA-Z0-9_]', '_', 'g') = {target})[1]")
    fuzzy = (f"json_extract_string({column}, '$.\"' || replace(replace({match}, '\\', '\\\\'), '\"', '\\\"') || '\"')")
    return f"coalesce({exact}, {fuzzy})"


def map_lookup_sql(kind: str, key: str, params: Params) -> str:
    """Value of label/annotation `key` on a row: pod's own map first, then the namespace's (A13 precedence)."""
    own, ns = ("labels", "namespace_labels") if kind == "label" else ("annotations", "namespace_annotations")
    return f"nullif(coalesce({_lookup_one(own, key, params)}, {_lookup_one(ns, key, params)}), '')"


def _or_unallocated(expr: str) -> str:
    return f"coalesce(nullif(CAST({expr} AS VARCHAR), ''), '{UNALLOCATED}')"


def key_segment_sql(name: str, raw: str, params: Params) -> str:
    n = name.strip()
    low = n.lower()
    if low in _COLUMNS:
        return _or_unallocated(_COLUMNS[low])
    if low == "controllerkind":
        return _or_unallocated("lower(controller_kind)")
    if low == "controller":
        return (f"CASE WHEN nullif(controller, '') IS NULL THEN '{UNALLOCATED}' "
                f"WHEN nullif(controller_kind, '') IS NULL THEN controller "
                f"ELSE lower(controller_kind) || ':' || controller END")
    if low in _KIND_KEYS:
        return (f"CASE WHEN lower(controller_kind) = '{low}' AND nullif(controller, '') IS NOT NULL "
                f"THEN controller ELSE '{UNALLOCATED}' END")
    if low == "service":
        return _or_unallocated("json_extract_string(services, '$[0]')")
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
