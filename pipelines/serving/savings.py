"""The savings endpoints, answered from marts.fct_recommendation_daily (docs/API.md "Savings and recommendations").

- /model/savings/requestSizingV2: Kubecost's container request sizing, in its request and response shape. The
  recommendations are computed once, in dbt, with the `recommendations:` settings; Kubecost's tuning parameters
  (algorithmCPU, qCPU, targetCPUUtilization, minRecCPUMillicores, …) are accepted when they describe those settings
  and refused (400, naming the setting) when they ask for others.
- /model/savings: the monthly $ per kind under Kubecost's summary names, plus every kind's kWh and CO2e.
- /kubeledger/recommendations: every kind with its carbon fields, evidence and confidence.

A window selects the day: each cluster's latest materialised day inside it (its look-back is the configured one).
`load_recommendations` is the one query; `kubeledger recommend` calls it too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

import duckdb

from pipelines.serving.aggregates import Params
from pipelines.serving.app import Reply, Route
from pipelines.serving.coverage import has_mart
from pipelines.serving.errors import QueryError
from pipelines.serving.filters import Condition, compile_filter, parse_filter
from pipelines.serving.params import param_int, tolerance_notes
from pipelines.serving.replies import header_safe, ok, warning_text
from pipelines.serving.windows import answerable_days, parse_window
from pipelines.settings import RecommendationSettings, Settings

MART = "fct_recommendation_daily"
MIB = 1024.0 * 1024.0
KINDS = ("container_rightsizing", "abandoned_workload", "idle_namespace", "idle_node_pool", "unclaimed_volume",
         "carbon_shift_time", "carbon_shift_zone")
# Kubecost's savings summary names for the kinds it has (the carbon kinds have no Kubecost counterpart)
KUBECOST_SUMMARY = {"container_rightsizing": "requestSizing", "abandoned_workload": "abandonedWorkloads",
                    "idle_node_pool": "clusterSizing", "unclaimed_volume": "unclaimedVolumes"}
FILTER_FIELDS = {"cluster": "cluster", "namespace": "namespace", "controllerkind": "controllerkind",
                 "controllername": "controllername", "container": "container"}
FILTER_ALLOWED = ('use field op "value" joined by + (and) or | (or); fields: cluster, namespace, controllerKind, '
                  "controllerName, container")
SORT_V2 = {"totalSavings": "saving_usd_per_month", "cpuRecommended": "recommended_cpu_request_cores",
           "cpuLatest": "current_cpu_request_cores", "memoryRecommended": "recommended_ram_request_bytes",
           "memoryLatest": "current_ram_request_bytes", "currentEfficiency": "total_efficiency"}
SORT_OURS = {"savingUsd": "saving_usd_per_month", "savingCo2e": "saving_co2e_g_per_month",
             "savingKwh": "saving_kwh_per_month"}
COLUMNS = ("usage_date", "cluster", "recommendation_id", "kind", "namespace", "controller_kind", "controller",
           "container", "target", "action", "window_days", "days_of_data", "hours_covered", "evidence", "confidence",
           "current_cpu_request_cores", "recommended_cpu_request_cores", "current_ram_request_bytes",
           "recommended_ram_request_bytes", "saving_usd_per_month", "saving_kwh_per_month",
           "saving_co2e_g_per_month", "is_estimated", "estimation_reasons", "stage", "saving_class", "superseded_by",
           "depends_on", "counted_usd_per_month", "counted_kwh_per_month", "counted_co2e_g_per_month",
           "risk_fix_usd_per_month", "risk_fix_kwh_per_month", "risk_fix_co2e_g_per_month")
STANDALONE_FIELDS = {"savingUsdPerMonth": "saving_usd_per_month", "savingKwhPerMonth": "saving_kwh_per_month",
                     "savingCo2eGPerMonth": "saving_co2e_g_per_month"}
# the counted and risk-fix columns (int_recommendations_counted) under their API names
COUNTED_FIELDS = {"countedUsdPerMonth": "counted_usd_per_month", "countedKwhPerMonth": "counted_kwh_per_month",
                  "countedCo2eGPerMonth": "counted_co2e_g_per_month", "riskFixUsdPerMonth": "risk_fix_usd_per_month",
                  "riskFixKwhPerMonth": "risk_fix_kwh_per_month", "riskFixCo2eGPerMonth": "risk_fix_co2e_g_per_month"}


def _condition(raw: str, name: str, key: str | None, op: str, values: tuple[str, ...]) -> Condition:
    low = name.lower()
    if low not in FILTER_FIELDS or key is not None:
        raise QueryError("filter", raw, FILTER_ALLOWED, message=f"filter: unknown field {name!r}; {FILTER_ALLOWED}")
    return Condition(low, None, op, values)


@dataclass(frozen=True)
class Selection:
    """Which rows: a window (None = each cluster's latest day), a v2 filter, kinds, an order and a limit."""

    window: str | None = None
    filter: str | None = None
    kinds: tuple[str, ...] = KINDS
    sort_column: str = "saving_usd_per_month"
    descending: bool = True
    limit: int | None = None

    def validate(self) -> None:
        if self.window is not None:
            parse_window(self.window)
        parse_filter(self.filter, _condition, FILTER_ALLOWED)
        bad = [k for k in self.kinds if k not in KINDS]
        if bad:
            raise QueryError("kind", ",".join(bad), "use " + ", ".join(KINDS))


def load_recommendations(cur: duckdb.DuckDBPyConnection, sel: Selection) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of each cluster's latest day in the window, filtered and sorted; and notes for the warning."""
    sel.validate()
    if not has_mart(cur, MART):
        return [], [f"marts.{MART} is not in this warehouse yet; materialise a day first"]
    params = Params()
    notes: list[str] = []
    where = ["kind IN (" + ", ".join(params.bind(k) for k in sel.kinds) + ")"]
    if sel.window is not None:
        span = answerable_days(parse_window(sel.window), raw=sel.window)
        notes += list(span.notes)
        where.append(f"usage_date >= {params.bind(span.start.date())} AND usage_date < {params.bind(span.end.date())}")
    days_where = " AND ".join(where[1:]) or "TRUE"
    where.append(compile_filter(parse_filter(sel.filter, _condition, FILTER_ALLOWED), params))
    order = "DESC" if sel.descending else "ASC"
    assert sel.sort_column in (*COLUMNS, "total_efficiency")
    limit = f" LIMIT {int(sel.limit)}" if sel.limit is not None else ""
    sql = (f"WITH latest AS (SELECT cluster, max(usage_date) AS usage_date FROM marts.{MART} "  # noqa: S608
           f"WHERE {days_where} GROUP BY cluster) "
           f"SELECT r.*, try_cast(json_extract_string(r.evidence, '$.total_efficiency') AS DOUBLE) AS total_efficiency "
           f"FROM marts.{MART} AS r JOIN latest USING (cluster, usage_date) WHERE {' AND '.join(where)} "
           f"ORDER BY {sel.sort_column} {order} NULLS LAST, recommendation_id{limit}")
    rel = cur.execute(sql, params.values)
    names = [d[0] for d in rel.description]
    rows = [dict(zip(names, r, strict=True)) for r in rel.fetchall()]
    if not rows:
        notes.append("no recommendation in the window (no materialised day, or nothing to change)")
    uncounted = sum(r.get("counted_usd_per_month") is None for r in rows)
    if uncounted:
        notes.append(f"{uncounted} recommendation(s) come from days built before savings were counted once (no "
                     "counted_* values) and are left out of the total: `kubeledger rebuild` those days to count them")
    return rows, notes


def _float(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def k8s_whole(x: float) -> int:
    """A Kubernetes quantity in whole units, rounded up: the action text's rule (macros/recommendations.sql
    `rec_quantity_text`, the same ceil and 1e-9 allowance), for the recommended and the current request alike."""
    return math.ceil(x - 1e-9)


def _millicores(cores: Any) -> str:
    return "" if cores is None or (isinstance(cores, float) and math.isnan(cores)) else \
        f"{k8s_whole(float(cores) * 1000)}m"


def _mebibytes(b: Any) -> str:
    return "" if b is None or (isinstance(b, float) and math.isnan(b)) else f"{k8s_whole(float(b) / MIB)}Mi"


def request_sizing_row(r: Mapping[str, Any]) -> dict[str, Any]:
    """One container_rightsizing row in Kubecost's requestSizingV2 element shape."""
    ev = json.loads(r["evidence"] or "{}")
    return {
        "clusterID": r["cluster"], "namespace": r["namespace"],
        "controllerKind": (r["controller_kind"] or "").lower(), "controllerName": r["controller"],
        "containerName": r["container"],
        "recommendedRequest": {"cpu": _millicores(r["recommended_cpu_request_cores"]),
                               "memory": _mebibytes(r["recommended_ram_request_bytes"])},
        "monthlySavings": {"cpu": _float(ev.get("saving_cpu_usd_per_month")),
                           "memory": _float(ev.get("saving_ram_usd_per_month"))},
        "latestKnownRequest": {"cpu": _millicores(r["current_cpu_request_cores"]),
                               "memory": _mebibytes(r["current_ram_request_bytes"])},
        "currentEfficiency": {"cpu": _float(ev.get("cpu_efficiency")), "memory": _float(ev.get("ram_efficiency")),
                              "total": _float(ev.get("total_efficiency"))},
    }


def recommendation_row(r: Mapping[str, Any]) -> dict[str, Any]:
    """One recommendation of any kind, camelCase, with its evidence as an object."""
    day = r["usage_date"]
    return {
        "date": day.isoformat() if isinstance(day, date) else day, "cluster": r["cluster"],
        "id": r["recommendation_id"], "kind": r["kind"], "namespace": r["namespace"],
        "controllerKind": r["controller_kind"], "controller": r["controller"], "container": r["container"],
        "target": r["target"], "action": r["action"], "windowDays": r["window_days"],
        "daysOfData": r["days_of_data"], "hoursCovered": r["hours_covered"], "confidence": r["confidence"],
        "currentCpuRequestCores": _float(r["current_cpu_request_cores"]),
        "recommendedCpuRequestCores": _float(r["recommended_cpu_request_cores"]),
        "currentRamRequestBytes": _float(r["current_ram_request_bytes"]),
        "recommendedRamRequestBytes": _float(r["recommended_ram_request_bytes"]),
        # the same quantities as the action text and requestSizingV2 write them (k8s_whole); null without one
        "cpuLatest": _millicores(r["current_cpu_request_cores"]) or None,
        "cpuRecommended": _millicores(r["recommended_cpu_request_cores"]) or None,
        "memoryLatest": _mebibytes(r["current_ram_request_bytes"]) or None,
        "memoryRecommended": _mebibytes(r["recommended_ram_request_bytes"]) or None,
        "savingUsdPerMonth": _float(r["saving_usd_per_month"]),
        "savingKwhPerMonth": _float(r["saving_kwh_per_month"]),
        "savingCo2eGPerMonth": _float(r["saving_co2e_g_per_month"]),
        "isEstimated": bool(r["is_estimated"]), "estimationReasons": r["estimation_reasons"],
        "evidence": json.loads(r["evidence"] or "{}"),
        # how the row counts in the day's total (NULL on days built before the counting: rebuild them)
        "stage": r.get("stage"), "savingClass": r.get("saving_class"), "supersededBy": r.get("superseded_by"),
        "dependsOn": r.get("depends_on"),
        **{name: _float(r.get(col)) for name, col in COUNTED_FIELDS.items()},
    }


def recommendation_totals(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The non-overlapping total of `rows`, the one figure the API, the CLI and the report print: the sum of the
    counted_* columns (each saving counted once, docs/METHOD.md "Counting savings once"), the risk fixes (cost
    increases) apart and never netted. Rows of days built before the counting (counted NULL) are left out and
    counted in `uncounted`."""
    total: dict[str, Any] = {"recommendations": len(rows), "superseded": 0, "riskFixes": 0, "uncounted": 0,
                             **dict.fromkeys(COUNTED_FIELDS, 0.0)}
    for r in rows:
        if r.get("counted_usd_per_month") is None:
            total["uncounted"] += 1
            continue
        total["superseded"] += r.get("superseded_by") is not None
        total["riskFixes"] += r.get("saving_class") == "risk_fix"
        for name, col in COUNTED_FIELDS.items():
            total[name] += _float(r[col]) or 0.0
    return total


# --- /model/savings/requestSizingV2 ----------------------------------------------------------------------------

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


def savings_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Monthly savings per kind. Kubecost's names carry each kind's counted $ (what it adds to the total once the
    other kinds are counted: no overlap, no request increase); `kubeledger` has per kind the count, the standalone
    net saving (increases included) and the counted and risk-fix figures, and `total`, the non-overlapping total
    (recommendation_totals) that the CLI and the report print too."""
    kinds: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        of_kind = [r for r in rows if r["kind"] == kind]
        counted = recommendation_totals(of_kind)
        kinds[kind] = {"count": len(of_kind),
                       **{name: sum(_float(r[col]) or 0.0 for r in of_kind) for name, col in STANDALONE_FIELDS.items()},
                       **{name: counted[name] for name in COUNTED_FIELDS}}
    out: dict[str, Any] = {name: kinds[kind]["countedUsdPerMonth"] for kind, name in KUBECOST_SUMMARY.items()}
    days = sorted({(r["cluster"], r["usage_date"].isoformat()) for r in rows})
    out["kubeledger"] = {"days": [{"cluster": c, "date": d} for c, d in days], "kinds": kinds,
                         "total": recommendation_totals(rows)}
    return out


def _selection_route(shape: Callable[[list[dict[str, Any]]], Any]) -> Route:
    """A route answering `shape(recommendations)` for our selection parameters (window, filter, kind, sortBy,
    limit)."""
    def validate(params: dict[str, str]) -> None:
        _our_selection(params).validate()

    def run(cur: duckdb.DuckDBPyConnection, params: dict[str, str]) -> Reply:
        rows, notes = load_recommendations(cur, _our_selection(params))
        notes = tolerance_notes(params, ("window", "filter", "kind", "sortBy", "limit"), {}) + notes
        return ok(shape(rows), notes)

    return Route(fn=run, validate=validate)


def savings_routes(settings: Settings) -> dict[str, Route]:
    return {"/model/savings/requestSizingV2": _request_sizing_route(settings),
            "/model/savings": _selection_route(savings_summary),
            "/kubeledger/recommendations": _selection_route(lambda rows: [recommendation_row(r) for r in rows])}
