"""The report's figures: SQL over the published marts, nothing computed in Python beyond what SQL returns.

Every function takes an open read-only connection to the serving copy and a period (inclusive days). Sums and
ratios of sums are the only arithmetic here; the formulas behind the columns live in the dbt models.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import duckdb

from pipelines.report.reason_codes import reason_codes

CHART_DAYS = 30  # the charts cover the 30 days ending on the period's last day
TOP_N = 10
RECOMMENDATION_MART = "fct_recommendation_daily"
NO_CONTROLLER = ""  # bare pods: controller_kind/controller NULL in the marts

# what a ranking groups by: the allocation mart's columns (controller_kind/controller NULL → NO_CONTROLLER)
GROUP_KEYS = {
    "namespace": ("cluster", "namespace"),
    "controller": ("cluster", "namespace", "controller_kind", "controller"),
}


@dataclass(frozen=True)
class Period:
    """The days a report covers (inclusive) and its name: a day (2026-11-28) or an ISO week (2026-W48)."""

    kind: str  # daily | weekly
    start: date
    end: date

    @classmethod
    def of(cls, day: date, weekly: bool = False) -> Period:
        if not weekly:
            return cls("daily", day, day)
        monday = day - timedelta(days=day.weekday())
        return cls("weekly", monday, monday + timedelta(days=6))

    @property
    def name(self) -> str:
        if self.kind == "daily":
            return self.start.isoformat()
        year, week, _ = self.start.isocalendar()
        return f"{year}-W{week:02d}"

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def previous(self) -> Period:
        shift = timedelta(days=self.days)
        return Period(self.kind, self.start - shift, self.end - shift)

    @property
    def chart_start(self) -> date:
        return self.end - timedelta(days=CHART_DAYS - 1)


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def cluster_totals(con: duckdb.DuckDBPyConnection, period: Period) -> list[dict[str, Any]]:
    """Per cluster, then all clusters (cluster '__all__'): cost, energy, CO2e (and its operational and embodied
    parts), idle share (idle cost over node
    compute cost, as the mart's idle_percentage) and the CO2e/cost shares on estimated rows (the mart's daily
    shares weighted by the day's CO2e / cost), for the period and the previous one."""
    prev = period.previous()
    return _rows(con, """
        with totals as (
            select coalesce(cluster, '__all__') as cluster,
                   count(distinct usage_date) filter (where usage_date >= ?) as days,
                   sum(total_cost) filter (where usage_date >= ?) as total_cost,
                   sum(energy_kwh) filter (where usage_date >= ?) as energy_kwh,
                   sum(co2e_total_g) filter (where usage_date >= ?) as co2e_total_g,
                   sum(co2e_operational_g) filter (where usage_date >= ?) as co2e_operational_g,
                   sum(co2e_embodied_g) filter (where usage_date >= ?) as co2e_embodied_g,
                   sum(idle_cost) filter (where usage_date >= ?) as idle_cost,
                   sum(idle_cost) filter (where usage_date >= ?)
                       / nullif(sum(node_compute_cost) filter (where usage_date >= ?), 0) as idle_share,
                   sum(co2e_estimated_share * co2e_total_g) filter (where usage_date >= ?)
                       / nullif(sum(co2e_total_g) filter (where usage_date >= ?), 0) as co2e_estimated_share,
                   sum(cost_estimated_share * total_cost) filter (where usage_date >= ?)
                       / nullif(sum(total_cost) filter (where usage_date >= ?), 0) as cost_estimated_share,
                   sum(total_cost) filter (where usage_date < ?) as prev_total_cost,
                   sum(co2e_total_g) filter (where usage_date < ?) as prev_co2e_total_g
            from marts.fct_cluster_daily
            where usage_date between ? and ?
            group by grouping sets ((cluster), ())
        )
        select * from totals order by cluster = '__all__', cluster
        """, [period.start] * 15 + [prev.start, period.end])


def daily_series(con: duckdb.DuckDBPyConnection, period: Period) -> list[dict[str, Any]]:
    """Cost, energy and CO2e per cluster per day over the chart window."""
    return _rows(con, """
        select usage_date, cluster, total_cost, energy_kwh, co2e_total_g
        from marts.fct_cluster_daily where usage_date between ? and ?
        order by usage_date, cluster
        """, [period.chart_start, period.end])


def top_groups(con: duckdb.DuckDBPyConnection, period: Period, level: str, order: str,
               limit: int = TOP_N) -> list[dict[str, Any]]:
    """The workload groups (namespaces or controllers, per cluster) with the most cost or CO2e in the period,
    with the same sums over the previous period. Idle and unmounted rows are left out (shown per cluster)."""
    keys = GROUP_KEYS[level]
    order_col = {"cost": "total_cost", "co2e": "co2e_total_g"}[order]
    cols = ", ".join(f"coalesce({k}, '{NO_CONTROLLER}') as {k}" for k in keys)
    names = ", ".join(keys)
    prev = period.previous()
    sql = f"""
        with sums as (
            select {cols},
                   sum(total_cost) filter (where usage_date >= ?) as total_cost,
                   sum(co2e_total_g) filter (where usage_date >= ?) as co2e_total_g,
                   sum(energy_kwh) filter (where usage_date >= ?) as energy_kwh,
                   sum(total_cost) filter (where usage_date < ?) as prev_total_cost,
                   sum(co2e_total_g) filter (where usage_date < ?) as prev_co2e_total_g
            from marts.fct_allocation_daily
            where allocation_kind = 'workload' and usage_date between ? and ?
            group by all
        )
        select * from sums where total_cost is not null
        order by {order_col} desc, {names} limit ?
        """  # noqa: S608 - identifiers from GROUP_KEYS and a fixed map, never from input
    return _rows(con, sql, [period.start] * 5 + [prev.start, period.end, limit])


def estimation_reasons(con: duckdb.DuckDBPyConnection, period: Period) -> list[dict[str, Any]]:
    """Per reason code: the CO2e and cost on allocation rows that carry it, what it affects (reason_codes.py, the
    marts' lists) and its share of the quantity it affects only: a cost-only reason has no CO2e share, a carbon
    reason no cost share. A row may carry several reasons, so the shares overlap; each is at most the headline
    estimated share of its quantity (the rows of one reason are among the rows of any)."""
    codes = reason_codes()
    return _rows(con, """
        with tagged as (
            select co2e_total_g, total_cost, unnest(string_split(estimation_reasons, ',')) as reason
            from marts.fct_allocation_daily
            where usage_date between ? and ? and estimation_reasons <> ''
        ),
        totals as (
            select sum(co2e_total_g) as co2e, sum(total_cost) as cost
            from marts.fct_allocation_daily where usage_date between ? and ?
        ),
        per_reason as (
            select reason, count(*) as allocation_rows, sum(co2e_total_g) as co2e_total_g,
                   sum(total_cost) as total_cost, list_contains(?, reason) as affects_carbon,
                   list_contains(?, reason) as affects_cost,
                   any_value(totals.co2e) as period_co2e, any_value(totals.cost) as period_cost
            from tagged cross join totals
            group by reason
        )
        select reason, allocation_rows, co2e_total_g,
               case when affects_carbon then co2e_total_g / nullif(period_co2e, 0) end as co2e_share,
               total_cost, case when affects_cost then total_cost / nullif(period_cost, 0) end as cost_share,
               case when affects_carbon and affects_cost then 'cost and carbon' when affects_carbon then 'carbon'
                    when affects_cost then 'cost' else 'neither' end as affects
        from per_reason
        order by co2e_share desc nulls last, cost_share desc nulls last, reason
        """, [period.start, period.end] * 2 + [list(codes["carbon"]), list(codes["cost"])])


def bill_vs_list(con: duckdb.DuckDBPyConnection, period: Period) -> list[dict[str, Any]]:
    """The cloud bill against the list prices (issue 28), per cluster then all clusters ('__all__'), from the
    assets' reconciliation (marts.fct_asset_daily): the list and billed cost of the asset-days the bill matched
    and their difference (the allocations' cost adjustments add up to it), and how many asset-days the bill
    covered without a line for them (unmatched), had no provider id (no_resource_id) or fell on a day without a
    bill (no_bill). Empty when no asset-day of the period met a bill: the report then says costs are list prices."""
    rows = _rows(con, """
        with totals as (
            select coalesce(cluster, '__all__') as cluster,
                   count(*) filter (where reconciliation_status = 'reconciled') as reconciled,
                   count(*) filter (where reconciliation_status = 'unmatched') as unmatched,
                   count(*) filter (where reconciliation_status = 'no_resource_id') as no_resource_id,
                   count(*) filter (where reconciliation_status = 'no_bill') as no_bill,
                   sum(total_cost) filter (where reconciliation_status = 'reconciled') as list_cost,
                   sum(billed_cost) filter (where reconciliation_status = 'reconciled') as billed_cost,
                   sum(cost_adjustment) as cost_adjustment,
                   sum(total_cost) filter (where reconciliation_status = 'unmatched') as unmatched_list_cost
            from marts.fct_asset_daily
            where usage_date between ? and ?
            group by grouping sets ((cluster), ())
        )
        select * from totals order by cluster = '__all__', cluster
        """, [period.start, period.end])
    return rows if any(r["reconciled"] or r["unmatched"] for r in rows) else []


def has_recommendations(con: duckdb.DuckDBPyConnection) -> bool:
    return con.execute("select count(*) from duckdb_tables() where schema_name = 'marts' and table_name = ?",
                       [RECOMMENDATION_MART]).fetchone()[0] > 0


def recommendations(con: duckdb.DuckDBPyConnection, period: Period, limit: int = TOP_N) -> dict[str, Any]:
    """The recommendations as the API and `kubeledger recommend` read them (load_recommendations: each
    cluster's newest day in the period): the `limit` rows that add most to the total, the kinds, and the total
    counted once with the risk fixes apart (recommendation_totals, the figure all three print). Dismissed rows
    (`kubeledger recommend --dismiss`) are left out of the rows and kinds, only counted beside applied ones; the
    applied ones' outcomes (estimated vs realised, marts.fct_recommendation_outcome_daily) come along."""
    from pipelines.serving.query.recommendations import (
        KINDS,
        Selection,
        load_outcomes,
        load_recommendations,
        recommendation_totals,
    )

    end = period.end + timedelta(days=1)
    sel = Selection(window=f"{period.start.isoformat()}T00:00:00Z,{end.isoformat()}T00:00:00Z", filter=None,
                    kinds=KINDS, sort_column="saving_usd_per_month", limit=None)
    rows, _notes = load_recommendations(con, sel)
    if not rows:
        return {"rows": [], "kinds": [], "total": recommendation_totals([]), "first_day": None, "last_day": None,
                "dismissed": 0, "applied": 0, "outcomes": []}
    # a dismissed row counts nothing (int_recommendations_counted): the total is the same with or without it
    shown = [r for r in rows if r.get("status") != "dismissed"]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for r in shown:
        by_kind.setdefault(r["kind"], []).append(r)
    kinds = [{"kind": k, **recommendation_totals(rs)} for k, rs in by_kind.items()]
    kinds.sort(key=lambda k: (-k["countedUsdPerMonth"], -k["countedCo2eGPerMonth"], k["kind"]))

    def weight(r: dict[str, Any]) -> tuple:
        return (-(r.get("counted_usd_per_month") or 0.0), -(r.get("counted_co2e_g_per_month") or 0.0),
                -(r.get("risk_fix_usd_per_month") or 0.0), r["recommendation_id"])

    days = [r["usage_date"] for r in rows]
    return {"rows": sorted(shown, key=weight)[:limit], "kinds": kinds, "total": recommendation_totals(shown),
            "first_day": min(days), "last_day": max(days),
            "dismissed": sum(r.get("status") == "dismissed" for r in rows),
            "applied": sum(r.get("status") == "applied" for r in rows),
            "outcomes": [o for o in load_outcomes(con, rows) if o["status"] == "applied"]}
