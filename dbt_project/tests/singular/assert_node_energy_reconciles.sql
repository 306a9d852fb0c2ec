{#- the Dagster asset check's asset (the test refs several models) #}
{{ config(meta={'dagster': {'ref': {'name': 'fct_node_energy_daily'}}}) }}
-- The days the build wrote only (built_days_filter, macros/windows.sql): in a backfill other days may be mid-build.
-- METHOD B2/B6 (kubeledger rule: the node's unattributed energy, operational and embodied CO2e go to its
-- __idle__ row, so nodes reconcile). Per node and day, over the allocation rows of the node (workload + idle):
--   Σ energy_kwh (without PV storage energy, which is not node energy) = node energy_kwh
--   Σ co2e_operational_g = node co2e_operational_g   (checked on node-days without PV storage energy, whose
--                                                      CO2e is added to the pods' operational CO2e)
--   Σ co2e_embodied_g    = node co2e_embodied_g   (unless the node-day's idle row is idle_clamped and the
--                                                      containers hold MORE than the node: B6 gives containers
--                                                      min(max(request, usage) / vCPUs, 1) each and the idle row
--                                                      only a positive remainder, so Σ max(request, usage) above
--                                                      capacity - the case that clamps CPU idle - overshoots)
-- within 1e-9 relative (floats_differ; fct_allocation_daily vs fct_node_energy_daily). Returns the mismatches.
with allocation as (
    select
        usage_date,
        cluster,
        node,
        sum(coalesce(energy_kwh, 0) - coalesce(energy_storage_kwh, 0)) as energy_kwh,
        sum(coalesce(energy_storage_kwh, 0)) as energy_storage_kwh,
        sum(coalesce(co2e_operational_g, 0)) as co2e_operational_g,
        sum(coalesce(co2e_embodied_g, 0)) as co2e_embodied_g,
        coalesce(bool_or(idle_clamped), false) as any_idle_clamped
    from {{ ref('fct_allocation_daily') }}
    where allocation_kind in ('workload', 'idle') and {{ built_days_filter() }}
    group by usage_date, cluster, node
),

nodes as (
    select
        usage_date,
        cluster,
        node,
        sum(coalesce(energy_kwh, 0)) as energy_kwh,
        sum(coalesce(co2e_operational_g, 0)) as co2e_operational_g,
        sum(coalesce(co2e_embodied_g, 0)) as co2e_embodied_g
    from {{ ref('fct_node_energy_daily') }}
    where {{ built_days_filter() }}
    group by usage_date, cluster, node
),

compared as (
    select
        coalesce(allocation.usage_date, nodes.usage_date) as usage_date,
        coalesce(allocation.cluster, nodes.cluster) as cluster,
        coalesce(allocation.node, nodes.node) as node,
        coalesce(allocation.energy_kwh, 0) as allocated_energy_kwh,
        coalesce(nodes.energy_kwh, 0) as node_energy_kwh,
        coalesce(allocation.energy_storage_kwh, 0) as allocated_storage_kwh,
        coalesce(allocation.co2e_operational_g, 0) as allocated_co2e_operational_g,
        coalesce(nodes.co2e_operational_g, 0) as node_co2e_operational_g,
        coalesce(allocation.co2e_embodied_g, 0) as allocated_co2e_embodied_g,
        coalesce(nodes.co2e_embodied_g, 0) as node_co2e_embodied_g,
        coalesce(allocation.any_idle_clamped, false) as any_idle_clamped
    from allocation
    full outer join nodes
        on nodes.usage_date = allocation.usage_date and nodes.cluster = allocation.cluster
        and nodes.node is not distinct from allocation.node
)

select 'energy_kwh' as measure, usage_date, cluster, node,
       allocated_energy_kwh as allocated, node_energy_kwh as node_total
from compared
where {{ floats_differ('allocated_energy_kwh', 'node_energy_kwh') }}

union all

select 'co2e_operational_g', usage_date, cluster, node, allocated_co2e_operational_g, node_co2e_operational_g
from compared
where allocated_storage_kwh = 0
  and {{ floats_differ('allocated_co2e_operational_g', 'node_co2e_operational_g') }}

union all

select 'co2e_embodied_g', usage_date, cluster, node, allocated_co2e_embodied_g, node_co2e_embodied_g
from compared
where {{ floats_differ('allocated_co2e_embodied_g', 'node_co2e_embodied_g') }}
  and not (any_idle_clamped and allocated_co2e_embodied_g > node_co2e_embodied_g)
