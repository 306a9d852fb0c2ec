-- grain: one row per (cluster, hour_ts, node), kept across builds (incremental by day)
-- Node pool (instance type x availability zone), allocatable capacity, requests placed on the node, cost, the
-- energy model's fixed term (idle watts x vCPUs) and embodied rate, and the hour's carbon intensity of its zone;
-- provider, region and whether it is a spot node (int_workloads_spot_priced prices its on-demand hours at spot).
-- Incremental by day (dbt_project.yml); the post-hook drops days older than history_days.
{{ config(post_hook="{{ rec_history_prune() }}") }}

with enriched as (
    select * from {{ ref('int_nodes_enriched_hourly') }}
),

costed as (
    select cluster, hour_ts, node, node_cpu_cost + node_ram_cost + node_gpu_cost as node_cost
    from {{ ref('int_nodes_costed_hourly') }}
),

priced as (
    select cluster, hour_ts, node, is_default_price, is_instance_price_missing
    from {{ ref('int_nodes_priced_hourly') }}
),

energy as (
    select * from {{ ref('int_nodes_energy_hourly') }}
),

requests as (
    select cluster, hour_ts, node,
           sum(coalesce(cpu_request_cores, 0) * run_h) as cpu_request_core_hours,
           sum(coalesce(ram_request_bytes, 0) * run_h) as ram_request_byte_hours
    from {{ ref('int_containers_allocated_hourly') }}
    group by cluster, hour_ts, node
)

select
    cast(enriched.hour_ts as date) as usage_date,
    enriched.cluster,
    enriched.hour_ts,
    enriched.node,
    enriched.instance_type,
    enriched.availability_zone,
    energy.carbon_zone,
    enriched.provider,
    enriched.region,
    coalesce(enriched.is_spot, false) as is_spot,
    enriched.node_run_h,
    coalesce(enriched.cpu_allocatable_cores, enriched.vcpus) as cpu_allocatable_cores,
    coalesce(enriched.ram_allocatable_bytes, enriched.ram_capacity_bytes) as ram_allocatable_bytes,
    coalesce(requests.cpu_request_core_hours, 0) as cpu_request_core_hours,
    coalesce(requests.ram_request_byte_hours, 0) as ram_request_byte_hours,
    costed.node_cost,
    energy.vcpus * energy.min_watts_per_vcpu * energy.node_run_h / 1000.0 as fixed_cpu_kwh,
    energy.energy_kwh,
    energy.carbon_intensity_g_per_kwh,
    energy.pue,
    energy.co2e_operational_g,
    energy.co2e_embodied_g,
    {%- for col, code in rec_input_flags() if col not in ('is_default_price', 'is_instance_price_missing') %}
    energy.{{ col }},
    {%- endfor %}
    coalesce(priced.is_default_price, true) as is_default_price,
    coalesce(priced.is_instance_price_missing, false) as is_instance_price_missing
from enriched
join energy on energy.cluster = enriched.cluster and energy.hour_ts = enriched.hour_ts and energy.node = enriched.node
left join costed
    on costed.cluster = enriched.cluster and costed.hour_ts = enriched.hour_ts and costed.node = enriched.node
left join priced
    on priced.cluster = enriched.cluster and priced.hour_ts = enriched.hour_ts and priced.node = enriched.node
left join requests
    on requests.cluster = enriched.cluster and requests.hour_ts = enriched.hour_ts and requests.node = enriched.node
