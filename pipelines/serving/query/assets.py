"""Asset sets over marts.fct_asset_daily: Kubecost /model/assets, OpenCost /assets, and /assets/carbon.

One row of the mart is one asset on one day (node, volume, load balancer, cluster-management overhead). A request
picks the whole complete days of its window (windows.py), tags each row with its OpenCost type and properties,
filters, and sums per (set, key) in SQL. Nodes take their vCPUs, energy and CO2e from marts.fct_node_energy_daily
and their providerID from marts.fct_allocation_daily when those marts are in the snapshot.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

import duckdb

from pipelines.serving.query.asset_query import AssetQuery
from pipelines.serving.query.coverage import has_column, has_mart, mart_coverage_notes, require_mart
from pipelines.serving.query.csvout import write_csv
from pipelines.serving.query.windows import DaySpan

TYPES = {"node": ("Node", "Compute"), "volume": ("Disk", "Storage"), "load_balancer": ("LoadBalancer", "Network"),
         "overhead": ("ClusterManagement", "Management")}
_COST_SUMS = ("hours", "cpu_cost", "ram_cost", "gpu_cost", "pv_cost", "load_balancer_cost", "overhead_cost",
              "total_cost", "cost_adjustment", "cpu_core_hours", "energy_kwh", "co2e_operational_g", "co2e_embodied_g", "co2e_total_g")
_PROPS = ("category", "prov", "account", "project", "service", "cluster", "asset_name", "provider_id",
          "instance_type", "region")
_ZERO_BREAKDOWN = {"idle": 0.0, "other": 0.0, "system": 0.0, "user": 0.0}


def _case(column: str, index: int) -> str:
    whens = " ".join(f"WHEN '{kind}' THEN '{names[index]}'" for kind, names in TYPES.items())
    return f"CASE {column} {whens} ELSE 'Asset' END"


def _sql(con: duckdb.DuckDBPyConnection, key_sql: str, filter_sql: str, only_type: str | None,
         reconcile: bool = True) -> str:
    """SQL text from allow-listed identifiers and the query's compiled key/filter; values are $-parameters.
    `reconcile`: each asset's adjustment to the bill (0 with reconcile=false, or in a snapshot without it)."""
    adjustment = ("coalesce(a.cost_adjustment, 0)" if reconcile and has_column(con, "fct_asset_daily", "cost_adjustment")
                  else "CAST(0 AS DOUBLE)")
    if has_mart(con, "fct_allocation_daily"):
        ids = ("SELECT cluster, node, max(provider_id) AS provider_id FROM marts.fct_allocation_daily "
               "WHERE usage_date >= $win_s AND usage_date < $win_e AND node IS NOT NULL "
               "AND nullif(provider_id, '') IS NOT NULL GROUP BY cluster, node")
    else:
        ids = "SELECT NULL::VARCHAR AS cluster, NULL::VARCHAR AS node, NULL::VARCHAR AS provider_id WHERE FALSE"
    energy_cols = {"vcpus": "DOUBLE", "energy_kwh": "DOUBLE", "co2e_operational_g": "DOUBLE",
                   "co2e_embodied_g": "DOUBLE", "co2e_total_g": "DOUBLE", "is_estimated": "BOOLEAN",
                   "estimation_reasons": "VARCHAR"}
    if has_mart(con, "fct_node_energy_daily"):
        en = (f"SELECT usage_date, cluster, node, {', '.join(energy_cols)} "  # noqa: S608 - fixed names
              "FROM marts.fct_node_energy_daily "
              "WHERE usage_date >= $win_s AND usage_date < $win_e AND node IS NOT NULL")
    else:
        stubs = ", ".join(f"NULL::{t} AS {c}" for c, t in energy_cols.items())
        en = f"SELECT NULL::DATE AS usage_date, NULL::VARCHAR AS cluster, NULL::VARCHAR AS node, {stubs} WHERE FALSE"
    type_sql = "TRUE" if only_type is None else f"asset_type = '{only_type}'"
    props = [f"CASE WHEN count(DISTINCT coalesce({p}, '')) = 1 THEN min({p}) END AS {p}" for p in _PROPS]
    return f"""
    WITH steps AS (SELECT unnest(CAST($steps_s AS TIMESTAMP[])) AS step_start,
                          unnest(CAST($steps_e AS TIMESTAMP[])) AS step_end),
    a AS (SELECT * FROM marts.fct_asset_daily WHERE usage_date >= $win_s AND usage_date < $win_e),
    cp AS (SELECT cluster AS cp_cluster, CASE WHEN count(DISTINCT provider) = 1 THEN min(provider) END AS cp_provider
           FROM a WHERE asset_kind = 'node' GROUP BY cluster),
    ids AS ({ids}),
    en AS ({en}),
    r AS (
        SELECT a.usage_date, a.cluster, a.asset_kind, a.asset_name, a.instance_type, a.region, a.is_spot, a.hours,
               a.cpu_cost, a.ram_cost, a.gpu_cost, a.pv_cost, a.load_balancer_cost, a.overhead_cost, a.total_cost,
               a.hourly_price_usd, a.price_source, a.is_estimated, {adjustment} AS cost_adjustment,
               {_case('a.asset_kind', 0)} AS asset_type, {_case('a.asset_kind', 1)} AS category,
               coalesce(a.provider, cp.cp_provider) AS prov, CAST(NULL AS VARCHAR) AS account,
               CAST(NULL AS VARCHAR) AS project, 'Kubernetes' AS service,
               CASE a.asset_kind WHEN 'node' THEN ids.provider_id WHEN 'overhead' THEN NULL
                    ELSE a.asset_name END AS provider_id,
               coalesce(en.vcpus, 0) * a.hours AS cpu_core_hours, en.energy_kwh, en.co2e_operational_g,
               en.co2e_embodied_g, en.co2e_total_g, en.is_estimated AS energy_estimated,
               en.estimation_reasons AS energy_reasons
        FROM a
        LEFT JOIN cp ON cp.cp_cluster = a.cluster
        LEFT JOIN ids ON a.asset_kind = 'node' AND ids.cluster = a.cluster AND ids.node = a.asset_name
        LEFT JOIN en ON a.asset_kind = 'node' AND en.usage_date = a.usage_date AND en.cluster = a.cluster
                    AND en.node = a.asset_name
    ),
    f AS (
        SELECT r.*, st.step_start, st.step_end, {key_sql} AS agg_key
        FROM r JOIN steps AS st
          ON r.usage_date >= CAST(st.step_start AS DATE) AND r.usage_date < CAST(st.step_end AS DATE)
        WHERE ({filter_sql}) AND {type_sql}
    )
    SELECT step_start, step_end, agg_key,
           CASE WHEN count(DISTINCT asset_type) = 1 THEN min(asset_type) ELSE 'Asset' END AS asset_type,
           count(DISTINCT [cluster, asset_kind, asset_name]) AS n_assets,
           min(usage_date) AS first_day, max(usage_date) AS last_day,
           {', '.join(props)},
           CASE WHEN count(DISTINCT price_source) = 1 THEN min(price_source) ELSE 'mixed' END AS price_source,
           {', '.join(f'sum({c}) AS {c}' for c in _COST_SUMS)},
           sum(CASE WHEN is_spot THEN hours ELSE 0 END) AS spot_hours,
           bool_or(is_estimated) AS is_estimated, bool_or(energy_estimated) AS energy_estimated,
           list(DISTINCT energy_reasons) AS energy_reasons
    FROM f GROUP BY step_start, step_end, agg_key
    ORDER BY step_start, total_cost DESC, agg_key
    """  # noqa: S608


def _iso(dt: datetime | date) -> str:
    if not isinstance(dt, datetime):
        dt = datetime(dt.year, dt.month, dt.day)
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _f(v: Any) -> float:
    return float(v) if v is not None else 0.0


def _reasons(values: list[Any] | None) -> list[str]:
    return sorted({x for v in values or [] if v for x in str(v).split(",") if x})


def to_asset(r: dict[str, Any]) -> dict[str, Any]:
    """A grouped row → OpenCost asset JSON (ASJ field order) plus kubeledger's provenance fields."""
    start = datetime.combine(r["first_day"], datetime.min.time())
    end = datetime.combine(r["last_day"], datetime.min.time()) + timedelta(days=1)
    one = r["n_assets"] == 1
    minutes = _f(r["hours"]) * 60.0 if one else (end - start).total_seconds() / 60.0
    hours = minutes / 60.0
    props = {out: r[col] for out, col in (("category", "category"), ("provider", "prov"), ("account", "account"),
                                          ("project", "project"), ("service", "service"), ("cluster", "cluster"),
                                          ("name", "asset_name"), ("providerID", "provider_id")) if r[col]}
    kind = r["asset_type"]
    out: dict[str, Any] = {"type": kind, "properties": props, "labels": {},
                           "window": {"start": _iso(r["step_start"]), "end": _iso(r["step_end"])},
                           "start": _iso(start), "end": _iso(end), "minutes": minutes}
    # Kubecost: an asset's totalCost includes its adjustment to the bill (0 unless reconciled)
    adjustment = _f(r["cost_adjustment"])
    total = _f(r["total_cost"]) + adjustment
    if kind == "Node":
        out.update(nodeType=r["instance_type"] or "",
                   cpuCores=_f(r["cpu_core_hours"]) / hours if hours else 0.0, ramBytes=0.0,
                   cpuCoreHours=_f(r["cpu_core_hours"]), ramByteHours=0.0, GPUHours=0.0,
                   cpuBreakdown=dict(_ZERO_BREAKDOWN), ramBreakdown=dict(_ZERO_BREAKDOWN),
                   preemptible=_f(r["spot_hours"]) / _f(r["hours"]) if _f(r["hours"]) else 0.0, discount=0.0,
                   cpuCost=_f(r["cpu_cost"]), gpuCost=_f(r["gpu_cost"]), gpuCount=0.0, ramCost=_f(r["ram_cost"]),
                   adjustment=adjustment, totalCost=total, region=r["region"],
                   energyKwh=r["energy_kwh"], co2eTotalG=r["co2e_total_g"])
    elif kind == "Disk":
        out.update(byteHours=0.0, bytes=0.0, byteHoursUsed=None, byteUsageMax=None,
                   breakdown=dict(_ZERO_BREAKDOWN), adjustment=adjustment, totalCost=total, storageClass="",
                   volumeName=r["asset_name"] or "", claimName="", claimNamespace="")
    elif kind == "LoadBalancer":
        out.update(adjustment=adjustment, totalCost=total, private=False, ip="")
    elif kind == "ClusterManagement":
        out.update(totalCost=total)
    else:  # several types under one key (OpenCost's Any asset): the cost by kind, so the total can be read
        out.update(adjustment=adjustment, totalCost=total, cpuCost=_f(r["cpu_cost"]), ramCost=_f(r["ram_cost"]),
                   gpuCost=_f(r["gpu_cost"]), diskCost=_f(r["pv_cost"]),
                   loadBalancerCost=_f(r["load_balancer_cost"]), managementCost=_f(r["overhead_cost"]))
    out.update(assetHours=_f(r["hours"]), assets=r["n_assets"], priceSource=r["price_source"],
               isEstimated=bool(r["is_estimated"]))
    return out


def to_carbon(r: dict[str, Any]) -> dict[str, Any]:
    """OpenCost's CarbonRow (co2e in metric tonnes) plus kubeledger's grams, energy and provenance."""
    total = r["co2e_total_g"]
    return {"co2e": total / 1e6 if total is not None else None, "co2eTotalG": total,
            "co2eOperationalG": r["co2e_operational_g"], "co2eEmbodiedG": r["co2e_embodied_g"],
            "energyKwh": r["energy_kwh"], "isEstimated": bool(r["energy_estimated"]) or total is None,
            "estimationReasons": _reasons(r["energy_reasons"]) + ([] if total is not None else ["energy_missing"])}


def answer_assets(con: duckdb.DuckDBPyConnection, q: AssetQuery, carbon: bool = False
                  ) -> tuple[list[dict[str, dict[str, Any]]], list[str], DaySpan]:
    """Sets of {key: asset} (or {key: carbon row}), one per step, and the notes for the response's warning."""
    c = q.validate()
    span, steps = c["span"], c["steps"]
    require_mart(con, "fct_asset_daily")
    warnings = [*q.notes, *span.notes]
    notes, any_day = mart_coverage_notes(con, span, "fct_asset_daily")
    warnings += notes
    if carbon:
        if has_mart(con, "fct_node_energy_daily"):
            warnings += mart_coverage_notes(con, span, "fct_node_energy_daily")[0]
        else:
            warnings.append("marts.fct_node_energy_daily is not in the serving snapshot; co2e is null")
    if not steps:
        return [{}], warnings, span
    if not any_day:
        return [{} for _ in steps], warnings, span
    values = dict(c["params"].values)
    values.update(win_s=span.start.date(), win_e=span.end.date(), steps_s=[s for s, _ in steps],
                  steps_e=[e for _, e in steps])
    cur = con.execute(_sql(con, c["key_sql"], c["filter_sql"], "Node" if carbon else None, q.reconcile), values)
    cols = [d[0] for d in cur.description]
    by_step: dict[datetime, dict[str, dict[str, Any]]] = {s: {} for s, _ in steps}
    for row in cur.fetchall():
        r = dict(zip(cols, row, strict=True))
        by_step.setdefault(r["step_start"], {})[r["agg_key"]] = to_carbon(r) if carbon else to_asset(r)
    out = []
    for s, _ in steps:
        items = list(by_step.get(s, {}).items())[q.offset:]
        out.append(dict(items[:q.limit] if q.limit is not None else items))
    return out, warnings, span


CSV_FIELDS = ("type", "category", "provider", "cluster", "providerID", "windowStart", "windowEnd", "start", "end",
              "minutes", "assetHours", "cpuCost", "ramCost", "gpuCost", "diskCost", "loadBalancerCost",
              "managementCost", "totalCost", "priceSource", "isEstimated")
_TYPE_COST = {"Disk": "diskCost", "LoadBalancer": "loadBalancerCost", "ClusterManagement": "managementCost"}


def _flat(a: dict[str, Any]) -> dict[str, Any]:
    flat = {**a["properties"], "type": a["type"], "windowStart": a["window"]["start"], "windowEnd": a["window"]["end"],
            "start": a["start"], "end": a["end"], "minutes": a["minutes"], "assetHours": a["assetHours"],
            "totalCost": a["totalCost"], "priceSource": a["priceSource"], "isEstimated": a["isEstimated"]}
    for f in ("cpuCost", "ramCost", "gpuCost", "diskCost", "loadBalancerCost", "managementCost"):
        flat[f] = a.get(f, a["totalCost"] if _TYPE_COST.get(a["type"]) == f else 0.0)
    return flat


def assets_csv(sets: list[dict[str, dict[str, Any]]]) -> str:
    """One row per key and set: the key, then the fields (the cost columns a type does not have are 0)."""
    return write_csv(["name", *CSV_FIELDS], ([key, *[_flat(a).get(f) for f in CSV_FIELDS]]
                                             for assets in sets for key, a in assets.items()))
