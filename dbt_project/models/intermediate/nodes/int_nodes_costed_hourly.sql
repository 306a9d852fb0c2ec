-- grain: one row per (cluster, hour_ts, node)
-- Node asset cost (capacity x price x running hours, METHOD A6) and what its workloads did not use:
-- idle cost per resource, clamped at 0 with the overshoot flagged (A10), and unattributed energy/CO2e (B2, B6).
with prices as (
    select * from {{ ref('int_nodes_priced_hourly') }}
),

node_energy as (
    select * from {{ ref('int_nodes_energy_hourly') }}
),

allocated as (
    -- what the node's containers took, in one pass over their hours: allocation and energy (a view over
    -- int_containers_allocated_hourly with each container's energy share beside it)
    select
        cluster,
        hour_ts,
        node,
        sum(cpu_cost) as cpu_cost,
        sum(ram_cost) as ram_cost,
        sum(gpu_cost) as gpu_cost,
        sum(cpu_core_hours) as cpu_core_hours,
        sum(ram_byte_hours) as ram_byte_hours,
        sum(gpu_hours) as gpu_hours,
        sum(cpu_energy_j) as cpu_energy_j,
        sum(memory_energy_j) as memory_energy_j,
        sum(gpu_energy_j) as gpu_energy_j,
        sum(co2e_embodied_g) as co2e_embodied_g
    from {{ ref('int_containers_energy_hourly') }}
    group by cluster, hour_ts, node
),

costed as (
    select
        prices.cluster,
        prices.hour_ts,
        prices.node,
        prices.provider,
        prices.region,
        prices.instance_type,
        prices.is_spot,
        prices.price_source,
        prices.node_price_usd,
        prices.cpu_price_usd,
        prices.ram_price_usd,
        prices.gpu_price_usd,
        prices.vcpus,
        prices.ram_gib,
        prices.gpu_count,
        prices.node_run_h,
        prices.vcpus * prices.cpu_price_usd * prices.node_run_h as node_cpu_cost,
        prices.ram_gib * prices.ram_price_usd * prices.node_run_h as node_ram_cost,
        prices.gpu_count * prices.gpu_price_usd * prices.node_run_h as node_gpu_cost,
        coalesce(allocated.cpu_cost, 0) as allocated_cpu_cost,
        coalesce(allocated.ram_cost, 0) as allocated_ram_cost,
        coalesce(allocated.gpu_cost, 0) as allocated_gpu_cost,
        greatest(prices.vcpus * prices.node_run_h - coalesce(allocated.cpu_core_hours, 0), 0) as idle_cpu_core_hours,
        greatest(prices.ram_gib * 1073741824.0 * prices.node_run_h - coalesce(allocated.ram_byte_hours, 0), 0)
            as idle_ram_byte_hours,
        greatest(prices.gpu_count * prices.node_run_h - coalesce(allocated.gpu_hours, 0), 0) as idle_gpu_hours,
        prices.is_default_price,
        prices.is_instance_price_missing,
        prices.is_spot_price_missing,
        prices.is_vcpu_unknown,
        node_energy.energy_kwh as node_energy_kwh,
        node_energy.co2e_operational_g as node_co2e_operational_g,
        node_energy.co2e_embodied_g as node_co2e_embodied_g,
        node_energy.cpu_energy_j - coalesce(allocated.cpu_energy_j, 0) as idle_cpu_energy_j,
        node_energy.memory_energy_j - coalesce(allocated.memory_energy_j, 0) as idle_memory_energy_j,
        node_energy.gpu_energy_j - coalesce(allocated.gpu_energy_j, 0) as idle_gpu_energy_j,
        node_energy.carbon_intensity_g_per_kwh,
        node_energy.pue,
        node_energy.embodied_g_per_hour,
        coalesce(allocated.co2e_embodied_g, 0) as allocated_co2e_embodied_g,
        node_energy.is_node_idle,
        node_energy.is_unknown_instance_type,
        node_energy.is_provider_average_profile,
        node_energy.is_zone_default_intensity,
        node_energy.is_region_default_intensity,
        node_energy.is_global_default_intensity,
        node_energy.is_intensity_provider_estimated,
        node_energy.is_intensity_partial,
        node_energy.is_default_pue,
        node_energy.is_embodied_fallback
    from prices
    left join allocated
        on allocated.cluster = prices.cluster and allocated.hour_ts = prices.hour_ts and allocated.node = prices.node
    left join node_energy
        on node_energy.cluster = prices.cluster and node_energy.hour_ts = prices.hour_ts
        and node_energy.node = prices.node
),

final as (
    select
        *,
        greatest(node_cpu_cost - allocated_cpu_cost, 0) as idle_cpu_cost,
        greatest(node_ram_cost - allocated_ram_cost, 0) as idle_ram_cost,
        greatest(node_gpu_cost - allocated_gpu_cost, 0) as idle_gpu_cost,
        -- over-allocation beyond 1e-9 relative is clamped, flagged and reported (never subtracted)
        greatest(allocated_cpu_cost - node_cpu_cost, 0)
            + greatest(allocated_ram_cost - node_ram_cost, 0)
            + greatest(allocated_gpu_cost - node_gpu_cost, 0) as idle_overshoot_cost,
        (allocated_cpu_cost - node_cpu_cost > 1e-9 * greatest(node_cpu_cost, 1e-9))
            or (allocated_ram_cost - node_ram_cost > 1e-9 * greatest(node_ram_cost, 1e-9))
            or (allocated_gpu_cost - node_gpu_cost > 1e-9 * greatest(node_gpu_cost, 1e-9)) as idle_clamped,
        greatest(idle_cpu_energy_j, 0) + greatest(idle_memory_energy_j, 0) + greatest(idle_gpu_energy_j, 0)
            as idle_energy_j,
        (greatest(idle_cpu_energy_j, 0) + greatest(idle_memory_energy_j, 0) + greatest(idle_gpu_energy_j, 0))
            / 3.6e6 * carbon_intensity_g_per_kwh * pue as idle_co2e_operational_g,
        greatest(node_co2e_embodied_g - allocated_co2e_embodied_g, 0) as idle_co2e_embodied_g
    from costed
)

select * from final
