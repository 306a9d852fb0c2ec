{#- the Dagster asset check's asset (the test refs several models) #}
{{ config(meta={'dagster': {'ref': {'name': 'fct_allocation_daily'}}}) }}
-- No negative cost, energy or CO2e in the marts (idle is clamped at 0, METHOD A10; unattributed energy and
-- embodied CO2e are clamped at 0, B2/B6). Returns one row per offending (mart, column, row key).
{%- set checks = [
    ('fct_allocation_daily', "allocation_name", [
        'cpu_cost', 'cpu_cost_idle', 'gpu_cost', 'gpu_cost_idle', 'ram_cost', 'ram_cost_idle', 'pv_cost',
        'network_cross_zone_cost', 'network_cross_region_cost', 'network_internet_cost', 'network_cost',
        'load_balancer_cost', 'shared_cost', 'external_cost', 'total_cost',
        'energy_kwh', 'energy_cpu_kwh', 'energy_memory_kwh', 'energy_gpu_kwh', 'energy_storage_kwh',
        'co2e_operational_g', 'co2e_embodied_g', 'co2e_total_g']),
    ('fct_allocation_shared_daily', "allocation_name", [
        'cpu_cost', 'cpu_cost_idle', 'gpu_cost', 'gpu_cost_idle', 'ram_cost', 'ram_cost_idle', 'pv_cost',
        'network_cost', 'load_balancer_cost', 'shared_cost', 'external_cost', 'total_cost',
        'energy_kwh', 'co2e_operational_g', 'co2e_embodied_g', 'co2e_total_g']),
    ('fct_asset_daily', "asset_kind || ':' || asset_name", [
        'cpu_cost', 'ram_cost', 'gpu_cost', 'pv_cost', 'load_balancer_cost', 'overhead_cost', 'total_cost']),
    ('fct_node_energy_daily', "node", [
        'energy_kwh', 'energy_cpu_kwh', 'energy_memory_kwh', 'energy_gpu_kwh',
        'co2e_operational_g', 'co2e_embodied_g', 'co2e_total_g']),
    ('fct_cluster_daily', "cluster", [
        'asset_cost', 'node_compute_cost', 'workload_cost', 'workload_compute_cost', 'idle_cost', 'idle_cpu_cost',
        'idle_ram_cost', 'idle_gpu_cost', 'unmounted_cost', 'shared_cost', 'overhead_cost', 'total_cost',
        'energy_kwh', 'idle_energy_kwh', 'co2e_operational_g', 'co2e_embodied_g', 'co2e_total_g']),
] %}
{%- for model_name, key_expr, columns in checks %}
{%- set outer_loop = loop %}
{%- for col in columns %}
select '{{ model_name }}' as mart, '{{ col }}' as column_name, usage_date, cluster,
       cast({{ key_expr }} as string) as row_key, cast({{ col }} as double) as amount
from {{ ref(model_name) }}
where {{ col }} < 0
{% if not (outer_loop.last and loop.last) %}union all{% endif %}
{%- endfor %}
{%- endfor %}
