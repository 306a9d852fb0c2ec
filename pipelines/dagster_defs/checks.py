"""Data-quality gates on the daily marts. Blocking checks stop the publish step, so a wrong day never reaches
BI tools or the allocation API; warnings are recorded with their reasons."""


from datetime import date

import dagster as dg

from pipelines.dagster_defs.metadata import safe_metadata
from pipelines.dagster_defs.partitions import daily_partitions
from pipelines.dagster_defs.resources import WRITER_POOL, KubeledgerResource, run_cluster
from pipelines.timeutil import DAY, days_of_window

CLUSTER_DAILY = dg.AssetKey(["marts", "fct_cluster_daily"])
ALLOCATION_DAILY = dg.AssetKey(["marts", "fct_allocation_daily"])
NODE_ENERGY_DAILY = dg.AssetKey(["marts", "fct_node_energy_daily"])


def _days(context: dg.AssetCheckExecutionContext) -> tuple[date, date]:
    """[first day, day after the last) of the check's partition window, for `usage_date >= ? and < ?`."""
    window = context.op_execution_context.partition_time_window
    days = days_of_window(window.start, window.end)
    return days[0], days[-1] + DAY


@dg.asset_check(asset=CLUSTER_DAILY, blocking=True, partitions_def=daily_partitions, pool=WRITER_POOL,
                description="Share of each day's 24 hours with samples, per cluster and per node, is at least "
                "quality.min_hour_coverage; below it the day is incomplete and is not published.")
def hour_coverage(context: dg.AssetCheckExecutionContext, kubeledger: KubeledgerResource) -> dg.AssetCheckResult:
    start, end = _days(context)
    threshold = kubeledger.settings.quality.min_hour_coverage
    with kubeledger.connect(read_only=False) as con:
        clusters = con.execute(
            "select usage_date, cluster, hour_coverage from marts.fct_cluster_daily "
            "where usage_date >= ? and usage_date < ? order by 1, 2", [start, end]).fetchall()
        only = run_cluster(context.op_execution_context)  # kubeledger materialize --cluster builds one cluster
        expected = {only} if only else {c.name for c in kubeledger.settings.clusters}
    clusters = [r for r in clusters if r[1] in expected]
    low = [f"{d} {c}: {cov:.2%}" for d, c, cov in clusters if cov < threshold]
    seen = {(d, c) for d, c, _ in clusters}
    days = sorted({d for d, _, _ in clusters}) or [start]
    missing = [f"{d} {c}: no data" for d in days for c in sorted(expected) if (d, c) not in seen]
    problems = low + missing
    return dg.AssetCheckResult(
        passed=not problems,
        metadata=safe_metadata({"threshold": threshold, "incomplete": problems[:50],
                  "cluster_days": len(clusters)}),
    )


@dg.asset_check(asset=ALLOCATION_DAILY, blocking=True, partitions_def=daily_partitions, pool=WRITER_POOL,
                description="No negative cost, energy or CO2e in the allocation and node marts.")
def no_negative_amounts(context: dg.AssetCheckExecutionContext, kubeledger: KubeledgerResource) -> dg.AssetCheckResult:
    start, end = _days(context)
    with kubeledger.connect() as con:
        bad = con.execute(
            """
            select count(*) from marts.fct_allocation_daily
            where usage_date >= ? and usage_date < ?
              and (cpu_cost < 0 or ram_cost < 0 or gpu_cost < 0 or pv_cost < 0 or network_cost < 0
                   or load_balancer_cost < 0 or total_cost < 0 or energy_kwh < 0
                   or co2e_operational_g < 0 or co2e_embodied_g < 0)
            """, [start, end]).fetchone()[0]
    return dg.AssetCheckResult(passed=bad == 0, metadata=safe_metadata({"negative_rows": bad}))


@dg.asset_check(asset=CLUSTER_DAILY, blocking=True, partitions_def=daily_partitions, pool=WRITER_POOL,
                description="Workload + idle compute cost = node compute cost (1e-9 relative unless idle was "
                "clamped); Σ container + idle energy and CO2e = node energy and CO2e.")
def reconciliation(context: dg.AssetCheckExecutionContext, kubeledger: KubeledgerResource) -> dg.AssetCheckResult:
    start, end = _days(context)
    with kubeledger.connect() as con:
        cost = con.execute(
            """
            select usage_date, cluster, workload_compute_cost + idle_cpu_cost + idle_ram_cost + idle_gpu_cost,
                   node_compute_cost, idle_clamped
            from marts.fct_cluster_daily where usage_date >= ? and usage_date < ?
            """, [start, end]).fetchall()
        energy = con.execute(
            """
            with alloc as (
                select usage_date, cluster, sum(energy_cpu_kwh + energy_memory_kwh + energy_gpu_kwh) as kwh,
                       sum(co2e_embodied_g) as emb
                from marts.fct_allocation_daily
                where usage_date >= ? and usage_date < ? and allocation_kind in ('workload', 'idle')
                group by 1, 2
            ), nodes as (
                select usage_date, cluster, sum(energy_kwh) as kwh, sum(co2e_embodied_g) as emb
                from marts.fct_node_energy_daily where usage_date >= ? and usage_date < ? group by 1, 2
            )
            select nodes.usage_date, nodes.cluster, alloc.kwh, nodes.kwh, alloc.emb, nodes.emb
            from nodes left join alloc using (usage_date, cluster)
            """, [start, end, start, end]).fetchall()
    problems = []
    for d, c, allocated, asset, clamped in cost:
        if not clamped and abs(allocated - asset) > 1e-9 * max(abs(asset), 1e-9):
            problems.append(f"{d} {c}: cost workload+idle {allocated:.6f} != assets {asset:.6f}")
    for d, c, a_kwh, n_kwh, a_emb, n_emb in energy:
        if a_kwh is None or abs(a_kwh - n_kwh) > 1e-9 * max(abs(n_kwh), 1e-9):
            problems.append(f"{d} {c}: energy allocated {a_kwh} != node {n_kwh}")
        if a_emb is None or a_emb + 1e-9 * max(abs(n_emb), 1.0) < n_emb:
            problems.append(f"{d} {c}: embodied allocated {a_emb} < node {n_emb}")
    return dg.AssetCheckResult(passed=not problems, metadata=safe_metadata({"problems": problems[:50],
                                                              "cluster_days": len(cost)}))


@dg.asset_check(asset=CLUSTER_DAILY, blocking=False, partitions_def=daily_partitions, pool=WRITER_POOL,
                description="Share of CO2e from estimated values; above quality.max_estimated_share it warns "
                "with the reasons.")
def estimated_share(context: dg.AssetCheckExecutionContext, kubeledger: KubeledgerResource) -> dg.AssetCheckResult:
    start, end = _days(context)
    threshold = kubeledger.settings.quality.max_estimated_share
    with kubeledger.connect() as con:
        rows = con.execute(
            "select usage_date, cluster, co2e_estimated_share, cost_estimated_share from marts.fct_cluster_daily "
            "where usage_date >= ? and usage_date < ?", [start, end]).fetchall()
        reasons = con.execute(
            """
            select reason, count(*) from (
                select unnest(string_split(estimation_reasons, ',')) as reason
                from marts.fct_allocation_daily
                where usage_date >= ? and usage_date < ? and estimation_reasons <> ''
            ) group by 1 order by 2 desc
            """, [start, end]).fetchall()
    worst = max((r[2] or 0 for r in rows), default=0.0)
    return dg.AssetCheckResult(
        passed=worst <= threshold,
        severity=dg.AssetCheckSeverity.WARN,
        metadata=safe_metadata({"max_co2e_estimated_share": worst, "threshold": threshold,
                  "reasons": ({r: n for r, n in reasons})}),
    )


quality_checks = [hour_coverage, no_negative_amounts, reconciliation, estimated_share]
