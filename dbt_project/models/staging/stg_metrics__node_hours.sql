-- grain: one row per (cluster, hour_ts, node)
with source as (
    select * from {{ source('metrics', 'node_hours') }}
    where {{ window_filter() }}
),

renamed as (
    select
        cluster,
        hour_ts,
        node,
        provider_id,
        instance_type,
        region,
        zone,
        coalesce(labels, '{}') as labels,
        cpu_capacity_cores,
        ram_capacity_bytes,
        coalesce(gpu_capacity, 0) as gpu_capacity,
        cpu_allocatable_cores,
        ram_allocatable_bytes,
        gpu_model,
        coalesce(running_minutes, 0) / 60.0 as node_run_h
    from source
)

select * from renamed
