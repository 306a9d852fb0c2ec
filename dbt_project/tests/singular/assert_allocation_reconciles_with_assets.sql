{#- the Dagster asset check's asset (the test refs several models) #}
{{ config(meta={'dagster': {'ref': {'name': 'fct_allocation_daily'}}}) }}
-- The days the build wrote only (built_days_filter, macros/windows.sql): in a backfill other days may be mid-build.
-- METHOD A1/A10/A18 (blocking reconciliation, before sharing): per cluster and day,
--   Σ workload CPU+RAM+GPU cost + Σ idle CPU+RAM+GPU cost = Σ node CPU+RAM+GPU asset cost
-- within 1e-9 relative (floats_differ, macros/float_tolerance.sql), unless idle_clamped (the overshoot is
-- reported, never subtracted).
-- The exemption is applied per node-day, so one clamped node does not hide the rest of its cluster:
--   * nodes whose idle row is idle_clamped are left out of both sides of the cluster-day sums, and for them the
--     allocated cost must be >= the asset cost (clamping only ever removes a negative idle);
--   * workload rows with no node (node metrics missing) stay on the allocation side.
-- Returns the failing (check, cluster, day) rows.
with allocation_nodes as (
    select
        usage_date,
        cluster,
        node,
        sum(case when allocation_kind in ('workload', 'idle')
                 then coalesce(cpu_cost, 0) + coalesce(ram_cost, 0) + coalesce(gpu_cost, 0) else 0 end)
            as allocated_compute_cost,
        coalesce(bool_or(idle_clamped), false) as idle_clamped
    from {{ ref('fct_allocation_daily') }}
    where {{ built_days_filter() }}
    group by usage_date, cluster, node
),

asset_nodes as (
    select
        usage_date,
        cluster,
        asset_name as node,
        sum(coalesce(cpu_cost, 0) + coalesce(ram_cost, 0) + coalesce(gpu_cost, 0)) as node_compute_cost
    from {{ ref('fct_asset_daily') }}
    where asset_kind = 'node' and {{ built_days_filter() }}
    group by usage_date, cluster, asset_name
),

per_node as (
    select
        coalesce(allocation_nodes.usage_date, asset_nodes.usage_date) as usage_date,
        coalesce(allocation_nodes.cluster, asset_nodes.cluster) as cluster,
        coalesce(allocation_nodes.node, asset_nodes.node) as node,
        coalesce(allocation_nodes.allocated_compute_cost, 0) as allocated_compute_cost,
        coalesce(asset_nodes.node_compute_cost, 0) as node_compute_cost,
        coalesce(allocation_nodes.idle_clamped, false) as idle_clamped
    from allocation_nodes
    full outer join asset_nodes
        on asset_nodes.usage_date = allocation_nodes.usage_date and asset_nodes.cluster = allocation_nodes.cluster
        and asset_nodes.node = allocation_nodes.node
),

per_cluster as (
    select
        usage_date,
        cluster,
        sum(case when not idle_clamped then allocated_compute_cost else 0 end) as allocated_compute_cost,
        sum(case when not idle_clamped then node_compute_cost else 0 end) as node_compute_cost
    from per_node
    group by usage_date, cluster
)

select 'cluster_day' as check_name, usage_date, cluster, cast(null as string) as node,
       allocated_compute_cost, node_compute_cost, allocated_compute_cost - node_compute_cost as difference
from per_cluster
where {{ floats_differ('allocated_compute_cost', 'node_compute_cost') }}

union all

select 'clamped_node_undershoot', usage_date, cluster, node,
       allocated_compute_cost, node_compute_cost, allocated_compute_cost - node_compute_cost
from per_node
where idle_clamped
  and allocated_compute_cost < node_compute_cost
  and {{ floats_differ('allocated_compute_cost', 'node_compute_cost') }}
