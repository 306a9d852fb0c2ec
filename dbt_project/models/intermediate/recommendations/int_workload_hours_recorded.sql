-- grain: one row per (cluster, hour_ts, pod_uid, container) that ran, kept across builds (incremental by day)
-- The hourly history the recommendations look back over: peaks, requests, allocation, prices, energy and carbon
-- per container instance, with its controller, carbon zone and whether its pod mounted a claim or is pinned
-- to its zone, region or node by its placement (Kubernetes API). Network bytes are
-- the pod's, split evenly over its containers as in fct_allocation_daily.
-- Incremental by day (dbt_project.yml); the post-hook drops days older than history_days.
{{ config(post_hook="{{ rec_history_prune() }}") }}

with allocated as (
    -- the container-hours with their allocation and energy, read once (a view over int_containers_allocated_hourly)
    select * from {{ ref('int_containers_energy_hourly') }}
),

pods as (
    select cluster, hour_ts, pod_uid, controller_kind, controller_name
    from {{ ref('stg_metrics__pod_hours') }}
),

pod_container_counts as (
    {{ pod_container_counts() }}
),

network as (
    select cluster, hour_ts, pod_uid,
           coalesce(network_transfer_bytes, 0) + coalesce(network_receive_bytes, 0) as network_bytes
    from {{ ref('int_pods_network_hourly') }}
),

mounts as (
    -- pods with a claim mounted in the hour: a zonal volume pins them (no zone shift)
    select distinct cluster, hour_ts, pod_uid from {{ ref('stg_metrics__pod_volume_hours') }}
),

pinned as (
    -- pods whose node selector or required node affinity fixes their zone, region or node (Kubernetes API)
    select cluster, uid as pod_uid
    from {{ ref('stg_kubernetes__objects') }}
    where kind = 'Pod' and {{ rec_pins_placement(json_text('spec', 'pinnedNodeLabels')) }}
)

select
    cast(allocated.hour_ts as date) as usage_date,
    allocated.cluster,
    allocated.hour_ts,
    allocated.namespace,
    pods.controller_kind,
    pods.controller_name as controller,
    allocated.pod_uid,
    allocated.container,
    allocated.node,
    allocated.carbon_zone,  -- the node-hour's, joined in the view
    allocated.run_h,
    allocated.cpu_request_cores,
    allocated.ram_request_bytes,
    allocated.cpu_usage_max_cores,
    allocated.ram_usage_max_bytes,
    allocated.cpu_usage_core_hours,
    allocated.ram_usage_byte_hours,
    allocated.cpu_core_hours,
    allocated.ram_byte_hours,
    allocated.cpu_price_usd,
    allocated.ram_price_usd,
    allocated.cpu_cost,
    allocated.ram_cost,
    allocated.gpu_cost,
    {{ per_container('coalesce(network.network_bytes, 0)') }} as network_bytes,
    allocated.energy_kwh,
    allocated.energy_memory_kwh,
    allocated.carbon_intensity_g_per_kwh,
    allocated.pue,
    allocated.co2e_operational_g,
    allocated.co2e_embodied_g,
    allocated.is_default_price,
    allocated.is_instance_price_missing,
    allocated.is_usage_missing,
    mounts.pod_uid is not null as mounts_volume,
    pinned.pod_uid is not null as pins_placement,
    {%- for col, code in rec_input_flags() if col not in ('is_default_price', 'is_instance_price_missing') %}
    allocated.{{ col }}{% if not loop.last %},{% endif %}
    {%- endfor %}
from allocated
join pod_container_counts
    on pod_container_counts.cluster = allocated.cluster and pod_container_counts.hour_ts = allocated.hour_ts
    and pod_container_counts.pod_uid = allocated.pod_uid
left join pods
    on pods.cluster = allocated.cluster and pods.hour_ts = allocated.hour_ts and pods.pod_uid = allocated.pod_uid
left join network
    on network.cluster = allocated.cluster and network.hour_ts = allocated.hour_ts
    and network.pod_uid = allocated.pod_uid
left join mounts
    on mounts.cluster = allocated.cluster and mounts.hour_ts = allocated.hour_ts and mounts.pod_uid = allocated.pod_uid
left join pinned
    on pinned.cluster = allocated.cluster and pinned.pod_uid = allocated.pod_uid
