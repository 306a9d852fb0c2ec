-- grain: one row per (cluster, hour_ts, pod_uid, container) that ran in the hour
-- Node energy to containers by CPU-usage share (METHOD B2); embodied by min(max(request, usage) / vCPUs, 1) (B6).
-- The container-hours of int_containers_allocated_hourly with their energy beside them: a view, so the readers
-- (the workload rows, the node's idle, the recommendations' history) take allocation and energy from one relation
-- in one pass, instead of a second wide hourly table written to the file and joined back on four keys (issue 26).
{{ config(materialized='view' if target.type == 'spark' else 'lean_view') }}

with containers as (
    select * from {{ ref('int_containers_allocated_hourly') }}
),

node_energy as (
    select * from {{ ref('int_nodes_energy_hourly') }}
),

shared as (
    select
        containers.*,
        node_energy.node is not null as has_node_energy,
        node_energy.carbon_zone,
        case
            when node_energy.cpu_core_seconds > 0
                then node_energy.cpu_energy_j * coalesce(containers.cpu_usage_core_seconds, 0)
                     / node_energy.cpu_core_seconds
            else 0.0
        end as cpu_energy_j,
        case
            when node_energy.memory_energy_j > 0
                then containers.ram_byte_hours / 1.0e9 * 0.000392 * 3.6e6
            else 0.0
        end as memory_energy_j,
        case
            when node_energy.gpu_energy_j > 0 and node_energy.gpu_count > 0 and node_energy.node_run_h > 0
                then node_energy.gpu_energy_j
                     * least(containers.gpu_hours / (node_energy.gpu_count * node_energy.node_run_h), 1.0)
            else 0.0
        end as gpu_energy_j,
        coalesce(node_energy.carbon_intensity_g_per_kwh, {{ default_intensity() }})
            as carbon_intensity_g_per_kwh,
        coalesce(node_energy.pue, {{ default_pue() }}) as pue,
        -- share-hours = min(max(request, usage) core-hours / vCPUs, running hours)
        coalesce(node_energy.embodied_g_per_hour, {{ default_embodied_g_per_hour() }})
            * least(
                containers.cpu_core_hours / nullif(coalesce(node_energy.vcpus, containers.node_vcpus), 0),
                containers.run_h
            )
            as co2e_embodied_g,
        coalesce(node_energy.is_unknown_instance_type, true) as is_unknown_instance_type,
        coalesce(node_energy.is_provider_average_profile, false) as is_provider_average_profile,
        coalesce(node_energy.is_zone_default_intensity, false) as is_zone_default_intensity,
        coalesce(node_energy.is_region_default_intensity, false) as is_region_default_intensity,
        coalesce(node_energy.is_global_default_intensity, true) as is_global_default_intensity,
        coalesce(node_energy.is_intensity_provider_estimated, false) as is_intensity_provider_estimated,
        coalesce(node_energy.is_intensity_partial, false) as is_intensity_partial,
        coalesce(node_energy.is_default_pue, true) as is_default_pue,
        coalesce(node_energy.is_embodied_fallback, true) as is_embodied_fallback,
        coalesce(node_energy.is_gpu_power_estimated, false) and containers.gpu_hours > 0 as is_gpu_power_estimated,
        coalesce(node_energy.is_utilisation_capped, false) as is_utilisation_capped
    from containers
    left join node_energy
        on node_energy.cluster = containers.cluster
        and node_energy.hour_ts = containers.hour_ts
        and node_energy.node = containers.node
),

final as (
    select
        *,
        (cpu_energy_j + memory_energy_j + gpu_energy_j) / 3.6e6 as energy_kwh,
        cpu_energy_j / 3.6e6 as energy_cpu_kwh,
        memory_energy_j / 3.6e6 as energy_memory_kwh,
        gpu_energy_j / 3.6e6 as energy_gpu_kwh,
        (cpu_energy_j + memory_energy_j + gpu_energy_j) / 3.6e6 * carbon_intensity_g_per_kwh * pue as co2e_operational_g
    from shared
)

select * from final
