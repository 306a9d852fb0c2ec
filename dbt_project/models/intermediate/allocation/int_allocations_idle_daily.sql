-- grain: one '__idle__' row per (usage_date, cluster, node): the node's idle CPU/RAM/GPU cost and its unattributed
-- energy and CO2e (METHOD A10), as rows of marts.fct_allocation_daily (columns: macros/allocation_columns.sql).
{%- set idle_flags = reason_flags([
    'default_price', 'default_pue', 'embodied_fallback', 'global_default_intensity', 'idle_clamped',
    'no_instance_price', 'node_idle_energy', 'partial_intensity_coverage', 'provider_average_profile',
    'provider_estimated_intensity', 'region_default_intensity', 'unknown_instance_type', 'zone_default_intensity'
], aggregate=true) %}

with idle_daily as (
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        node,
        min(hour_ts) as start_ts,
        max({{ add_seconds('hour_ts', 'node_run_h * 3600') }}) as end_ts,
        sum(node_run_h) * 60.0 as minutes,
        sum(idle_cpu_core_hours) as cpu_core_hours,
        sum(idle_cpu_cost) as cpu_cost,
        sum(idle_gpu_hours) as gpu_hours,
        sum(idle_gpu_cost) as gpu_cost,
        sum(idle_ram_byte_hours) as ram_byte_hours,
        sum(idle_ram_cost) as ram_cost,
        sum(greatest(idle_cpu_energy_j, 0)) / 3.6e6 as energy_cpu_kwh,
        sum(greatest(idle_memory_energy_j, 0)) / 3.6e6 as energy_memory_kwh,
        sum(greatest(idle_gpu_energy_j, 0)) / 3.6e6 as energy_gpu_kwh,
        sum(idle_co2e_operational_g) as co2e_operational_g,
        sum(idle_co2e_embodied_g) as co2e_embodied_g,
        sum(idle_energy_j / 3.6e6 * carbon_intensity_g_per_kwh) as intensity_weight,
        sum(idle_energy_j / 3.6e6 * pue) as pue_weight,
        avg(carbon_intensity_g_per_kwh) as intensity_plain_avg,
        avg(pue) as pue_plain_avg,
        bool_or(idle_clamped) as idle_clamped,
        {{ reasons_string(idle_flags) }} as estimation_reasons
    from {{ ref('int_nodes_costed_hourly') }}
    group by cast(hour_ts as date), cluster, node
)

select
    {{ allocation_row({
        'usage_date': 'i.usage_date', 'cluster': 'i.cluster', 'node': 'i.node',
        'pod': "'__idle__'", 'pod_uid': "'__idle__'", 'container': "'__idle__'",
        'allocation_kind': "'idle'",
        'allocation_name': "i.cluster || '/' || i.node || '/__idle__'",
        'provider_id': 'node_meta.provider_id',
        'node_labels': "coalesce(node_meta.node_labels, '{}')",
        'start_ts': 'i.start_ts', 'end_ts': 'i.end_ts', 'minutes': 'i.minutes',
        'cpu_core_hours': 'i.cpu_core_hours', 'cpu_cost': 'i.cpu_cost',
        'gpu_hours': 'i.gpu_hours', 'gpu_cost': 'i.gpu_cost',
        'ram_byte_hours': 'i.ram_byte_hours', 'ram_cost': 'i.ram_cost',
        'energy_cpu_kwh': 'i.energy_cpu_kwh', 'energy_memory_kwh': 'i.energy_memory_kwh',
        'energy_gpu_kwh': 'i.energy_gpu_kwh',
        'co2e_operational_g': 'i.co2e_operational_g', 'co2e_embodied_g': 'i.co2e_embodied_g',
        'intensity_weight': 'i.intensity_weight', 'pue_weight': 'i.pue_weight',
        'intensity_plain_avg': 'i.intensity_plain_avg', 'pue_plain_avg': 'i.pue_plain_avg',
        'idle_clamped': 'i.idle_clamped', 'estimation_reasons': 'i.estimation_reasons',
        'cpu_cost_adjustment': 'i.cpu_cost * coalesce(reconciled.cpu_adjustment_rate, 0)
            + coalesce(reconciled.cpu_adjustment_unspread, 0)',
        'ram_cost_adjustment': 'i.ram_cost * coalesce(reconciled.ram_adjustment_rate, 0)
            + coalesce(reconciled.ram_adjustment_unspread, 0)',
        'gpu_cost_adjustment': 'i.gpu_cost * coalesce(reconciled.gpu_adjustment_rate, 0)
            + coalesce(reconciled.gpu_adjustment_unspread, 0)',
        'reconciliation_status': "coalesce(reconciled.reconciliation_status, 'no_resource_id')",
    }) }}
from idle_daily as i
left join {{ ref('int_nodes_metadata_daily') }} as node_meta
    on node_meta.cluster = i.cluster and node_meta.usage_date = i.usage_date and node_meta.node = i.node
-- the node's bill adjustment (issue 28): the idle row takes the idle share, and what no row's cost can carry
left join {{ ref('int_nodes_reconciled_daily') }} as reconciled
    on reconciled.cluster = i.cluster and reconciled.usage_date = i.usage_date and reconciled.node = i.node
