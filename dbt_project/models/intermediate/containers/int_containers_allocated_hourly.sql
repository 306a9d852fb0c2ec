-- grain: one row per (cluster, hour_ts, pod_uid, container) that ran in the hour
-- Allocation = max(request, usage) per hour (METHOD A2); only running minutes are charged (A3).
with containers as (
    select * from {{ ref('stg_metrics__container_hours') }}
    where run_h > 0
),

pods as (
    select cluster, hour_ts, pod_uid, node from {{ ref('stg_metrics__pod_hours') }}
),

node_prices as (
    select * from {{ ref('int_nodes_priced_hourly') }}
),

default_prices as (
    select * from {{ ref('int_resource_prices_resolved') }}
    where provider = 'default'
),

placed as (
    select
        containers.*,
        coalesce(containers.node, pods.node) as node_name
    from containers
    left join pods
        on pods.cluster = containers.cluster
        and pods.hour_ts = containers.hour_ts
        and pods.pod_uid = containers.pod_uid
),

allocated as (
    select
        placed.cluster,
        placed.hour_ts,
        placed.node_name as node,
        placed.namespace,
        placed.pod,
        placed.pod_uid,
        placed.container,
        placed.run_h,
        placed.run_start_s,
        placed.run_end_s,
        placed.cpu_request_cores,
        placed.ram_request_bytes,
        placed.gpu_request,
        placed.cpu_usage_core_seconds,
        placed.cpu_usage_max_cores,
        placed.ram_usage_avg_bytes,
        placed.ram_usage_max_bytes,
        placed.gpu_usage_avg,
        greatest(coalesce(placed.cpu_request_cores, 0) * placed.run_h,
                 coalesce(placed.cpu_usage_core_seconds, 0) / 3600.0) as cpu_core_hours,
        greatest(coalesce(placed.ram_request_bytes, 0), coalesce(placed.ram_usage_avg_bytes, 0))
            * placed.run_h as ram_byte_hours,
        coalesce(placed.gpu_request, 0) * placed.run_h as gpu_hours,
        coalesce(placed.cpu_request_cores, 0) * placed.run_h as cpu_request_core_hours,
        coalesce(placed.cpu_usage_core_seconds, 0) / 3600.0 as cpu_usage_core_hours,
        coalesce(placed.ram_request_bytes, 0) * placed.run_h as ram_request_byte_hours,
        coalesce(placed.ram_usage_avg_bytes, 0) * placed.run_h as ram_usage_byte_hours,
        coalesce(placed.gpu_usage_avg, 0) * placed.run_h as gpu_usage_hours,
        placed.cpu_usage_core_seconds is null or placed.ram_usage_avg_bytes is null as is_usage_missing,
        node_prices.node is null as is_node_missing,
        coalesce(node_prices.cpu_price_usd, default_prices.cpu_usd) as cpu_price_usd,
        coalesce(node_prices.ram_price_usd, default_prices.ram_usd) as ram_price_usd,
        coalesce(node_prices.gpu_price_usd, default_prices.gpu_usd) as gpu_price_usd,
        coalesce(node_prices.is_default_price, true) as is_default_price,
        coalesce(node_prices.is_instance_price_missing, false) as is_instance_price_missing,
        coalesce(node_prices.vcpus, 1.0) as node_vcpus,
        coalesce(placed.cpu_usage_core_seconds, 0) / 3600.0
            > coalesce(node_prices.vcpus, 1.0e9) * placed.run_h * 1.000001 as is_usage_above_capacity
    from placed
    left join node_prices
        on node_prices.cluster = placed.cluster
        and node_prices.hour_ts = placed.hour_ts
        and node_prices.node = placed.node_name
    cross join default_prices
),

final as (
    select
        *,
        cpu_core_hours * cpu_price_usd as cpu_cost,
        ram_byte_hours / 1073741824.0 * ram_price_usd as ram_cost,
        gpu_hours * gpu_price_usd as gpu_cost
    from allocated
)

select * from final
