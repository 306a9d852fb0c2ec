"""Allocation summaries: /allocation/summary (OpenCost SummaryAllocationSetRange) and Kubecost's
/model/allocation/summary and /summary/topline — all views of query/allocation.py's answer_allocations, never a
second engine.

The parameters are the matching allocation endpoint's (Kubecost defaults under /model, OpenCost's elsewhere).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from pipelines.serving.http.app import Reply, Route
from pipelines.serving.http.replies import ok
from pipelines.serving.query.allocation import AllocationAnswer, answer_allocations
from pipelines.serving.query.errors import QueryError
from pipelines.serving.routes.allocation import query_from_params
from pipelines.settings import Settings

SUMMARY_ROUTES = {"/model/allocation/summary": "kubecost", "/allocation/summary": "opencost",
                  "/allocation/compute/summary": "opencost"}
TOPLINE_ROUTES = {"/model/allocation/summary/topline": "kubecost", "/allocation/summary/topline": "opencost"}
# SummaryAllocation's fields (SUM), then ToResponse's totals, then kubeledger's energy, carbon and provenance
AVERAGES = ("cpuCoreRequestAverage", "cpuCoreUsageAverage", "ramByteRequestAverage", "ramByteUsageAverage")
COSTS = ("cpuCost", "gpuCost", "networkCost", "loadBalancerCost", "pvCost", "ramCost", "sharedCost", "externalCost",
         "totalCost")
EXTRA_SUMS = ("energyKwh", "co2eTotalG")
FIELD_ORDER = ("cpuCoreRequestAverage", "cpuCoreUsageAverage", "cpuCost", "gpuCost", "networkCost",
               "loadBalancerCost", "pvCost", "ramByteRequestAverage", "ramByteUsageAverage", "ramCost", "sharedCost",
               "externalCost", "totalCost", "totalEfficiency", *EXTRA_SUMS)


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def summarize(a: dict[str, Any]) -> dict[str, Any]:
    """One Allocation (query/allocation.py to_allocation) → its SummaryAllocation."""
    out: dict[str, Any] = {"name": a["name"], "start": a["start"], "end": a["end"]}
    out.update({f: a[f] for f in FIELD_ORDER})
    out.update(isEstimated=a["isEstimated"], estimationReasons=a["estimationReasons"])
    return out


def _check_format(params: dict[str, str]) -> None:
    fmt = params.get("format") or "json"
    if fmt != "json":
        raise QueryError("format", fmt, "summaries are answered as json only (use the allocation endpoint for csv)")


def summary_data(answer: AllocationAnswer, steps: list[tuple[datetime, datetime]]) -> dict[str, Any]:
    span = answer.span
    bounds = steps or [(span.start, span.end)]
    sets = [{"allocations": {k: summarize(a) for k, a in allocs.items()},
             "window": {"start": _iso(s), "end": _iso(e)}}
            for allocs, (s, e) in zip(answer.sets, bounds, strict=False)]
    step_ns = int((bounds[0][1] - bounds[0][0]).total_seconds()) * 1_000_000_000
    return {"step": step_ns, "sets": sets, "window": {"start": _iso(span.start), "end": _iso(span.end)}}


def _is_idle(name: str) -> bool:
    return name == "__idle__" or name.endswith("/__idle__")


def topline_data(summary: dict[str, Any]) -> dict[str, Any]:
    """Kubecost's topline: every summary of every set combined into `total`.

    Costs, kWh and CO2e add up; the averages add up within a set (allocations run side by side) and are
    time-weighted across sets; totalEfficiency is the efficiencies weighted by CPU+RAM+GPU cost, idle left out."""
    sets = summary["sets"]
    names: set[str] = set()
    total = {f: 0.0 for f in (*COSTS, *EXTRA_SUMS)}
    averages = {f: 0.0 for f in AVERAGES}
    seconds = 0.0
    eff_num = eff_den = 0.0
    estimated = False
    reasons: set[str] = set()
    for s in sets:
        length = (datetime.fromisoformat(s["window"]["end"].replace("Z", "+00:00"))
                  - datetime.fromisoformat(s["window"]["start"].replace("Z", "+00:00"))).total_seconds()
        seconds += length
        for name, a in s["allocations"].items():
            names.add(name)
            for f in total:
                total[f] += a[f] or 0.0
            for f in AVERAGES:
                averages[f] += (a[f] or 0.0) * length
            weight = (a["cpuCost"] or 0.0) + (a["ramCost"] or 0.0) + (a["gpuCost"] or 0.0)
            if not _is_idle(name) and a["totalEfficiency"] is not None and weight > 0:
                eff_num += a["totalEfficiency"] * weight
                eff_den += weight
            estimated = estimated or bool(a["isEstimated"])
            reasons.update(a["estimationReasons"] or [])
    window = summary["window"]
    combined: dict[str, Any] = {"name": "total", "start": window["start"], "end": window["end"]}
    for f in FIELD_ORDER:
        if f in AVERAGES:
            combined[f] = averages[f] / seconds if seconds else 0.0
        elif f == "totalEfficiency":
            combined[f] = eff_num / eff_den if eff_den else 0.0
        else:
            combined[f] = total[f]
    combined.update(isEstimated=estimated, estimationReasons=sorted(reasons))
    return {"numResults": len(names), "combined": {"allocations": {"total": combined}, "window": dict(window)}}


def _summary_route(flavor: str, settings: Settings, topline: bool) -> Route:
    def validate(params: dict[str, str]) -> None:
        _check_format(params)
        query_from_params(params, flavor, settings).validate()

    def run(cur: duckdb.DuckDBPyConnection, params: dict[str, str]) -> Reply:
        _check_format(params)
        q = query_from_params(params, flavor, settings)
        answer = answer_allocations(cur, q)
        data = summary_data(answer, q.validate()["steps"])
        return ok(topline_data(data) if topline else data, answer.warnings)

    return Route(fn=run, validate=validate)


def summary_routes(settings: Settings) -> dict[str, Route]:
    routes = {path: _summary_route(flavor, settings, False) for path, flavor in SUMMARY_ROUTES.items()}
    routes.update({path: _summary_route(flavor, settings, True) for path, flavor in TOPLINE_ROUTES.items()})
    return routes
