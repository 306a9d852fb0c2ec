-- grain: one row per (usage_date, cluster, namespace, controller_kind, controller, container) whose CPU or memory
-- request would move by more than min_change_ratio.
-- recommended request = max(quantile of the window's hourly peaks x headroom, floor). The saving re-runs the
-- allocation model (allocation = max(request, usage) per hour) with the recommended request on every sampled hour:
-- CPU and memory cost, memory energy (linear in allocated bytes) and the embodied share (linear in allocated
-- core-hours below its run-time cap) change; CPU usage energy does not. Monthly = per observed cluster-hour x 730.
with days as (
    {{ rec_build_days() }}
),

cluster_hours as (
    {{ rec_cluster_hours() }}
),

samples as (
    -- the history's columns used below, named (h.* would repeat usage_date: the build day here is days')
    select
        days.usage_date,
        {%- for col in ['cluster', 'namespace', 'controller_kind', 'controller', 'container', 'hour_ts', 'run_h',
                        'cpu_request_cores', 'ram_request_bytes', 'cpu_usage_max_cores', 'ram_usage_max_bytes',
                        'cpu_usage_core_hours', 'ram_usage_byte_hours', 'cpu_core_hours', 'ram_byte_hours',
                        'cpu_price_usd', 'ram_price_usd', 'energy_memory_kwh', 'carbon_intensity_g_per_kwh', 'pue',
                        'co2e_embodied_g', 'is_usage_missing'] + (rec_input_flags() | map(attribute=0) | list) %}
        h.{{ col }}{{ ',' if not loop.last }}
        {%- endfor %}
    from days
    {{ rec_window_join(ref('int_workload_hours_recorded'), 'h') }}
    where h.controller is not null
),

sized as (
    select
        usage_date, cluster, namespace, controller_kind, controller, container,
        count(distinct cast(hour_ts as date)) as days_of_data,
        count(distinct hour_ts) as hours_covered,
        avg(cpu_request_cores) as current_cpu_request_cores,
        avg(ram_request_bytes) as current_ram_request_bytes,
        {{ quantile_cont('cpu_usage_max_cores', rec_param('cpu_quantile')) }} as cpu_peak_quantile_cores,
        {{ quantile_cont('ram_usage_max_bytes', rec_param('memory_quantile')) }} as ram_peak_quantile_bytes,
        max(cpu_usage_max_cores) as cpu_peak_max_cores,
        -- Kubecost's currentEfficiency: usage over request (total: cost-weighted)
        sum(cpu_usage_core_hours) / nullif(sum(cpu_request_cores * run_h), 0) as cpu_efficiency,
        sum(ram_usage_byte_hours) / nullif(sum(ram_request_bytes * run_h), 0) as ram_efficiency,
        sum(cpu_usage_core_hours * cpu_price_usd + ram_usage_byte_hours / 1073741824.0 * ram_price_usd)
            / nullif(sum(cpu_request_cores * run_h * cpu_price_usd
                         + ram_request_bytes * run_h / 1073741824.0 * ram_price_usd), 0) as total_efficiency,
        {{ rec_reasons_agg([('bool_or(is_usage_missing)', 'usage_missing')]) }} as estimation_reasons
    from samples
    group by usage_date, cluster, namespace, controller_kind, controller, container
),

recommended as (
    select
        *,
        greatest(cpu_peak_quantile_cores * {{ rec_param('cpu_headroom') }}, {{ rec_param('min_cpu_cores') }})
            as recommended_cpu_request_cores,
        greatest(ram_peak_quantile_bytes * {{ rec_param('memory_headroom') }},
                 {{ rec_param('min_memory_mib') }} * 1048576.0) as recommended_ram_request_bytes
    from sized
    where cpu_peak_quantile_cores is not null and ram_peak_quantile_bytes is not null
),

resized_hours as (
    select
        samples.*,
        greatest(recommended.recommended_cpu_request_cores * samples.run_h, samples.cpu_usage_core_hours)
            as new_cpu_core_hours,
        greatest(recommended.recommended_ram_request_bytes * samples.run_h, samples.ram_usage_byte_hours)
            as new_ram_byte_hours
    from samples
    join recommended
        on recommended.usage_date = samples.usage_date and recommended.cluster = samples.cluster
        and recommended.namespace = samples.namespace and recommended.controller_kind = samples.controller_kind
        and recommended.controller = samples.controller and recommended.container = samples.container
),

deltas as (
    select
        usage_date, cluster, namespace, controller_kind, controller, container,
        sum((cpu_core_hours - new_cpu_core_hours) * cpu_price_usd) as saving_cpu_usd,
        sum((ram_byte_hours - new_ram_byte_hours) / 1073741824.0 * ram_price_usd) as saving_ram_usd,
        sum({{ safe_divide('energy_memory_kwh * (ram_byte_hours - new_ram_byte_hours)', 'ram_byte_hours') }})
            as saving_kwh,
        sum({{ safe_divide('energy_memory_kwh * (ram_byte_hours - new_ram_byte_hours)', 'ram_byte_hours') }}
                * carbon_intensity_g_per_kwh * pue
            + {{ safe_divide('co2e_embodied_g * (cpu_core_hours - new_cpu_core_hours)', 'cpu_core_hours') }})
            as saving_co2e_g,
        -- the two terms of saving_co2e_g apart: memory (operational) and CPU (embodied), for the counting of
        -- int_recommendations_counted, which splits a row into the resource it saves on and the one it raises
        sum({{ safe_divide('energy_memory_kwh * (ram_byte_hours - new_ram_byte_hours)', 'ram_byte_hours') }}
                * carbon_intensity_g_per_kwh * pue) as saving_ram_co2e_g,
        sum({{ safe_divide('co2e_embodied_g * (cpu_core_hours - new_cpu_core_hours)', 'cpu_core_hours') }})
            as saving_cpu_co2e_g
    from resized_hours
    group by usage_date, cluster, namespace, controller_kind, controller, container
),

priced as (
select
    recommended.*,
    {{ rec_per_month('coalesce(deltas.saving_cpu_usd, 0)', 'cluster_hours.observed_hours') }}
        as saving_cpu_usd_per_month,
    {{ rec_per_month('coalesce(deltas.saving_ram_usd, 0)', 'cluster_hours.observed_hours') }}
        as saving_ram_usd_per_month,
    {{ rec_per_month('coalesce(deltas.saving_cpu_usd, 0) + coalesce(deltas.saving_ram_usd, 0)',
                     'cluster_hours.observed_hours') }} as saving_usd_per_month,
    {{ rec_per_month('coalesce(deltas.saving_kwh, 0)', 'cluster_hours.observed_hours') }} as saving_kwh_per_month,
    {{ rec_per_month('coalesce(deltas.saving_co2e_g, 0)', 'cluster_hours.observed_hours') }}
        as saving_co2e_g_per_month,
    {{ rec_per_month('coalesce(deltas.saving_ram_co2e_g, 0)', 'cluster_hours.observed_hours') }}
        as saving_ram_co2e_g_per_month,
    {{ rec_per_month('coalesce(deltas.saving_cpu_co2e_g, 0)', 'cluster_hours.observed_hours') }}
        as saving_cpu_co2e_g_per_month
from recommended
join cluster_hours on cluster_hours.usage_date = recommended.usage_date and cluster_hours.cluster = recommended.cluster
left join deltas
    on deltas.usage_date = recommended.usage_date and deltas.cluster = recommended.cluster
    and deltas.namespace = recommended.namespace and deltas.controller_kind = recommended.controller_kind
    and deltas.controller = recommended.controller and deltas.container = recommended.container
where abs(recommended.recommended_cpu_request_cores - recommended.current_cpu_request_cores)
        > {{ rec_param('min_change_ratio') }} * recommended.current_cpu_request_cores
    or abs(recommended.recommended_ram_request_bytes - recommended.current_ram_request_bytes)
        > {{ rec_param('min_change_ratio') }} * recommended.current_ram_request_bytes
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('container_rightsizing', 'namespace', 'controller_kind', 'controller', 'container',
        "namespace || '/' || lower(controller_kind) || '/' || controller || ':' || container",
        "'Set requests to ' || " ~ rec_quantity_text('recommended_cpu_request_cores * 1000') ~ " || 'm CPU and ' || "
        ~ rec_quantity_text('recommended_ram_request_bytes / 1048576') ~ " || 'Mi memory (now ' || coalesce("
        ~ rec_quantity_text('current_cpu_request_cores * 1000') ~ " || 'm', 'none') || ', ' || coalesce("
        ~ rec_quantity_text('current_ram_request_bytes / 1048576') ~ " || 'Mi', 'none') || ')'",
        [('cpu_quantile', rec_param('cpu_quantile')), ('memory_quantile', rec_param('memory_quantile')),
         ('cpu_headroom', rec_param('cpu_headroom')), ('memory_headroom', rec_param('memory_headroom')),
         ('cpu_peak_quantile_cores', 'cpu_peak_quantile_cores'), ('cpu_peak_max_cores', 'cpu_peak_max_cores'),
         ('ram_peak_quantile_bytes', 'ram_peak_quantile_bytes'),
         ('current_cpu_request_cores', 'current_cpu_request_cores'),
         ('current_ram_request_bytes', 'current_ram_request_bytes'),
         ('saving_cpu_usd_per_month', 'saving_cpu_usd_per_month'),
         ('saving_ram_usd_per_month', 'saving_ram_usd_per_month'), ('cpu_efficiency', 'cpu_efficiency'),
         ('ram_efficiency', 'ram_efficiency'), ('total_efficiency', 'total_efficiency')]) }},
    {{ rec_closing_columns(changes_requests=true) }},
    -- per resource, for the counting (int_recommendations_counted): CPU saves cost and embodied CO2e, memory saves
    -- cost, energy and operational CO2e (saving_kwh_per_month is all memory)
    saving_cpu_usd_per_month,
    saving_ram_usd_per_month,
    saving_cpu_co2e_g_per_month,
    saving_ram_co2e_g_per_month
from priced
