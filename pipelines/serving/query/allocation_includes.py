"""Optional parts of an allocation answer, computed after the main query over the same rows.

- includeAggregatedMetadata: the labels and annotations every member of a key shares (same key, same value), with
  namespace labels merged under pod labels as OpenCost does.
- includeProportionalAssetResourceCosts: each key's share of the CPU, RAM and GPU cost of every node it ran on.
- costMetric: cost fields as rates (per hour, day or 730-hour month) over each set's window instead of totals.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import duckdb

COST_FIELDS = ("cpuCost", "cpuCostIdle", "gpuCost", "gpuCostIdle", "ramCost", "ramCostIdle", "pvCost",
               "networkCost", "networkCrossZoneCost", "networkCrossRegionCost", "networkInternetCost",
               "loadBalancerCost", "externalCost", "sharedCost", "totalCost", "cpuCostAdjustment",
               "gpuCostAdjustment", "ramCostAdjustment", "pvCostAdjustment", "loadBalancerCostAdjustment")
METRIC_HOURS = {"hourly": 1.0, "daily": 24.0, "monthly": 730.0}


def merged_map(namespace_map: Any, own_map: Any) -> dict[str, str]:
    """OpenCost's precedence: the namespace's labels (annotations) first, the pod's own override them."""
    out: dict[str, str] = {}
    for text in (namespace_map, own_map):
        if isinstance(text, dict):
            out.update(text)
        elif text:
            try:
                val = json.loads(text)
            except (TypeError, ValueError):
                continue
            if isinstance(val, dict):
                out.update({str(k): str(v) for k, v in val.items()})
    return out


def aggregated_metadata(con: duckdb.DuckDBPyConnection, relation: str, values: dict[str, Any]
                        ) -> dict[tuple[datetime, str], dict[str, dict[str, str]]]:
    """Per (step, key): the merged labels and annotations shared by all its workload members."""
    sql = (f"SELECT step_start, agg_key, labels, namespace_labels, annotations, namespace_annotations "  # noqa: S608
           f"FROM {relation} AS r WHERE allocation_kind = 'workload' AND NOT is_filtered_out "
           f"GROUP BY ALL")
    common: dict[tuple[datetime, str], dict[str, dict[str, str]]] = {}
    for step, key, labels, ns_labels, ann, ns_ann in con.execute(sql, values).fetchall():
        merged = {"labels": merged_map(ns_labels, labels), "annotations": merged_map(ns_ann, ann)}
        have = common.get((step, key))
        if have is None:
            common[(step, key)] = merged
            continue
        for part in ("labels", "annotations"):
            have[part] = {k: v for k, v in have[part].items() if merged[part].get(k) == v}
    return common


def proportional_asset_costs(con: duckdb.DuckDBPyConnection, relation: str, values: dict[str, Any]
                             ) -> dict[tuple[datetime, str], dict[str, dict[str, Any]]]:
    """Per (step, key): for each node the key ran on, its CPU/RAM/GPU cost there over the node's own cost."""
    sql = f"""
        WITH mine AS (
            SELECT step_start, step_end, agg_key, cluster, node, sum(cpu_cost) AS cpu, sum(ram_cost) AS ram,
                   sum(gpu_cost) AS gpu, any_value(provider_id) AS provider_id
            FROM {relation} AS r
            WHERE allocation_kind = 'workload' AND node IS NOT NULL AND NOT is_filtered_out
            GROUP BY ALL
        ),
        nodes AS (
            SELECT m.step_start, m.cluster, m.node, sum(a.cpu_cost) AS cpu, sum(a.ram_cost) AS ram,
                   sum(a.gpu_cost) AS gpu
            FROM (SELECT DISTINCT step_start, step_end, cluster, node FROM mine) AS m
            JOIN marts.fct_asset_daily AS a
              ON a.asset_kind = 'node' AND a.cluster = m.cluster AND a.asset_name = m.node
             AND CAST(a.usage_date AS TIMESTAMP) >= m.step_start AND CAST(a.usage_date AS TIMESTAMP) < m.step_end
            GROUP BY ALL
        )
        SELECT mine.step_start, mine.agg_key, mine.cluster, mine.node, mine.provider_id, mine.cpu, mine.ram,
               mine.gpu, nodes.cpu, nodes.ram, nodes.gpu
        FROM mine JOIN nodes USING (step_start, cluster, node)
    """  # noqa: S608 - the relation is the engine's own parameterised SQL
    out: dict[tuple[datetime, str], dict[str, dict[str, Any]]] = {}

    def pct(part: float | None, total: float | None) -> float:
        return float(part or 0) / float(total) if total else 0.0

    for step, key, cluster, node, pid, cpu, ram, gpu, n_cpu, n_ram, n_gpu in con.execute(sql, values).fetchall():
        total = float(n_cpu or 0) + float(n_ram or 0) + float(n_gpu or 0)
        out.setdefault((step, key), {})[f"{cluster},{node}"] = {
            "cluster": cluster, "name": node, "type": "Node", "providerID": pid or "",
            "cpuPercentage": pct(cpu, n_cpu), "ramPercentage": pct(ram, n_ram), "gpuPercentage": pct(gpu, n_gpu),
            "nodeResourceCostPercentage": pct(float(cpu or 0) + float(ram or 0) + float(gpu or 0), total),
            "cpuTotalCost": float(n_cpu or 0), "cpuProportionalCost": float(cpu or 0),
            "ramTotalCost": float(n_ram or 0), "ramProportionalCost": float(ram or 0),
            "gpuTotalCost": float(n_gpu or 0), "gpuProportionalCost": float(gpu or 0),
        }
    return out


def apply_cost_metric(allocation: dict[str, Any], metric: str, step_hours: float) -> None:
    """Turn cumulative cost fields into rates over the set's window (Kubecost costMetric)."""
    if metric == "cumulative" or step_hours <= 0:
        return
    factor = METRIC_HOURS[metric] / step_hours
    for f in COST_FIELDS:
        v = allocation.get(f)
        if isinstance(v, (int, float)):
            allocation[f] = v * factor
