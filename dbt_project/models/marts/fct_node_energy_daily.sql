-- grain: one row per (usage_date, cluster, node): the node's power profile, zone, intensity, PUE, energy and CO2e
{%- set node_flags = [
    ('bool_or(is_default_pue)', 'default_pue'),
    ('bool_or(is_embodied_fallback)', 'embodied_fallback'),
    ('bool_or(is_global_default_intensity)', 'global_default_intensity'),
    ('bool_or(is_gpu_power_estimated)', 'gpu_power_estimated'),
    ('bool_or(is_node_idle and node_run_h > 0)', 'node_idle_energy'),
    ('bool_or(is_intensity_partial)', 'partial_intensity_coverage'),
    ('bool_or(is_provider_average_profile)', 'provider_average_profile'),
    ('bool_or(is_intensity_provider_estimated)', 'provider_estimated_intensity'),
    ('bool_or(is_region_default_intensity)', 'region_default_intensity'),
    ('bool_or(is_vcpu_unknown_node)', 'unknown_vcpu'),
    ('bool_or(is_unknown_instance_type)', 'unknown_instance_type'),
    ('bool_or(is_utilisation_capped)', 'utilisation_capped'),
    ('bool_or(is_zone_default_intensity)', 'zone_default_intensity'),
] %}
with node_energy as (
    select * from {{ ref('int_nodes_energy_hourly') }}
),

nodes as (
    select cluster, hour_ts, node, is_vcpu_unknown from {{ ref('int_nodes_enriched_hourly') }}
),

joined as (
    select node_energy.*, nodes.is_vcpu_unknown as is_vcpu_unknown_node
    from node_energy
    join nodes on nodes.cluster = node_energy.cluster and nodes.hour_ts = node_energy.hour_ts
        and nodes.node = node_energy.node
),

daily as (
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        node,
        max(instance_type) as instance_type,
        max(provider) as provider,
        max(region) as region,
        max(carbon_zone) as carbon_zone,
        max(carbon_zone_source) as carbon_zone_source,
        max(vcpus) as vcpus,
        max(min_watts_per_vcpu) as min_watts_per_vcpu,
        max(max_watts_per_vcpu) as max_watts_per_vcpu,
        max(profile_source) as profile_source,
        max(profile_version) as profile_version,
        max(processors) as processors,
        sum(cpu_core_seconds) / nullif(sum(vcpus * node_run_s), 0) as average_utilisation,
        sum(node_run_h) as hours,
        count(*) as hours_with_samples,
        sum(energy_kwh) as energy_kwh,
        sum(cpu_energy_j) / 3.6e6 as energy_cpu_kwh,
        sum(memory_energy_j) / 3.6e6 as energy_memory_kwh,
        sum(gpu_energy_j) / 3.6e6 as energy_gpu_kwh,
        sum(energy_kwh * carbon_intensity_g_per_kwh) / nullif(sum(energy_kwh), 0) as carbon_intensity_weighted,
        avg(carbon_intensity_g_per_kwh) as carbon_intensity_avg,
        min(intensity_source) as intensity_source_min,
        max(intensity_source) as intensity_source_max,
        max(pue) as pue,
        max(pue_source) as pue_source,
        sum(co2e_operational_g) as co2e_operational_g,
        sum(co2e_embodied_g) as co2e_embodied_g,
        max(embodied_g_per_hour) as embodied_g_per_hour,
        {{ reasons_string(node_flags) }}
            as estimation_reasons
    from joined
    group by cast(hour_ts as date), cluster, node
),

final as (
    select
        usage_date,
        cluster,
        node,
        instance_type,
        provider,
        region,
        carbon_zone,
        carbon_zone_source,
        vcpus,
        min_watts_per_vcpu,
        max_watts_per_vcpu,
        profile_source,
        profile_version,
        processors,
        coalesce(average_utilisation, 0) as average_utilisation,
        hours,
        hours_with_samples,
        energy_kwh,
        energy_cpu_kwh,
        energy_memory_kwh,
        energy_gpu_kwh,
        coalesce(carbon_intensity_weighted, carbon_intensity_avg) as carbon_intensity_g_per_kwh,
        case when intensity_source_min = intensity_source_max then intensity_source_min else 'mixed' end
            as intensity_source,
        pue,
        pue_source,
        co2e_operational_g,
        co2e_embodied_g,
        co2e_operational_g + co2e_embodied_g as co2e_total_g,
        embodied_g_per_hour,
        estimation_reasons <> '' as is_estimated,
        estimation_reasons
    from daily
)

select * from final
