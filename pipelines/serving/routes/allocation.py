"""The allocation endpoints: Kubecost /model/allocation, OpenCost /allocation and /allocation/compute, ACK
/v2/allocation. Their request parameters map onto one AllocationQuery (query/allocation.py answers it); ACK gets
its own answer shape.

Bad input is a 400 with {"code":400,"message":"<param>: <value> is not allowed; <allowed>"}.
"""

from __future__ import annotations

from typing import Any

import duckdb

from pipelines.serving.http.app import Reply, Route
from pipelines.serving.http.params import (
    filter_quote,
    param_bool,
    param_int,
    param_list,
    param_reconcile,
    tolerance_notes,
)
from pipelines.serving.http.replies import ok, text
from pipelines.serving.query.allocation import AllocationQuery, answer_allocations, policy_defaults, to_csv
from pipelines.serving.query.errors import QueryError
from pipelines.settings import Settings
from pipelines.warehouse.allocation_columns import api_fields

ALLOCATION_FLAVORS = {"/model/allocation": "kubecost", "/allocation": "opencost", "/allocation/compute": "opencost",
                      "/v2/allocation": "ack"}
# Every parameter the upstream allocation handlers read (docs/API.md lists where each comes from). Each endpoint
# accepts all of them, as upstream tolerates what it does not use; `strict=true` turns unknown names into 400s.
IMPLEMENTED = {
    "window", "aggregate", "accumulate", "accumulateBy", "step", "filter", "offset", "limit", "format",
    "idle", "includeIdle", "shareIdle", "idleByNode", "splitIdle", "idleSplit", "shareNamespaces", "shareLabels",
    "shareCost", "shareSplit", "shareScope", "includeSharedCostBreakdown", "includeAggregatedMetadata",
    "includeProportionalAssetResourceCosts", "costMetric", "strict", "targetType", "reconcile", "disableAdjustments",
    "filterNamespaces", "filterClusters", "filterNodes", "filterPods", "filterContainers", "filterControllerKinds",
    "filterControllers", "filterLabels", "filterAnnotations", "filterServices",
}
# Accepted and answered without effect; the response's `warning` says so when they would have changed the answer.
IGNORED = {
    "resolution": "the store is daily; resolution has no effect",
    "chartType": "chartType only shapes Kubecost's UI charts",
    "sharelb": "load-balancer costs stay on the pods behind them (sharelb is not implemented)",
    "external": "kubeledger has no out-of-cluster costs; externalCost is 0",
    "shareTenancyCosts": "cluster management costs are in the warehouse as overhead assets, not shared per tenant",
}
# only a true value of these would have changed upstream's answer
_IGNORED_IF_TRUE = {"sharelb", "external", "shareTenancyCosts"}
_LEGACY_FILTERS = {"filterNamespaces": "namespace", "filterClusters": "cluster", "filterNodes": "node",
                   "filterPods": "pod", "filterContainers": "container", "filterControllerKinds": "controllerKind",
                   "filterControllers": "controllerName", "filterServices": "services"}
_LEGACY_MAP_FILTERS = {"filterLabels": "label", "filterAnnotations": "annotation"}
COST_METRICS = ("cumulative", "hourly", "daily", "monthly")


def _legacy_filter(params: dict[str, str]) -> str:
    """Kubecost's v1 filter parameters as v2 filter terms, ANDed with `filter`."""
    filt = params.get("filter", "") or ""
    terms = [f"{field}:{','.join(filter_quote(v) for v in param_list(params.get(p)))}"
             for p, field in _LEGACY_FILTERS.items() if param_list(params.get(p))]
    for p, kind in _LEGACY_MAP_FILTERS.items():
        for item in param_list(params.get(p)):
            key, sep, value = item.partition(":")
            if not sep or not key.strip():
                raise QueryError(p, item, f"use {kind}key:value[,{kind}key:value…] (e.g. app:cost-analyzer)")
            terms.append(f"{kind}[{key.strip()}]:{filter_quote(value.strip())}")
    if terms:
        filt = "+".join([f"({filt})"] * bool(filt.strip()) + terms)
    return filt


def query_from_params(params: dict[str, str], flavor: str, settings: Settings) -> AllocationQuery:
    """Map one endpoint's parameters onto AllocationQuery (flavor: kubecost | opencost | ack).

    Defaults follow each upstream: Kubecost and ACK include idle, OpenCost only with includeIdle; the configured
    sharing policy (kubeledger.yaml `sharing`) is the Kubecost endpoint's default."""
    notes = tolerance_notes(params, IMPLEMENTED, IGNORED, _IGNORED_IF_TRUE)
    kubecost = flavor == "kubecost"
    # the configured policy is the Kubecost endpoint's default; elsewhere AllocationQuery's (no sharing)
    policy = policy_defaults(settings.sharing) if kubecost else {}
    ack = flavor == "ack"
    idle_default = flavor != "opencost"
    idle = param_bool(params, "idle", param_bool(params, "includeIdle", idle_default))  # aliases; `idle` wins
    share_idle = param_bool(params, "shareIdle", policy.get("share_idle", False))
    idle_by_node = param_bool(params, "idleByNode", policy.get("idle_by_node", False))
    aggregate = params.get("aggregate") or ("namespace,pod" if ack else "")
    if ack and idle_by_node and (aggregate != "node" or share_idle):
        raise QueryError("idleByNode", params.get("idleByNode"), "only with aggregate=node and shareIdle=false")
    if ack:
        target = params.get("targetType", "cluster") or "cluster"
        if target not in ("cluster", "node"):
            raise QueryError("targetType", target, "use cluster or node")
    raw_cost = params.get("shareCost")
    share_cost = policy.get("share_cost", 0.0)
    if raw_cost not in (None, ""):
        try:
            share_cost = float(raw_cost)
        except ValueError:
            raise QueryError("shareCost", raw_cost, "a monthly amount in USD, 0 or more") from None
    cost_metric = (params.get("costMetric") or "cumulative").strip().lower()
    if cost_metric not in COST_METRICS:
        raise QueryError("costMetric", params.get("costMetric"), "use " + ", ".join(COST_METRICS))
    fmt = params.get("format", "json") or "json"
    if fmt not in ("json", "csv"):
        raise QueryError("format", fmt, "use json or csv (pdf is not supported)")
    accumulate = params.get("accumulateBy") or params.get("accumulate")
    # ACK's shareSplit is its idle policy; Kubecost's is the shared-cost policy
    idle_split = (params.get("shareSplit") if ack else params.get("idleSplit")) or policy.get("idle_split", "weighted")
    for name in ("includeSharedCostBreakdown", "includeAggregatedMetadata", "includeProportionalAssetResourceCosts",
                 "splitIdle", "strict"):
        param_bool(params, name, False)  # validated even when their effect is nil
    return AllocationQuery(
        window=params.get("window", ""), aggregate=aggregate, filter=_legacy_filter(params),
        step=params.get("step"), accumulate=accumulate, idle=idle, share_idle=share_idle,
        idle_split=idle_split, idle_by_node=idle_by_node, split_idle=param_bool(params, "splitIdle", False),
        share_namespaces=param_list(params["shareNamespaces"]) if "shareNamespaces" in params
        else policy.get("share_namespaces", ()),
        share_labels=param_list(params["shareLabels"]) if "shareLabels" in params
        else policy.get("share_labels", ()),
        share_cost=share_cost,
        share_split=(None if ack else params.get("shareSplit")) or policy.get("share_split", "weighted"),
        share_scope=params.get("shareScope") or "all",
        include_shared_cost_breakdown=param_bool(params, "includeSharedCostBreakdown", False),
        aggregated_metadata=param_bool(params, "includeAggregatedMetadata", False),
        proportional_asset_costs=param_bool(params, "includeProportionalAssetResourceCosts", False),
        cost_metric=cost_metric, reconcile=param_reconcile(params),
        offset=param_int(params, "offset") or 0, limit=param_int(params, "limit"), format=fmt, notes=tuple(notes))


def ack_view(sets: list[dict[str, dict[str, Any]]]) -> list[dict[str, dict[str, Any]]]:
    """ACK's answer shape: each allocation cut to the fields ACK returns, its total as `cost`."""
    keep = ("controller", "controllerKind", "namespace", "pod", "node", "providerID", "labels")
    out = []
    for allocs in sets:
        out.append({key: {
            "name": a["name"], "properties": {k: v for k, v in a["properties"].items() if k in keep},
            "start": a["start"], "end": a["end"],
            "cpuCoreRequestAverage": a["cpuCoreRequestAverage"], "cpuCoreUsageAverage": a["cpuCoreUsageAverage"],
            "ramByteRequestAverage": a["ramByteRequestAverage"], "ramByteUsageAverage": a["ramByteUsageAverage"],
            "cost": a["totalCost"], "costRatio": a["costRatio"], "customCost": 0.0,
            **{field: a[field] for field, _ in api_fields()},
            "isEstimated": a["isEstimated"], "estimationReasons": a["estimationReasons"],
        } for key, a in allocs.items()})
    return out


def _allocation(flavor: str, settings: Settings) -> Route:
    def validate(params: dict[str, str]) -> None:
        query_from_params(params, flavor, settings).validate()

    def run(cur: duckdb.DuckDBPyConnection, params: dict[str, str]) -> Reply:
        q = query_from_params(params, flavor, settings)
        answer = answer_allocations(cur, q)
        if q.format == "csv":
            return text(to_csv(answer.sets), "text/csv", answer.warnings)
        return ok(ack_view(answer.sets) if flavor == "ack" else answer.sets, answer.warnings)

    return Route(fn=run, validate=validate)


def allocation_routes(settings: Settings) -> dict[str, Route]:
    return {path: _allocation(flavor, settings) for path, flavor in ALLOCATION_FLAVORS.items()}
