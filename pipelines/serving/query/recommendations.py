"""The recommendations of marts.fct_recommendation_daily as the API, `kubeledger recommend` and the report read them.

A Selection picks the rows: a window (each cluster's latest materialised day inside it; its look-back is the
configured one), a v2 filter, kinds, an order and a limit. `load_recommendations` is the one query,
`recommendation_row` the one row shape, and `recommendation_totals` the one non-overlapping total, so the savings
endpoints (routes/savings.py), the CLI and the report print the same figures.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

import duckdb

from pipelines.serving.query.aggregates import Params
from pipelines.serving.query.coverage import has_mart
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.filters import Condition, compile_filter, parse_filter
from pipelines.serving.query.windows import answerable_days, parse_window

MART = "fct_recommendation_daily"
OUTCOMES_MART = "fct_recommendation_outcome_daily"
# what was decided about a recommendation (`kubeledger recommend --dismiss/--applied`); NULL on older days = open
STATUSES = ("open", "dismissed", "applied")
MIB = 1024.0 * 1024.0
KINDS = ("container_rightsizing", "abandoned_workload", "idle_namespace", "idle_node_pool", "unclaimed_volume",
         "carbon_shift_time", "carbon_shift_zone", "off_peak_scale_down", "hpa_candidate", "spot_eligible",
         "volume_rightsizing")
FILTER_FIELDS = {"cluster": "cluster", "namespace": "namespace", "controllerkind": "controllerkind",
                 "controllername": "controllername", "container": "container"}
FILTER_ALLOWED = ('use field op "value" joined by + (and) or | (or); fields: cluster, namespace, controllerKind, '
                  "controllerName, container")
COLUMNS = ("usage_date", "cluster", "recommendation_id", "kind", "namespace", "controller_kind", "controller",
           "container", "target", "action", "window_days", "days_of_data", "hours_covered", "evidence", "confidence",
           "current_cpu_request_cores", "recommended_cpu_request_cores", "current_ram_request_bytes",
           "recommended_ram_request_bytes", "saving_usd_per_month", "saving_kwh_per_month",
           "saving_co2e_g_per_month", "is_estimated", "estimation_reasons", "stage", "saving_class", "superseded_by",
           "depends_on", "counted_usd_per_month", "counted_kwh_per_month", "counted_co2e_g_per_month",
           "risk_fix_usd_per_month", "risk_fix_kwh_per_month", "risk_fix_co2e_g_per_month", "status", "status_reason",
           "applied_date")
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


def as_float(v: Any) -> float | None:
    """A mart or evidence number as a float; None for NULL or NaN (JSON has no NaN)."""
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def k8s_whole(x: float) -> int:
    """A Kubernetes quantity in whole units, rounded up: the action text's rule (macros/recommendations.sql
    `rec_quantity_text`, the same ceil and 1e-9 allowance), for the recommended and the current request alike."""
    return math.ceil(x - 1e-9)


def millicores(cores: Any) -> str:
    """Cores as a Kubernetes CPU quantity (`250m`, k8s_whole); '' without a value."""
    return "" if cores is None or (isinstance(cores, float) and math.isnan(cores)) else \
        f"{k8s_whole(float(cores) * 1000)}m"


def mebibytes(b: Any) -> str:
    """Bytes as a Kubernetes memory quantity (`512Mi`, k8s_whole); '' without a value."""
    return "" if b is None or (isinstance(b, float) and math.isnan(b)) else f"{k8s_whole(float(b) / MIB)}Mi"


def recommendation_row(r: Mapping[str, Any]) -> dict[str, Any]:
    """One recommendation of any kind, camelCase, with its evidence as an object."""
    day = r["usage_date"]
    return {
        "date": day.isoformat() if isinstance(day, date) else day, "cluster": r["cluster"],
        "id": r["recommendation_id"], "kind": r["kind"], "namespace": r["namespace"],
        "controllerKind": r["controller_kind"], "controller": r["controller"], "container": r["container"],
        "target": r["target"], "action": r["action"], "windowDays": r["window_days"],
        "daysOfData": r["days_of_data"], "hoursCovered": r["hours_covered"], "confidence": r["confidence"],
        "currentCpuRequestCores": as_float(r["current_cpu_request_cores"]),
        "recommendedCpuRequestCores": as_float(r["recommended_cpu_request_cores"]),
        "currentRamRequestBytes": as_float(r["current_ram_request_bytes"]),
        "recommendedRamRequestBytes": as_float(r["recommended_ram_request_bytes"]),
        # the same quantities as the action text and requestSizingV2 write them (k8s_whole); null without one
        "cpuLatest": millicores(r["current_cpu_request_cores"]) or None,
        "cpuRecommended": millicores(r["recommended_cpu_request_cores"]) or None,
        "memoryLatest": mebibytes(r["current_ram_request_bytes"]) or None,
        "memoryRecommended": mebibytes(r["recommended_ram_request_bytes"]) or None,
        "savingUsdPerMonth": as_float(r["saving_usd_per_month"]),
        "savingKwhPerMonth": as_float(r["saving_kwh_per_month"]),
        "savingCo2eGPerMonth": as_float(r["saving_co2e_g_per_month"]),
        "isEstimated": bool(r["is_estimated"]), "estimationReasons": r["estimation_reasons"],
        "evidence": json.loads(r["evidence"] or "{}"),
        # how the row counts in the day's total (NULL on days built before the counting: rebuild them)
        "stage": r.get("stage"), "savingClass": r.get("saving_class"), "supersededBy": r.get("superseded_by"),
        "dependsOn": r.get("depends_on"),
        **{name: as_float(r.get(col)) for name, col in COUNTED_FIELDS.items()},
        # the ledger (`kubeledger recommend --dismiss/--applied`, or the opt-in routes/decisions.py), as built
        "status": r.get("status") or "open", "statusReason": r.get("status_reason"),
        "appliedDate": _day(r.get("applied_date")),
    }


def _day(v: Any) -> Any:
    return v.isoformat() if isinstance(v, date) else v


def load_outcomes(cur: duckdb.DuckDBPyConnection, rows: list[Mapping[str, Any]],
                  kinds: tuple[str, ...] = KINDS) -> list[dict[str, Any]]:
    """The decisions recorded about recommendations of `kinds` (marts.fct_recommendation_outcome_daily) on the days
    `rows` come from (each cluster's answered day), as outcome_row dicts; [] without the mart or rows."""
    days = sorted({(r["cluster"], r["usage_date"]) for r in rows})
    if not days or not has_mart(cur, OUTCOMES_MART):
        return []
    params = Params()
    pairs = " OR ".join(f"(cluster = {params.bind(c)} AND usage_date = {params.bind(d)})" for c, d in days)
    kind_list = ", ".join(params.bind(k) for k in kinds) or "NULL"
    rel = cur.execute(f"SELECT * FROM marts.{OUTCOMES_MART} WHERE ({pairs}) AND kind IN ({kind_list}) "  # noqa: S608
                      "ORDER BY cluster, status, recommendation_id", params.values)
    names = [d[0] for d in rel.description]
    return [outcome_row(dict(zip(names, r, strict=True))) for r in rel.fetchall()]


def outcome_row(r: Mapping[str, Any]) -> dict[str, Any]:
    """One recorded decision, camelCase: the estimate acted on beside the realised saving (applied ones)."""
    return {
        "date": _day(r["usage_date"]), "cluster": r["cluster"], "id": r["recommendation_id"], "kind": r["kind"],
        "target": r["target"], "status": r["status"], "reason": r["reason"], "appliedDate": _day(r["applied_date"]),
        "recordedAt": r["recorded_at"].isoformat() + "Z" if r.get("recorded_at") is not None else None,
        "estimatedOn": _day(r["estimated_on"]),
        **{f"{side}{name}PerMonth": as_float(r[f"{side}_{col}_per_month"])
           for side in ("estimated", "realised") for name, col in (("Usd", "usd"), ("Kwh", "kwh"), ("Co2eG", "co2e_g"))},
        "daysBefore": r["days_before"], "daysAfter": r["days_after"],
    }


def recommendation_totals(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The non-overlapping total of `rows`, the one figure the API, the CLI and the report print: the sum of the
    counted_* columns (each saving counted once, docs/METHOD.md "Counting savings once"), the risk fixes (cost
    increases) apart and never netted. Rows of days built before the counting (counted NULL) are left out and
    counted in `uncounted`; dismissed rows (`kubeledger recommend --dismiss`) count 0 and are counted in
    `dismissed`."""
    total: dict[str, Any] = {"recommendations": len(rows), "superseded": 0, "riskFixes": 0, "uncounted": 0,
                             "dismissed": 0, **dict.fromkeys(COUNTED_FIELDS, 0.0)}
    for r in rows:
        if r.get("counted_usd_per_month") is None:
            total["uncounted"] += 1
            continue
        total["superseded"] += r.get("superseded_by") is not None
        total["dismissed"] += r.get("status") == "dismissed"  # counted 0 by the mart (int_recommendations_counted)
        total["riskFixes"] += r.get("saving_class") == "risk_fix" and r.get("status") != "dismissed"
        for name, col in COUNTED_FIELDS.items():
            total[name] += as_float(r[col]) or 0.0
    return total
