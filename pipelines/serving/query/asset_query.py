"""The asset query (Kubecost /model/assets, OpenCost /assets, /assets/carbon): AssetQuery, its keys and its filter.

Asset properties follow OpenCost's AssetProperties: category, provider, account, project, service, cluster, name,
providerID, plus the asset type. Aggregation keys and the v2 asset filter compile to SQL over the columns the
asset relation (assets.py) exposes: asset_type, category, prov, account, project, service, cluster, asset_name,
provider_id. Every value is a bound parameter; field names come from allow-lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.serving.query.aggregates import Params
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.filters import Condition, Node, compile_tree, matching, parse_filter, string_test
from pipelines.serving.query.windows import WindowQuery

UNDEFINED = "__undefined__"  # OpenCost's key segment for an empty property
# aggregate / filter name → column of the asset relation; fields compared without case are marked True
PROPERTIES: dict[str, tuple[str, bool]] = {
    "type": ("asset_type", True), "assettype": ("asset_type", True), "category": ("category", True),
    "provider": ("prov", True), "account": ("account", False), "project": ("project", False),
    "service": ("service", False), "cluster": ("cluster", False), "name": ("asset_name", False),
    "providerid": ("provider_id", False),
}
# OpenCost's default asset key (no aggregate): every property, in this order
DEFAULT_KEY = ("provider", "account", "project", "category", "cluster", "type", "service", "providerid", "name")
AGGREGATE_ALLOWED = ("use a comma list of type, cluster, provider, account, project, providerID, category, "
                     "service, name, label:<key>; empty for one key per asset")
FILTER_FIELDS = ("assetType (type), name, category, cluster, provider, providerID, account, project, service, "
                 "label[<key>]")
FILTER_ALLOWED = (f"use field op \"value\"[,\"value\"…] joined by + (and) or | (or), parentheses to mix; fields: "
                  f"{FILTER_FIELDS}; ops: : !: ~: !~: <~: !<~: ~>: !~>:")


def _err(raw: str, why: str) -> QueryError:
    return QueryError("filter", raw, f"{why}; {FILTER_ALLOWED}")


def _asset_condition(raw: str, name: str, key: str | None, op: str, values: tuple[str, ...]) -> Condition:
    low = name.lower()
    if low == "label":
        if key is None and op not in (":", "!:"):
            raise _err(raw, "label without [key] tests for a key and takes only : or !:")
        return Condition("label", key, op, values)
    if low not in PROPERTIES:
        raise _err(raw, f"unknown field {name!r}")
    if key is not None:
        raise _err(raw, f"{name} takes no [key]")
    return Condition(low, None, op, values)


def parse_asset_filter(raw: str | None) -> Node | None:
    """The filter language v2 (filters.py) over the asset fields."""
    return parse_filter(raw, _asset_condition, FILTER_ALLOWED)


def compile_asset_filter(node: Node | None, params: Params) -> str:
    return compile_tree(node, lambda c: _asset_condition_sql(c, params))


def _asset_condition_sql(node: Condition, params: Params) -> str:
    if node.field == "label":  # assets carry no labels in the marts: a label is always missing
        tests = ["FALSE" if node.key is None or v not in ("", UNDEFINED, "__unallocated__") else "TRUE"
                 for v in node.values]
    else:
        col, fold = PROPERTIES[node.field]
        expr = f"coalesce(nullif(CAST({col} AS VARCHAR), ''), '{UNDEFINED}')"
        if fold:
            expr = f"lower({expr})"
        tests = []
        for v in node.values:
            v = UNDEFINED if v in ("", "__unallocated__") else v
            tests.append(string_test(node.op, expr, params.bind(v.lower() if fold else v)))
    return matching(node.op, tests)


def key_sql(aggregate: str, params: Params) -> str:
    """The set key of an asset: its properties joined by '/' (empty → OpenCost's per-asset key)."""
    raw = aggregate
    names = [n.strip() for n in aggregate.split(",")] if aggregate.strip() else list(DEFAULT_KEY)
    if len(names) > 12 or any(not n for n in names):
        raise QueryError("aggregate", raw, AGGREGATE_ALLOWED)
    segments = []
    for n in names:
        low = n.lower()
        if low.startswith("label:") and n[6:].strip():
            segments.append(f"'{UNDEFINED}'")  # no asset labels in the marts
        elif low in PROPERTIES:
            segments.append(f"coalesce(nullif(CAST({PROPERTIES[low][0]} AS VARCHAR), ''), '{UNDEFINED}')")
        else:
            raise QueryError("aggregate", raw, AGGREGATE_ALLOWED)
    return segments[0] if len(segments) == 1 else "(" + " || '/' || ".join(segments) + ")"


@dataclass
class AssetQuery(WindowQuery):
    """Every parameter of an asset query (routes/assets.py maps the endpoints' parameters onto it); `validate()`
    raises QueryError naming the bad one."""

    reconcile: bool = True  # the bill's adjustment (marts.fct_asset_daily cost_adjustment) in adjustment/totalCost

    def validate(self) -> dict[str, Any]:
        if self._checked:
            return self._checked
        _, span, steps = self.checked_window()
        params = Params()
        key = key_sql(self.aggregate, params)
        where = compile_asset_filter(parse_asset_filter(self.filter), params)
        self._checked = {"span": span, "steps": steps, "params": params, "key_sql": key, "filter_sql": where}
        return self._checked
