{#- the Dagster asset check's asset (the test refs several models) #}
{{ config(meta={'dagster': {'ref': {'name': 'fct_allocation_daily'}}}) }}
-- The days the build wrote only (built_days_filter, macros/windows.sql): in a backfill other days may be mid-build.
-- The cloud bill's reconciliation (issue 28, intermediate/billing/_billing__models.yml) carries each node's
-- adjustment to its allocation rows whole: per cluster and day, Σ (cpu + ram + gpu)_cost_adjustment over the
-- allocation rows (workloads + idle) = Σ of the node assets'; Σ pv_cost_adjustment over the rows = Σ of the volume
-- assets that have a list cost to spread it over, and Σ load_balancer_cost_adjustment = Σ of such load balancer
-- assets. Within 1e-9 relative (floats_differ). Returns what does not.
with allocation as (
    select
        usage_date,
        cluster,
        sum(cpu_cost_adjustment + ram_cost_adjustment + gpu_cost_adjustment) as node_adjustment,
        sum(pv_cost_adjustment) as pv_adjustment,
        sum(load_balancer_cost_adjustment) as lb_adjustment
    from {{ ref('fct_allocation_daily') }}
    where {{ built_days_filter() }}
    group by usage_date, cluster
),

assets as (
    select
        usage_date,
        cluster,
        sum(case when asset_kind = 'node' then cpu_cost_adjustment + ram_cost_adjustment + gpu_cost_adjustment
            else 0 end) as node_adjustment,
        sum(case when asset_kind = 'volume' and pv_cost > 0 then pv_cost_adjustment else 0 end) as pv_adjustment,
        sum(case when asset_kind = 'load_balancer' and load_balancer_cost > 0 then load_balancer_cost_adjustment
            else 0 end) as lb_adjustment
    from {{ ref('fct_asset_daily') }}
    where {{ built_days_filter() }}
    group by usage_date, cluster
),

compared as (
    select
        coalesce(allocation.usage_date, assets.usage_date) as usage_date,
        coalesce(allocation.cluster, assets.cluster) as cluster,
        coalesce(allocation.node_adjustment, 0) as allocated_node,
        coalesce(assets.node_adjustment, 0) as asset_node,
        coalesce(allocation.pv_adjustment, 0) as allocated_pv,
        coalesce(assets.pv_adjustment, 0) as asset_pv,
        coalesce(allocation.lb_adjustment, 0) as allocated_lb,
        coalesce(assets.lb_adjustment, 0) as asset_lb
    from allocation
    full outer join assets
        on assets.usage_date = allocation.usage_date and assets.cluster = allocation.cluster
)

select 'node' as adjustment_kind, usage_date, cluster, allocated_node as allocated, asset_node as asset
from compared
where {{ floats_differ('allocated_node', 'asset_node') }}

union all

select 'pv', usage_date, cluster, allocated_pv, asset_pv
from compared
where {{ floats_differ('allocated_pv', 'asset_pv') }}

union all

select 'load_balancer', usage_date, cluster, allocated_lb, asset_lb
from compared
where {{ floats_differ('allocated_lb', 'asset_lb') }}
