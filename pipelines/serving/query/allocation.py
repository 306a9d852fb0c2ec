"""The allocation query engine: one request → SQL over marts.fct_allocation_daily (serving copy) → allocation sets.

Sharing, aggregation and set-level averages come from dbt_project/macros/allocation_sharing.sql, rendered here with
plain jinja2 and per-request options — the same macro dbt renders for marts.fct_allocation_shared_daily. The key and
filter SQL come from aggregates.py and filters.py, the include*/costMetric parts from allocation_includes.py, and a
request reads an allocation rollup (warehouse/allocation_rollup.py) instead of the detail rows when one can answer.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import duckdb

from pipelines.serving.query.aggregates import (
    NotOnRollup,
    Params,
    aggregate_key_sql,
    check_map_key,
    map_lookup_sql,
)
from pipelines.serving.query.allocation_includes import (
    aggregated_metadata,
    apply_cost_metric,
    merged_map,
    proportional_asset_costs,
)
from pipelines.serving.query.coverage import mart_coverage_notes, require_mart
from pipelines.serving.query.csvout import write_csv
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.filters import compile_filter, parse_filter
from pipelines.serving.query.windows import DaySpan, WindowQuery
from pipelines.warehouse.allocation_columns import allocation_columns, api_fields
from pipelines.warehouse.allocation_rollup import (
    BASE_GROUP,
    LEVELS,
    ROLLUP_LABELS_TABLE,
    ROLLUP_SCHEMA,
    ROLLUPS_TABLE,
    collapse_columns,
)
from pipelines.warehouse.sharing_macros import sharing_macros

SPLITS = ("weighted", "even")
# where shared namespaces/labels and shareCost are pooled: over the whole set (OpenCost) or per cluster (the marts)
SHARE_SCOPES = ("all", "cluster")


def render_sharing_sql(relation_sql: str, options: dict[str, Any]) -> str:
    return _render_sharing_sql(relation_sql, json.dumps(options, sort_keys=True))


@lru_cache(maxsize=256)
def _render_sharing_sql(relation_sql: str, options_json: str) -> str:
    # a request shape renders the same text every time (values are $-parameters): render it once
    columns = [dict(c) for c in allocation_columns()]
    return str(sharing_macros().share_allocations(relation_sql, options=json.loads(options_json), columns=columns))


def hours_per_month() -> float:
    """The month of a monthly amount (shareCost, the configured overhead): the sharing macro's constant."""
    return float(str(sharing_macros().hours_per_month()))


# AllocationQuery field -> share_allocations option, for the options the configured policy sets
_POLICY_FIELDS = {"share_idle": "share_idle", "idle_split": "idle_split", "idle_by_node": "idle_by_node",
                  "share_namespaces": "shared_namespaces", "share_labels": "shared_labels",
                  "share_cost": "overhead_monthly_usd", "share_split": "share_split"}


def policy_defaults(sharing: Any) -> dict[str, Any]:
    """The configured sharing policy (settings.sharing) as AllocationQuery fields: the defaults of the Kubecost
    endpoint and of `kubeledger allocation`. The policy -> options mapping is the macro's sharing_policy_options,
    the one marts.fct_allocation_shared_daily renders, so the API's defaults and the mart cannot drift."""
    policy = {f.name: getattr(sharing, f.name) for f in dataclasses.fields(sharing)}
    options = json.loads(str(sharing_macros().sharing_policy_options(policy)))
    out = {name: options[option] for name, option in _POLICY_FIELDS.items()}
    out.update(share_namespaces=tuple(out["share_namespaces"]), share_labels=tuple(out["share_labels"]),
               share_cost=float(out["share_cost"]))
    return out


@dataclass
class AllocationQuery(WindowQuery):
    """Every parameter of an allocation query; `validate()` raises QueryError naming the bad one."""

    idle: bool = True
    share_idle: bool = False
    idle_split: str = "weighted"
    idle_by_node: bool = False
    split_idle: bool = False
    share_namespaces: tuple[str, ...] = ()
    share_labels: tuple[str, ...] = ()
    share_cost: float = 0.0  # $/month (Kubecost shareCost)
    share_split: str = "weighted"
    share_scope: str = "all"
    include_shared_cost_breakdown: bool = False
    aggregated_metadata: bool = False  # includeAggregatedMetadata
    proportional_asset_costs: bool = False  # includeProportionalAssetResourceCosts
    cost_metric: str = "cumulative"  # cumulative | hourly | daily | monthly
    reconcile: bool = True  # *CostAdjustment from the marts (the cloud bill) and added into totalCost

    def validate(self) -> dict[str, Any]:
        if self._checked:
            return self._checked
        for name, value in (("idleSplit", self.idle_split), ("shareSplit", self.share_split)):
            if value not in SPLITS:
                raise QueryError(name, value, "use weighted or even")
        if self.share_scope not in SHARE_SCOPES:
            raise QueryError("shareScope", self.share_scope,
                             "use all (share across the whole answer, as OpenCost does) or cluster (within each "
                             "cluster, as marts.fct_allocation_shared_daily does)")
        if not (isinstance(self.share_cost, (int, float)) and math.isfinite(self.share_cost)
                and 0 <= self.share_cost < 1e12):
            raise QueryError("shareCost", self.share_cost, "a monthly amount in USD, 0 or more")
        for lv in self.share_labels:
            k, sep, v = lv.partition(":")
            if not sep or not v:
                raise QueryError("shareLabels", lv, "use label:value[,label:value…] (e.g. app:prometheus)")
            check_map_key("shareLabels", lv, k.strip())
        win, span, steps = self.checked_window()
        self._checked = {"window": win, "span": span, "steps": steps, **self.compile(Params())}
        return self._checked

    def compile(self, params: Params) -> dict[str, Any]:
        """The request's key, filter and shared-row SQL over the relation `params` says (detail or rollup); raises
        NotOnRollup when compiling for the rollup and the request needs a column it does not keep."""
        key_sql = aggregate_key_sql(self.aggregate, params)
        filter_sql = compile_filter(parse_filter(self.filter), params)
        shared = ["FALSE"]
        for ns in self.share_namespaces:
            shared.append(f"{params.col('namespace')} = {params.bind(ns)}")
        if self.include_shared_cost_breakdown:
            params.col("namespace")  # the breakdown names each shared row's namespace
        for lv in self.share_labels:
            k, _, v = lv.partition(":")
            shared.append(f"coalesce({map_lookup_sql('label', k.strip(), params)} = {params.bind(v.strip())}, FALSE)")
        return {"params": params, "key_sql": key_sql, "filter_sql": filter_sql, "shared_sql": " OR ".join(shared)}


def _num(v: Any) -> float | None:
    if v is None:
        return None
    f = float(v)
    return f if math.isfinite(f) else None  # NaN/Inf → null


def _iso(dt: Any) -> str | None:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ") if isinstance(dt, datetime) else None


def _json_map(text: Any) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


# *CostAdjustment field -> the allocation column (macros/allocation_columns.sql, `follows`); networkCostAdjustment
# stays 0: network cost is never matched to the bill
ADJUSTMENTS = {"cpuCostAdjustment": "cpu_cost_adjustment", "gpuCostAdjustment": "gpu_cost_adjustment",
               "ramCostAdjustment": "ram_cost_adjustment", "pvCostAdjustment": "pv_cost_adjustment",
               "loadBalancerCostAdjustment": "load_balancer_cost_adjustment"}


def to_allocation(r: dict[str, Any], reconcile: bool = True) -> dict[str, Any]:
    """A macro output row → Kubecost/OpenCost Allocation (A17) plus energy/carbon and provenance. With `reconcile`
    the *CostAdjustment fields carry the bill's adjustments and totalCost includes them, as Kubecost's does
    (a resource's total is its cost + its adjustment); without, they are 0 and totalCost is the list cost."""
    hours = (r["minutes"] or 0) / 60.0
    adjust = {field: (_num(r.get(col)) or 0.0) if reconcile else 0.0 for field, col in ADJUSTMENTS.items()}

    def per_hour(v: Any) -> float | None:
        return _num(v / hours) if v is not None and hours > 0 else 0.0

    props: dict[str, Any] = {}
    for out, col in (("cluster", "cluster"), ("node", "node"), ("container", "container"),
                     ("controller", "controller"), ("controllerKind", "controller_kind"),
                     ("namespace", "namespace"), ("pod", "pod"), ("providerID", "provider_id")):
        if r.get(col) is not None:
            props[out] = r[col]
    for out, col in (("services", "services"), ("namespaceLabels", "namespace_labels"),
                     ("namespaceAnnotations", "namespace_annotations")):
        val = _json_map(r.get(col))
        if val:
            props[out] = val
    # OpenCost merges the namespace's labels (annotations) into each allocation's, the pod's own winning
    for out, own, ns in (("labels", "labels", "namespace_labels"), ("annotations", "annotations",
                                                                     "namespace_annotations")):
        if r.get(own) is not None:  # NULL: the members' own maps differ (includeAggregatedMetadata intersects)
            merged = merged_map(r.get(ns), r.get(own))
            if merged:
                props[out] = merged
    raw_only = None
    if r.get("cpu_core_usage_max") is not None or r.get("ram_byte_usage_max") is not None:
        raw_only = {"cpuCoreUsageMax": _num(r.get("cpu_core_usage_max")),
                    "ramByteUsageMax": _num(r.get("ram_byte_usage_max"))}
    n = _num
    reasons = [x for x in (r.get("estimation_reasons") or "").split(",") if x]
    return {
        "name": r["agg_key"], "properties": props,
        "window": {"start": _iso(r["step_start"]), "end": _iso(r["step_end"])},
        "start": _iso(r.get("start_ts")) or _iso(r["step_start"]), "end": _iso(r.get("end_ts")) or _iso(r["step_end"]),
        "minutes": n(r["minutes"]),
        "cpuCores": per_hour(r["cpu_core_hours"]), "cpuCoreRequestAverage": n(r["cpu_core_request_average"]),
        "cpuCoreUsageAverage": n(r["cpu_core_usage_average"]), "cpuCoreHours": n(r["cpu_core_hours"]),
        # Kubecost/OpenCost fold shared idle into the resource cost; *CostIdle says how much of it is idle.
        "cpuCost": n(r["cpu_cost"] + r["cpu_cost_idle"]), "cpuCostAdjustment": adjust["cpuCostAdjustment"],
        "cpuCostIdle": n(r["cpu_cost_idle"]), "cpuEfficiency": n(r["cpu_efficiency"]),
        "gpuCount": per_hour(r["gpu_hours"]), "gpuRequestAverage": n(r["gpu_request_average"]),
        "gpuUsageAverage": n(r["gpu_usage_average"]), "gpuHours": n(r["gpu_hours"]),
        "gpuCost": n(r["gpu_cost"] + r["gpu_cost_idle"]), "gpuCostAdjustment": adjust["gpuCostAdjustment"],
        "gpuCostIdle": n(r["gpu_cost_idle"]), "gpuEfficiency": n(r["gpu_efficiency"]),
        "networkTransferBytes": n(r["network_transfer_bytes"]), "networkReceiveBytes": n(r["network_receive_bytes"]),
        "networkCost": n(r["network_cost"]), "networkCrossZoneCost": n(r["network_cross_zone_cost"]),
        "networkCrossRegionCost": n(r["network_cross_region_cost"]),
        "networkInternetCost": n(r["network_internet_cost"]), "networkCostAdjustment": 0.0,
        "loadBalancerCost": n(r["load_balancer_cost"]),
        "loadBalancerCostAdjustment": adjust["loadBalancerCostAdjustment"],
        "pvBytes": per_hour(r["pv_byte_hours"]), "pvByteHours": n(r["pv_byte_hours"]), "pvCost": n(r["pv_cost"]),
        "pvs": None, "pvCostAdjustment": adjust["pvCostAdjustment"],
        "ramBytes": per_hour(r["ram_byte_hours"]), "ramByteRequestAverage": n(r["ram_byte_request_average"]),
        "ramByteUsageAverage": n(r["ram_byte_usage_average"]), "ramByteHours": n(r["ram_byte_hours"]),
        "ramCost": n(r["ram_cost"] + r["ram_cost_idle"]), "ramCostAdjustment": adjust["ramCostAdjustment"],
        "ramCostIdle": n(r["ram_cost_idle"]), "ramEfficiency": n(r["ram_efficiency"]),
        "externalCost": n(r["external_cost"]), "sharedCost": n(r["shared_cost"]),
        "totalCost": n(r["total_cost"] + sum(adjust.values())),
        "totalEfficiency": n(r["total_efficiency"]), "rawAllocationOnly": raw_only,
        "costRatio": n(r["cost_ratio"]),
        # kubeledger's own fields (energy, carbon): the `api` names of macros/allocation_columns.sql
        **{field: n(r[col]) for field, col in api_fields()},
        "isEstimated": bool(r["is_estimated"]), "estimationReasons": reasons,
        "reconciliationStatus": r.get("reconciliation_status") if reconcile else None,
    }


@dataclass
class AllocationAnswer:
    """The sets of a query (one {key: allocation} map per step) and what the answer left out or ignored."""

    sets: list[dict[str, dict[str, Any]]]
    warnings: list[str]
    span: DaySpan

    @property
    def warning(self) -> str | None:
        return "; ".join(self.warnings) or None


def rollups(con: duckdb.DuckDBPyConnection) -> list[tuple[str, Params]]:
    """(rollup table, empty Params compiling for it) of this connection's catalog, smallest first; [] when the
    snapshot has none (a serving copy published before rollups, a hand-built test warehouse). The publish builds
    them (warehouse/allocation_rollup.py)."""
    found = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
                        "AND schema_name = ? AND table_name IN ('allocation_rollups', 'allocation_rollup_labels')",
                        [ROLLUP_SCHEMA]).fetchone()
    if not found or found[0] < 2:
        return []
    labels = dict(con.execute(f"SELECT label_key, column_name FROM {ROLLUP_LABELS_TABLE}").fetchall())  # noqa: S608
    out = []
    for table, columns, _ in con.execute(f"SELECT * FROM {ROLLUPS_TABLE} ORDER BY row_count").fetchall():  # noqa: S608
        if table in LEVELS:  # identifiers in SQL text come from LEVELS only
            kept = frozenset(columns)
            out.append((f"{ROLLUP_SCHEMA}.{table}",
                        Params(rollup={k: c for k, c in labels.items() if c in kept}, rollup_columns=kept)))
    return out


def _on_rollup(con: duckdb.DuckDBPyConnection, q: AllocationQuery,
               found: list[tuple[str, Params]] | None = None) -> tuple[str, dict[str, Any]] | None:
    """(rollup table, the request compiled over it) for the smallest allocation rollup that keeps every column the
    request names; None when the detail table must answer (no rollup in this snapshot, or the request needs
    per-row columns: node idle, metadata, asset costs, node/pod/container/service/annotation or other labels)."""
    if q.idle_by_node or q.aggregated_metadata or q.proportional_asset_costs:
        return None
    for table, params in rollups(con) if found is None else found:
        try:
            return table, q.compile(params)
        except NotOnRollup:
            continue
    return None


def answer_allocations(con: duckdb.DuckDBPyConnection, q: AllocationQuery, rollup: bool = True) -> AllocationAnswer:
    """Run `q` on an open (read-only) serving connection. Days that cannot be answered (incomplete, partial at a
    window's edge, not materialised) are left out and named in `warnings`; an answer is never a 404.
    `rollup=False` reads the detail table even when the allocation rollup could answer (the equivalence test)."""
    c = q.validate()
    span, steps = c["span"], c["steps"]
    require_mart(con, "fct_allocation_daily")
    found = rollups(con) if rollup else []
    chosen = _on_rollup(con, q, found) if found else None
    table, compiled, stage = (*chosen, "read") if chosen else ("marts.fct_allocation_daily", c, "detail")
    warnings = [*q.notes, *span.notes]
    # every rollup has the mart's (cluster, day) pairs: the smallest one answers which days are there
    notes, any_day = mart_coverage_notes(con, span, "fct_allocation_daily", found[0][0] if found else None)
    warnings += notes
    if not steps:
        return AllocationAnswer([{}], warnings, span)
    if not any_day:
        return AllocationAnswer([{} for _ in steps], warnings, span)
    values = dict(compiled["params"].values)
    # SQL text below is built only from allow-listed identifiers and $-parameters (S608 reviewed).
    values.update(win_s=span.start.date(), win_e=span.end.date(),
                  steps_s=[s for s, _ in steps], steps_e=[e for _, e in steps])
    relation = f"""(
        SELECT b.*,
            CASE WHEN b.allocation_kind = 'unmounted' THEN '__unmounted__' ELSE {compiled['key_sql']} END AS agg_key,
            st.step_start, st.step_end,
            ({compiled['shared_sql']}) AND coalesce(b.allocation_kind, '') = 'workload' AS is_shared_row,
            NOT coalesce(({compiled['filter_sql']}), FALSE) AS is_filtered_out
        FROM {table} AS b
        JOIN (SELECT unnest(CAST($steps_s AS TIMESTAMP[])) AS step_start,
                     unnest(CAST($steps_e AS TIMESTAMP[])) AS step_end) AS st
          ON b.window_start >= st.step_start AND b.window_start < st.step_end
        WHERE b.usage_date >= $win_s AND b.usage_date < $win_e
    )"""  # noqa: S608
    # shared namespaces/labels travel as is_shared_row (bound parameters), not as options
    options = {option: getattr(q, name) for name, option in _POLICY_FIELDS.items()
               if name not in ("share_namespaces", "share_labels")}
    options.update(overhead_monthly_usd=float(q.share_cost), split_idle=q.split_idle, include_idle=q.idle,
                   share_scope=q.share_scope, rows_col="_rows",
                   # no share rule: no row is shared, so (with no shareCost) the macro leaves the pool out
                   shared_rows=bool(q.share_namespaces or q.share_labels))
    sql = render_sharing_sql(_preaggregated(relation, q.idle_by_node, stage), options)
    cur = con.execute(f"SELECT * FROM ({sql}) ORDER BY step_start, total_cost DESC, agg_key", values)  # noqa: S608
    cols = [d[0] for d in cur.description]
    by_step: dict[datetime, dict[str, dict[str, Any]]] = {s: {} for s, _ in steps}
    for row in cur.fetchall():
        r = dict(zip(cols, row, strict=True))
        by_step.setdefault(r["step_start"], {})[r["agg_key"]] = to_allocation(r, q.reconcile)
    if q.include_shared_cost_breakdown:
        _add_breakdown(con, q, relation, values, steps, by_step)
    if q.aggregated_metadata:
        for (step, key), meta in aggregated_metadata(con, relation, values).items():
            alloc = by_step.get(step, {}).get(key)
            if alloc is not None:
                for part in ("labels", "annotations"):
                    alloc["properties"][part] = meta[part]
    if q.proportional_asset_costs:
        parc = proportional_asset_costs(con, relation, values)
        for step, allocs in by_step.items():
            for key, alloc in allocs.items():
                alloc["proportionalAssetResourceCosts"] = parc.get((step, key), {})
    if q.cost_metric != "cumulative":
        warnings.append(f"costMetric: {q.cost_metric}: cost fields are USD per "
                        f"{ {'hourly': 'hour', 'daily': 'day', 'monthly': '730-hour month'}[q.cost_metric] }, "
                        "averaged over each set's window")
        for step, step_end in steps:
            for alloc in by_step.get(step, {}).values():
                apply_cost_metric(alloc, q.cost_metric, (step_end - step).total_seconds() / 3600.0)
    out: list[dict[str, dict[str, Any]]] = []
    for s, _ in steps:
        items = list(by_step.get(s, {}).items())[q.offset:]
        if q.limit is not None:
            items = items[:q.limit]
        out.append(dict(items))
    return AllocationAnswer(out, warnings, span)


def query_allocations(con: duckdb.DuckDBPyConnection, q: AllocationQuery,
                      rollup: bool = True) -> list[dict[str, dict[str, Any]]]:
    """The sets only (see answer_allocations)."""
    return answer_allocations(con, q, rollup).sets




def _preaggregated(relation: str, idle_by_node: bool, stage: str) -> str:
    """Collapse the window's rows to one per (step, key, idle key, kind, shared, filtered) before sharing.

    Every step of the sharing algorithm is linear within such a group (weights, idle and shared amounts are sums),
    so the answer is the same while the sharing SQL sees thousands of rows instead of millions. `stage` is `detail`
    over fct_allocation_daily rows, `read` over allocation rollup rows (allocation_rollup.collapse_columns)."""
    # estimation_reasons is a group key too: few distinct values, and it spares a DISTINCT aggregate
    group = ["step_start", "step_end", "agg_key", "is_shared_row", "is_filtered_out", *BASE_GROUP]
    if idle_by_node:
        group.append("node")
    # identifiers are fixed names; the relation is the engine's own parameterised SQL
    return f"(SELECT {', '.join(collapse_columns(group, stage))} FROM {relation} AS _r GROUP BY {', '.join(group)})"  # noqa: S608


def _add_breakdown(con: duckdb.DuckDBPyConnection, q: AllocationQuery, relation: str, values: dict[str, Any],
                   steps: list[tuple[datetime, datetime]], by_step: dict[datetime, dict[str, dict[str, Any]]]) -> None:
    """sharedCostBreakdown: each key's sharedCost split over the shared sources (shared rows by namespace, plus
    `__overhead__`) in proportion to the sources' own totals (idle they received is spread the same way)."""
    sql = (f"SELECT step_start, coalesce(namespace, '__unallocated__'), sum(total_cost) "  # noqa: S608
           f"FROM {relation} AS r WHERE is_shared_row GROUP BY ALL")
    rows = con.execute(sql, values).fetchall()
    sources: dict[datetime, dict[str, float]] = {}
    for step, name, total in rows:
        sources.setdefault(step, {})[name] = float(total or 0)
    for step, step_end in steps:
        allocs = by_step.get(step, {})
        src = dict(sources.get(step, {}))
        if q.share_cost:
            src["__overhead__"] = q.share_cost / hours_per_month() * (step_end - step).total_seconds() / 3600.0
        pool = sum(src.values())
        for alloc in allocs.values():
            shared = alloc["sharedCost"] or 0.0
            alloc["sharedCostBreakdown"] = {
                name: {"name": name, "totalCost": shared * amount / pool if pool else 0.0}
                for name, amount in src.items()} if shared else {}


CSV_FIELDS = ("minutes", "cpuCores", "cpuCoreRequestAverage", "cpuCoreUsageAverage", "cpuCoreHours", "cpuCost",
              "cpuCostIdle", "cpuEfficiency", "gpuCount", "gpuHours", "gpuCost", "gpuCostIdle", "gpuEfficiency",
              "ramBytes", "ramByteRequestAverage", "ramByteUsageAverage", "ramByteHours", "ramCost", "ramCostIdle",
              "ramEfficiency", "pvBytes", "pvByteHours", "pvCost", "networkTransferBytes", "networkReceiveBytes",
              "networkCost", "networkCrossZoneCost", "networkCrossRegionCost", "networkInternetCost",
              "loadBalancerCost", "externalCost", "sharedCost", "totalCost", "totalEfficiency", "costRatio",
              *(field for field, _ in api_fields()), "isEstimated", "estimationReasons")


def to_csv(sets: list[dict[str, dict[str, Any]]]) -> str:
    """kubeledger rule (A17): one accumulated row per key: key, then the numeric fields."""
    return write_csv(["name", *CSV_FIELDS], (
        [key, *[";".join(a[f]) if f == "estimationReasons" else a[f] for f in CSV_FIELDS]]
        for allocs in sets for key, a in allocs.items()))
