"""The savings endpoints, answered from marts.fct_recommendation_daily (docs/API.md "Savings and recommendations").

- /model/savings/requestSizingV2: Kubecost's container request sizing, in its request and response shape. The
  recommendations are computed once, in dbt, with the `recommendations:` settings; Kubecost's tuning parameters
  (algorithmCPU, qCPU, targetCPUUtilization, minRecCPUMillicores, …) are accepted when they describe those settings
  and refused (400, naming the setting) when they ask for others.
- /model/savings: the monthly $ per kind under Kubecost's summary names, plus every kind's kWh and CO2e.
- /kubeledger/recommendations: every kind with its carbon fields, evidence and confidence.

A window selects the day: each cluster's latest materialised day inside it (its look-back is the configured one).
The rows, their shape and their total come from query/recommendations.py, which `kubeledger recommend` and the
report read too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import duckdb

from pipelines.serving.http.app import Reply, Route
from pipelines.serving.http.params import param_int, tolerance_notes
from pipelines.serving.http.replies import header_safe, ok, warning_text
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.recommendations import (
    COUNTED_FIELDS,
    KINDS,
    MIB,
    Selection,
    as_float,
    load_outcomes,
    load_recommendations,
    mebibytes,
    millicores,
    recommendation_row,
    recommendation_totals,
)
from pipelines.serving.query.windows import parse_window
from pipelines.settings import RecommendationSettings, Settings

# Kubecost's savings summary names for the kinds it has (the carbon kinds have no Kubecost counterpart)
KUBECOST_SUMMARY = {"container_rightsizing": "requestSizing", "abandoned_workload": "abandonedWorkloads",
                    "idle_node_pool": "clusterSizing", "unclaimed_volume": "unclaimedVolumes"}
SORT_V2 = {"totalSavings": "saving_usd_per_month", "cpuRecommended": "recommended_cpu_request_cores",
           "cpuLatest": "current_cpu_request_cores", "memoryRecommended": "recommended_ram_request_bytes",
           "memoryLatest": "current_ram_request_bytes", "currentEfficiency": "total_efficiency"}
SORT_OURS = {"savingUsd": "saving_usd_per_month", "savingCo2e": "saving_co2e_g_per_month",
             "savingKwh": "saving_kwh_per_month"}
STANDALONE_FIELDS = {"savingUsdPerMonth": "saving_usd_per_month", "savingKwhPerMonth": "saving_kwh_per_month",
                     "savingCo2eGPerMonth": "saving_co2e_g_per_month"}


# --- /model/savings/requestSizingV2 ----------------------------------------------------------------------------

def request_sizing_row(r: Mapping[str, Any]) -> dict[str, Any]:
    """One container_rightsizing row in Kubecost's requestSizingV2 element shape."""
    ev = json.loads(r["evidence"] or "{}")
    return {
        "clusterID": r["cluster"], "namespace": r["namespace"],
        "controllerKind": (r["controller_kind"] or "").lower(), "controllerName": r["controller"],
        "containerName": r["container"],
        "recommendedRequest": {"cpu": millicores(r["recommended_cpu_request_cores"]),
                               "memory": mebibytes(r["recommended_ram_request_bytes"])},
        "monthlySavings": {"cpu": as_float(ev.get("saving_cpu_usd_per_month")),
                           "memory": as_float(ev.get("saving_ram_usd_per_month"))},
        "latestKnownRequest": {"cpu": millicores(r["current_cpu_request_cores"]),
                               "memory": mebibytes(r["current_ram_request_bytes"])},
        "currentEfficiency": {"cpu": as_float(ev.get("cpu_efficiency")), "memory": as_float(ev.get("ram_efficiency")),
                              "total": as_float(ev.get("total_efficiency"))},
    }


V2_PARAMS = ("window", "filter", "algorithmCPU", "algorithmRAM", "qCPU", "qRAM", "targetCPUUtilization",
             "targetRAMUtilization", "minRecCPUMillicores", "minRecRAMBytes", "sortBy", "sortByOrder")


def _number(params: Mapping[str, str], name: str) -> float | None:
    v = params.get(name)
    if v is None or v.strip() == "":
        return None
    try:
        x = float(v)
    except ValueError:
        raise QueryError(name, v, "a number") from None
    if not math.isfinite(x):
        raise QueryError(name, v, "a finite number")
    return x


def _same(name: str, asked: float | None, configured: float, setting: str, shown: str) -> None:
    if asked is not None and abs(asked - configured) > 1e-6 * max(1.0, abs(configured)):
        raise QueryError(name, asked, "", message=(
            f"{name}: {asked:g} is not what kubeledger computed; recommendations are built once in dbt with "
            f"recommendations.{setting} in kubeledger.yaml ({shown}); leave {name} out, or change the setting "
            "and rebuild"))


def check_v2_tuning(params: Mapping[str, str], rec: RecommendationSettings) -> None:
    """Kubecost's tuning parameters must describe the configured recommendation settings (400 otherwise)."""
    for res, setting, q_param in (("CPU", "cpu_quantile", "qCPU"), ("RAM", "memory_quantile", "qRAM")):
        configured_q = getattr(rec, setting)
        algo = (params.get(f"algorithm{res}") or "").strip().lower()
        if algo not in ("", "max", "quantile"):
            raise QueryError(f"algorithm{res}", params[f"algorithm{res}"], "use max or quantile")
        shown = f"{setting} = {configured_q:g}"
        if algo == "max" and configured_q != 1.0:
            raise QueryError(f"algorithm{res}", "max", "", message=(
                f"algorithm{res}: max is not what kubeledger computed; recommendations are built once in dbt with "
                f"recommendations.{setting} in kubeledger.yaml ({shown}; 1 = max); use algorithm{res}=quantile"
                f"&{q_param}={configured_q:g} or leave it out"))
        q = _number(params, q_param)
        if q is not None and not 0 < q <= 1:
            raise QueryError(q_param, params[q_param], "a quantile in (0, 1]")
        _same(q_param, q, configured_q, setting, shown)
    for res, setting in (("CPU", "cpu_headroom"), ("RAM", "memory_headroom")):
        name = f"target{res}Utilization"
        target = _number(params, name)
        if target is not None and not 0 < target <= 1:
            raise QueryError(name, params[name], "a utilisation in (0, 1]")
        headroom = getattr(rec, setting)
        _same(name, target, 1.0 / headroom, setting, f"{setting} = {headroom:g}, i.e. {1 / headroom:.4g}")
    _same("minRecCPUMillicores", _number(params, "minRecCPUMillicores"), rec.min_cpu_cores * 1000,
          "min_cpu_cores", f"min_cpu_cores = {rec.min_cpu_cores:g}")
    _same("minRecRAMBytes", _number(params, "minRecRAMBytes"), rec.min_memory_mib * MIB, "min_memory_mib",
          f"min_memory_mib = {rec.min_memory_mib:g}")


def v2_selection(params: Mapping[str, str], settings: Settings) -> Selection:
    if not (params.get("window") or "").strip():
        raise QueryError("window", "''", "a window is required, e.g. 7d")
    check_v2_tuning(params, settings.recommendations)
    sort_by = params.get("sortBy") or "totalSavings"
    if sort_by not in SORT_V2:
        raise QueryError("sortBy", sort_by, "use " + ", ".join(SORT_V2))
    order = (params.get("sortByOrder") or "descending").lower()
    if order not in ("descending", "ascending"):
        raise QueryError("sortByOrder", order, "use descending or ascending")
    return Selection(window=params["window"], filter=params.get("filter"), kinds=("container_rightsizing",),
                     sort_column=SORT_V2[sort_by], descending=order == "descending")


def _window_note(params: Mapping[str, str], settings: Settings) -> list[str]:
    w = parse_window(params["window"])
    if w.days != settings.recommendations.window_days:
        return [f"window {params['window']!r}: each cluster's latest day in it is answered, with the configured "
                f"{settings.recommendations.window_days}-day look-back (recommendations.window_days)"]
    return []


def _bare(data: Any, warnings: list[str]) -> Reply:
    """Kubecost answers requestSizingV2 with the bare list; warnings go in the X-Kubeledger-Warning header."""
    text = warning_text(warnings)
    return Reply(200, data, headers={"X-Kubeledger-Warning": header_safe(text)} if text else {})


def _request_sizing_route(settings: Settings) -> Route:
    def validate(params: dict[str, str]) -> None:
        v2_selection(params, settings).validate()

    def run(cur: duckdb.DuckDBPyConnection, params: dict[str, str]) -> Reply:
        sel = v2_selection(params, settings)
        rows, notes = load_recommendations(cur, sel)
        notes = tolerance_notes(params, V2_PARAMS, {}) + _window_note(params, settings) + notes
        return _bare([request_sizing_row(r) for r in rows], notes)

    return Route(fn=run, validate=validate)


# --- /model/savings and /kubeledger/recommendations -------------------------------------------------------------

def _our_selection(params: Mapping[str, str]) -> Selection:
    kinds = tuple(k.strip() for k in (params.get("kind") or "").split(",") if k.strip()) or KINDS
    sort_by = params.get("sortBy") or "savingUsd"
    if sort_by not in SORT_OURS:
        raise QueryError("sortBy", sort_by, "use " + ", ".join(SORT_OURS))
    return Selection(window=params.get("window") or None, filter=params.get("filter"), kinds=kinds,
                     sort_column=SORT_OURS[sort_by], limit=param_int(params, "limit"))


def savings_summary(rows: list[dict[str, Any]], outcomes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Monthly savings per kind. Kubecost's names carry each kind's counted $ (what it adds to the total once the
    other kinds are counted: no overlap, no request increase); `kubeledger` has per kind the count, the standalone
    net saving (increases included) and the counted and risk-fix figures, `total`, the non-overlapping total
    (recommendation_totals) that the CLI and the report print too, and `outcomes`, the recorded decisions of the
    answered days (dismissed with their reason, applied with the realised saving beside the estimate)."""
    kinds: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        of_kind = [r for r in rows if r["kind"] == kind]
        counted = recommendation_totals(of_kind)
        kinds[kind] = {"count": len(of_kind),
                       **{name: sum(as_float(r[col]) or 0.0 for r in of_kind) for name, col in STANDALONE_FIELDS.items()},
                       **{name: counted[name] for name in COUNTED_FIELDS}}
    out: dict[str, Any] = {name: kinds[kind]["countedUsdPerMonth"] for kind, name in KUBECOST_SUMMARY.items()}
    days = sorted({(r["cluster"], r["usage_date"].isoformat()) for r in rows})
    out["kubeledger"] = {"days": [{"cluster": c, "date": d} for c, d in days], "kinds": kinds,
                         "total": recommendation_totals(rows), "outcomes": outcomes or []}
    return out


def recommendation_list(rows: list[dict[str, Any]], outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """/kubeledger/recommendations: each row, with its recorded outcome (or null)."""
    by_id = {(o["cluster"], o["id"]): o for o in outcomes}
    return [{**recommendation_row(r), "outcome": by_id.get((r["cluster"], r["recommendation_id"]))} for r in rows]


def _selection_route(shape: Callable[[list[dict[str, Any]], list[dict[str, Any]]], Any]) -> Route:
    """A route answering `shape(recommendations, outcomes)` for our selection parameters (window, filter, kind,
    sortBy, limit); the outcomes are the recorded decisions of the answered days (read-only here: they change
    through `kubeledger recommend` or the opt-in decision routes, routes/decisions.py, after the next build)."""
    def validate(params: dict[str, str]) -> None:
        _our_selection(params).validate()

    def run(cur: duckdb.DuckDBPyConnection, params: dict[str, str]) -> Reply:
        sel = _our_selection(params)
        rows, notes = load_recommendations(cur, sel)
        notes = tolerance_notes(params, ("window", "filter", "kind", "sortBy", "limit"), {}) + notes
        return ok(shape(rows, load_outcomes(cur, rows, sel.kinds)), notes)

    return Route(fn=run, validate=validate)


def savings_routes(settings: Settings) -> dict[str, Route]:
    return {"/model/savings/requestSizingV2": _request_sizing_route(settings),
            "/model/savings": _selection_route(savings_summary),
            "/kubeledger/recommendations": _selection_route(recommendation_list)}
