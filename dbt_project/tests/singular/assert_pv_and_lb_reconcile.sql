{#- the Dagster asset check's asset (the test refs several models) #}
{{ config(meta={'dagster': {'ref': {'name': 'fct_allocation_daily'}}}) }}
-- The days the build wrote only (built_days_filter, macros/windows.sql): in a backfill other days may be mid-build.
-- METHOD A7/A9: persistent volumes and load balancers are fully allocated (pods + __unmounted__), never idle.
-- Per cluster and day: Σ pv_cost over all allocation rows = Σ pv_cost of the volume assets, and
-- Σ load_balancer_cost over all allocation rows = Σ load_balancer_cost of the load-balancer assets,
-- within 1e-9 relative (floats_differ, macros/float_tolerance.sql). Returns the cluster-days (and kind) that do
-- not reconcile.
with allocation as (
    select
        usage_date,
        cluster,
        sum(coalesce(pv_cost, 0)) as pv_cost,
        sum(coalesce(load_balancer_cost, 0)) as load_balancer_cost
    from {{ ref('fct_allocation_daily') }}
    where {{ built_days_filter() }}
    group by usage_date, cluster
),

assets as (
    select
        usage_date,
        cluster,
        sum(case when asset_kind = 'volume' then coalesce(pv_cost, 0) else 0 end) as pv_cost,
        sum(case when asset_kind = 'load_balancer' then coalesce(load_balancer_cost, 0) else 0 end)
            as load_balancer_cost
    from {{ ref('fct_asset_daily') }}
    where {{ built_days_filter() }}
    group by usage_date, cluster
),

compared as (
    select
        coalesce(allocation.usage_date, assets.usage_date) as usage_date,
        coalesce(allocation.cluster, assets.cluster) as cluster,
        coalesce(allocation.pv_cost, 0) as allocated_pv_cost,
        coalesce(assets.pv_cost, 0) as asset_pv_cost,
        coalesce(allocation.load_balancer_cost, 0) as allocated_load_balancer_cost,
        coalesce(assets.load_balancer_cost, 0) as asset_load_balancer_cost
    from allocation
    full outer join assets
        on assets.usage_date = allocation.usage_date and assets.cluster = allocation.cluster
)

select 'pv' as cost_kind, usage_date, cluster, allocated_pv_cost as allocated, asset_pv_cost as asset,
       allocated_pv_cost - asset_pv_cost as difference
from compared
where {{ floats_differ('allocated_pv_cost', 'asset_pv_cost') }}

union all

select 'load_balancer', usage_date, cluster, allocated_load_balancer_cost, asset_load_balancer_cost,
       allocated_load_balancer_cost - asset_load_balancer_cost
from compared
where {{ floats_differ('allocated_load_balancer_cost', 'asset_load_balancer_cost') }}
