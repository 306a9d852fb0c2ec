-- grain: one row per (usage_date, cluster): asset, workload, idle, unmounted and overhead totals, energy and CO2e
with allocations as (
    select * from {{ ref('fct_allocation_daily') }}
    {% if is_incremental() %}
    where usage_date in (select usage_date from {{ ref('int_nodes_counted_daily') }})
    {% endif %}
),

assets as (
    select * from {{ ref('fct_asset_daily') }}
    {% if is_incremental() %}
    where usage_date in (select usage_date from {{ ref('int_nodes_counted_daily') }})
    {% endif %}
),

node_hours as (
    select * from {{ ref('int_nodes_counted_daily') }}
),

alloc_totals as (
    select
        usage_date,
        cluster,
        sum(case when allocation_kind = 'workload' then total_cost else 0 end) as workload_cost,
        sum(case when allocation_kind = 'workload' then cpu_cost + ram_cost + gpu_cost else 0 end)
            as workload_compute_cost,
        sum(case when allocation_kind = 'idle' then total_cost else 0 end) as idle_cost,
        sum(case when allocation_kind = 'idle' then cpu_cost else 0 end) as idle_cpu_cost,
        sum(case when allocation_kind = 'idle' then ram_cost else 0 end) as idle_ram_cost,
        sum(case when allocation_kind = 'idle' then gpu_cost else 0 end) as idle_gpu_cost,
        sum(case when allocation_kind = 'unmounted' then total_cost else 0 end) as unmounted_cost,
        sum(network_cost) as network_cost,
        sum(total_cost) as allocation_total_cost,
        sum(energy_kwh) as energy_kwh,
        sum(case when allocation_kind = 'idle' then energy_kwh else 0 end) as idle_energy_kwh,
        sum(co2e_operational_g) as co2e_operational_g,
        sum(co2e_embodied_g) as co2e_embodied_g,
        sum(co2e_total_g) as co2e_total_g,
        sum(case when {{ has_any_reason('estimation_reasons', carbon_reason_codes()) }} then co2e_total_g else 0 end)
            / nullif(sum(co2e_total_g), 0)
            as co2e_estimated_share,
        sum(case when {{ has_any_reason('estimation_reasons', cost_reason_codes()) }} then total_cost else 0 end)
            / nullif(sum(total_cost), 0) as cost_estimated_share,
        count(*) as allocation_rows,
        bool_or(idle_clamped) as idle_clamped
    from allocations
    group by usage_date, cluster
),

asset_totals as (
    select
        usage_date,
        cluster,
        sum(case when asset_kind <> 'overhead' then total_cost else 0 end) as asset_cost,
        sum(cpu_cost + ram_cost + gpu_cost) as node_compute_cost,
        sum(overhead_cost) as overhead_cost
    from assets
    group by usage_date, cluster
),

final as (
    select
        alloc_totals.usage_date,
        alloc_totals.cluster,
        coalesce(node_hours.hours_covered, 0) as hours_covered,
        -- a double on every engine (the contract's type): Spark divides an integer by 24.0 as DECIMAL(27,6)
        cast(coalesce(node_hours.hours_covered, 0) as double) / 24.0 as hour_coverage,
        coalesce(node_hours.nodes, 0) as nodes,
        asset_totals.asset_cost,
        asset_totals.node_compute_cost,
        alloc_totals.workload_cost,
        alloc_totals.workload_compute_cost,
        alloc_totals.idle_cost,
        alloc_totals.idle_cpu_cost,
        alloc_totals.idle_ram_cost,
        alloc_totals.idle_gpu_cost,
        alloc_totals.unmounted_cost,
        cast(0 as double) as shared_cost,
        asset_totals.overhead_cost,
        alloc_totals.network_cost,
        -- usage-billed egress is not an asset (never idle) but is part of what the cluster cost
        asset_totals.asset_cost + asset_totals.overhead_cost + alloc_totals.network_cost as total_cost,
        alloc_totals.idle_cost / nullif(asset_totals.node_compute_cost, 0) as idle_percentage,
        alloc_totals.energy_kwh,
        alloc_totals.idle_energy_kwh,
        alloc_totals.co2e_operational_g,
        alloc_totals.co2e_embodied_g,
        alloc_totals.co2e_total_g,
        coalesce(alloc_totals.co2e_estimated_share, 0) as co2e_estimated_share,
        coalesce(alloc_totals.cost_estimated_share, 0) as cost_estimated_share,
        alloc_totals.allocation_rows,
        alloc_totals.idle_clamped
    from alloc_totals
    join asset_totals
        on asset_totals.usage_date = alloc_totals.usage_date and asset_totals.cluster = alloc_totals.cluster
    left join node_hours
        on node_hours.usage_date = alloc_totals.usage_date and node_hours.cluster = alloc_totals.cluster
)

select * from final
