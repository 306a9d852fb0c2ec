-- grain: one row per (usage_date, cluster, node, namespace, pod_uid, container), plus one '__idle__' row per
-- (usage_date, cluster, node) and '__unmounted__' rows per (usage_date, cluster, namespace).
-- Kubecost allocation fields in snake case, with energy and carbon beside cost; before any sharing.
-- The row kinds are computed in models/intermediate/allocation; the columns are macros/allocation_columns.sql.
-- Here: the columns every kind derives the same way (efficiencies, totals, energy-weighted intensity, cost_ratio).
{%- set energy = 'energy_cpu_kwh + energy_memory_kwh + energy_gpu_kwh + energy_storage_kwh' %}
{%- set derived = {
    'window_start': 'cast(usage_date as timestamp)',
    'window_end': dbt.dateadd('day', 1, 'cast(usage_date as timestamp)'),
    'cpu_efficiency': efficiency('cpu_core_usage_average', 'cpu_core_request_average', 'cpu_cost'),
    'gpu_efficiency': "case
            when coalesce(gpu_request_average, 0) > 0 and coalesce(gpu_usage_average, 0) > 0
                then gpu_usage_average / gpu_request_average
            when coalesce(gpu_usage_average, 0) = 0 or gpu_cost = 0 then 0.0
            else 1.0
        end",
    'ram_efficiency': efficiency('ram_byte_usage_average', 'ram_byte_request_average', 'ram_cost'),
    'network_cost': 'network_cross_zone_cost + network_cross_region_cost + network_internet_cost',
    'total_cost': 'cpu_cost + gpu_cost + ram_cost + pv_cost
            + network_cross_zone_cost + network_cross_region_cost + network_internet_cost
            + load_balancer_cost',
    'total_efficiency': "case
            when allocation_kind <> 'workload' or cpu_cost + ram_cost = 0 then 0.0
            else (" ~ efficiency('cpu_core_usage_average', 'cpu_core_request_average', 'cpu_cost') ~ " * cpu_cost
                  + " ~ efficiency('ram_byte_usage_average', 'ram_byte_request_average', 'ram_cost') ~ " * ram_cost)
                 / (cpu_cost + ram_cost)
        end",
    'energy_kwh': energy,
    'co2e_total_g': 'co2e_operational_g + co2e_embodied_g',
    'carbon_intensity_g_per_kwh': 'coalesce(intensity_weight / nullif(' ~ energy ~ ', 0), intensity_plain_avg)',
    'pue': 'coalesce(pue_weight / nullif(' ~ energy ~ ', 0), pue_plain_avg)',
    'is_estimated': "reasons_with_coverage <> ''",
} %}
{#- a cluster-day with hours missing (no node samples, METHOD A18.1): every row of it says so -#}
{%- set overrides = {'estimation_reasons': 'reasons_with_coverage'} %}
{{ config(unique_key=['usage_date', 'cluster']) }}

with unioned as (
    select * from {{ ref('int_allocations_workload_daily') }}
    union all
    select * from {{ ref('int_allocations_idle_daily') }}
    union all
    select * from {{ ref('int_allocations_unmounted_daily') }}
),

flagged as (
    select
        unioned.*,
        case
            when coverage.hours_covered < 24
                then concat_ws(',', nullif(unioned.estimation_reasons, ''), 'partial_hour_coverage')
            else unioned.estimation_reasons
        end as reasons_with_coverage
    from unioned
    left join {{ ref('int_nodes_counted_daily') }} as coverage
        on coverage.usage_date = unioned.usage_date and coverage.cluster = unioned.cluster
),

final as (
    select
    {%- for c in allocation_columns() if c.group not in ('internal', 'ratio') %}
        {% if c.name in overrides -%}
        {{ overrides[c.name] }} as {{ c.name }}
        {%- elif c.get('derived') -%}
        {{ derived.get(c.name) or exceptions.raise_compiler_error('fct_allocation_daily: no formula for ' ~ c.name) }}
            as {{ c.name }}
        {%- else -%}
        {{ c.name }}
        {%- endif %}{{ ',' if not loop.last }}
    {%- endfor %}
    from flagged
),

with_ratio as (
    select
        final.*,
        final.total_cost
        / nullif(sum(final.total_cost) over (partition by final.usage_date, final.cluster), 0) as cost_ratio
    from final
)

select {{ allocation_column_names() | join(', ') }}
from with_ratio
