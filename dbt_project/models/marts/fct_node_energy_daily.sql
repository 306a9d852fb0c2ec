-- grain: one row per (usage_date, cluster, node): the node's power profile, zone, intensity, PUE, energy and CO2e
{#- unknown_vcpu: the node's enrichment flag, joined below; the codes in the order this mart has always written -#}
{%- set node_flags = reason_flags([
    'default_pue', 'embodied_fallback', 'global_default_intensity', 'gpu_power_estimated', 'node_idle_energy',
    'partial_intensity_coverage', 'provider_average_profile', 'provider_estimated_intensity',
    'region_default_intensity', 'unknown_vcpu', 'unknown_instance_type', 'utilisation_capped',
    'zone_default_intensity'
], aggregate=true, columns={'unknown_vcpu': 'is_vcpu_unknown_node'}) %}
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
