-- grain: one row per (cluster, hour_ts, node)
-- Node power by CPU-utilisation interpolation (METHOD B1, B3, B8), operational CO2e = kWh x intensity x PUE (B4, B5),
-- embodied CO2e per node-hour (B6), optional memory and GPU energy (B9).
with nodes as (
    select * from {{ ref('int_nodes_enriched_hourly') }}
),

usage as (
    select
        cluster,
        hour_ts,
        node,
        sum(coalesce(cpu_usage_core_seconds, 0)) as cpu_core_seconds,
        sum(ram_byte_hours) as ram_byte_hours_allocated,
        sum(gpu_hours) as gpu_hours_allocated
    from {{ ref('int_containers_allocated_hourly') }}
    group by cluster, hour_ts, node
),

instance_profiles as (
    select lower(provider) as provider, lower(instance_key) as instance_key,
           min_watts_per_vcpu, max_watts_per_vcpu, processors, profile_version
    from {{ ref('power_instance_profiles') }}
    where profile_version = 'ccf-app'
),

provider_averages as (
    select lower(provider) as provider, min_watts_per_vcpu, max_watts_per_vcpu
    from {{ ref('power_provider_averages') }}
),

unknown_profile as (
    -- the profile of a provider without averages (1-10 W per vCPU, METHOD B3)
    select min_watts_per_vcpu, max_watts_per_vcpu
    from provider_averages
    where provider = '__unknown__'
),

intensity as (
    select * from {{ ref('stg_carbon__intensity_hours') }}
),

zone_annual as (
    select zone, g_per_kwh, source as annual_source from {{ ref('zone_annual_intensity') }}
),

region_annual as (
    select lower(provider) as provider, lower(region) as region, g_per_kwh from {{ ref('region_annual_intensity') }}
),

pue_provider as (
    select lower(provider) as provider, pue_greenkube, pue_ccf from {{ ref('pue_by_provider') }}
),

pue_region as (
    select lower(provider) as provider, lower(region) as region, pue from {{ ref('pue_by_region') }}
),

boavizta as (
    select * from {{ ref('stg_boavizta__impacts') }}
),

{{ gpu_power_ctes('nodes') }},

profiled as (
    select
        nodes.*,
        coalesce(usage.cpu_core_seconds, 0) as cpu_core_seconds,
        coalesce(usage.ram_byte_hours_allocated, 0) as ram_byte_hours_allocated,
        coalesce(usage.gpu_hours_allocated, 0) as gpu_hours_allocated,
        case
            when instance_profiles.instance_key is not null then instance_profiles.min_watts_per_vcpu
            when provider_averages.provider is not null then provider_averages.min_watts_per_vcpu
            else unknown_profile.min_watts_per_vcpu
        end as min_watts_per_vcpu,
        case
            when instance_profiles.instance_key is not null then instance_profiles.max_watts_per_vcpu
            when provider_averages.provider is not null then provider_averages.max_watts_per_vcpu
            else unknown_profile.max_watts_per_vcpu
        end as max_watts_per_vcpu,
        case
            when instance_profiles.instance_key is not null then 'ccf_microarchitecture'
            when provider_averages.provider is not null then 'provider_average'
            else 'default_fallback'
        end as profile_source,
        instance_profiles.processors,
        coalesce(instance_profiles.profile_version, 'greenkube-2025') as profile_version
    from nodes
    left join usage
        on usage.cluster = nodes.cluster and usage.hour_ts = nodes.hour_ts and usage.node = nodes.node
    left join instance_profiles
        on instance_profiles.provider = nodes.provider
        and instance_profiles.instance_key = {{ instance_profile_key('nodes.provider', 'nodes.instance_type') }}
    left join provider_averages
        on provider_averages.provider = nodes.provider
    cross join unknown_profile
),

powered as (
    select
        *,
        node_run_h * 3600.0 as node_run_s,
        case
            when vcpus <= 0 or node_run_h <= 0 then 0.0
            else least(cpu_core_seconds / (vcpus * node_run_h * 3600.0), 1.0)
        end as cpu_utilisation,
        case
            when vcpus > 0 and node_run_h > 0 then cpu_core_seconds / (vcpus * node_run_h * 3600.0) > 1.0
            else false
        end as is_utilisation_capped
    from profiled
),

energised as (
    select
        powered.*,
        powered.vcpus * (
            powered.min_watts_per_vcpu
            + (powered.max_watts_per_vcpu - powered.min_watts_per_vcpu) * powered.cpu_utilisation
        ) as cpu_power_w,
        powered.vcpus * (
            powered.min_watts_per_vcpu
            + (powered.max_watts_per_vcpu - powered.min_watts_per_vcpu) * powered.cpu_utilisation
        ) * powered.node_run_s as cpu_energy_j,
        {% if var('energy_memory') %}
        -- CCF memory coefficient 0.000392 kWh per GB-hour (decimal GB) of capacity; containers get their allocated share
        powered.ram_capacity_bytes / 1.0e9 * powered.node_run_h * 0.000392 * 3.6e6
        {% else %}cast(0 as double){% endif %} as memory_energy_j,
        {{ gpu_energy_j('powered') }} as gpu_energy_j,
        powered.gpu_count > 0 and {{ sql_bool(var('energy_gpu')) }} and gpu_metrics.gpu_power_w is null
            as is_gpu_power_estimated
    from powered
    left join gpu_metrics
        on gpu_metrics.cluster = powered.cluster and gpu_metrics.hour_ts = powered.hour_ts
        and gpu_metrics.node = powered.node
    -- read only when energy_gpu is on (macro gpu_energy_j)
    left join gpu_profile_match as gpu_profiles  -- noqa: ST11
        on gpu_profiles.cluster = powered.cluster and gpu_profiles.hour_ts = powered.hour_ts
        and gpu_profiles.node = powered.node
),

carbon as (
    select
        energised.*,
        coalesce(
            intensity.carbon_intensity_g_per_kwh,
            zone_annual.g_per_kwh,
            region_annual.g_per_kwh,
            {{ default_intensity() }}
        ) as carbon_intensity_g_per_kwh,
        case
            when intensity.carbon_intensity_g_per_kwh is not null then 'provider_hourly'
            when zone_annual.g_per_kwh is not null then 'zone_annual'
            when region_annual.g_per_kwh is not null then 'region_annual'
            else 'global_default'
        end as intensity_source,
        coalesce(intensity.is_provider_estimated, false) as is_intensity_provider_estimated,
        coalesce(intensity.coverage, 1.0) < 1.0 as is_intensity_partial,
        coalesce(
            energised.cluster_pue,
            {% if var('pue_source') == 'ccf' %}pue_region.pue, pue_provider.pue_ccf,{% else %}pue_provider.pue_greenkube,{% endif %}
            {{ default_pue() }}
        ) as pue,
        case
            when energised.cluster_pue is not null then 'cluster_config'
            {% if var('pue_source') == 'ccf' -%}
            when pue_region.pue is not null then 'ccf_region'
            when pue_provider.pue_ccf is not null then 'ccf_provider'
            {%- else -%}
            when pue_provider.pue_greenkube is not null then 'greenkube_provider'
            {%- endif %}
            else 'default'
        end as pue_source,
        coalesce(boavizta.embedded_kg_per_hour * 1000.0, {{ default_embodied_g_per_hour() }}) as embodied_g_per_hour,
        boavizta.embedded_kg_per_hour is null as is_embodied_fallback
    from energised
    left join intensity
        on intensity.zone = energised.carbon_zone and intensity.hour_ts = energised.hour_ts
    left join zone_annual on zone_annual.zone = energised.carbon_zone
    left join region_annual on region_annual.provider = energised.provider and region_annual.region = energised.region
    left join pue_provider on pue_provider.provider = energised.provider
    -- read only when pue_source = 'ccf' (jinja above)
    left join pue_region  -- noqa: ST11
        on pue_region.provider = energised.provider and pue_region.region = energised.region
    left join boavizta
        on boavizta.provider = energised.provider
        and boavizta.instance_type_key = {{ boavizta_instance_key('energised.provider', 'energised.instance_type') }}
),

final as (
    select
        cluster,
        hour_ts,
        node,
        provider,
        region,
        instance_type,
        carbon_zone,
        carbon_zone_source,
        vcpus,
        ram_capacity_bytes,
        gpu_count,
        node_run_h,
        node_run_s,
        cpu_core_seconds,
        ram_byte_hours_allocated,
        gpu_hours_allocated,
        cpu_utilisation,
        is_utilisation_capped,
        min_watts_per_vcpu,
        max_watts_per_vcpu,
        profile_source,
        profile_version,
        processors,
        cpu_power_w,
        cpu_energy_j,
        memory_energy_j,
        gpu_energy_j,
        (cpu_energy_j + memory_energy_j + gpu_energy_j) / 3.6e6 as energy_kwh,
        carbon_intensity_g_per_kwh,
        intensity_source,
        pue,
        pue_source,
        (cpu_energy_j + memory_energy_j + gpu_energy_j) / 3.6e6 * carbon_intensity_g_per_kwh * pue
            as co2e_operational_g,
        embodied_g_per_hour,
        embodied_g_per_hour * node_run_h as co2e_embodied_g,
        is_embodied_fallback,
        is_vcpu_unknown,
        profile_source = 'default_fallback' as is_unknown_instance_type,
        profile_source = 'provider_average' as is_provider_average_profile,
        intensity_source = 'zone_annual' as is_zone_default_intensity,
        intensity_source = 'region_annual' as is_region_default_intensity,
        intensity_source = 'global_default' as is_global_default_intensity,
        is_intensity_provider_estimated,
        is_intensity_partial,
        pue_source = 'default' as is_default_pue,
        is_gpu_power_estimated,
        cpu_core_seconds = 0 as is_node_idle
    from carbon
)

select * from final
