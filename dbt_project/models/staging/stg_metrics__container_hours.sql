-- grain: one row per (cluster, hour_ts, pod_uid, container)
with source as (
    select * from {{ source('metrics', 'container_hours') }}
    where {{ window_filter() }}
),

renamed as (
    select
        cluster,
        hour_ts,
        namespace,
        pod,
        pod_uid,
        container,
        node,
        coalesce(running_minutes, 0) / 60.0 as run_h,
        running_minutes,
        run_start_s,
        run_end_s,
        cpu_usage_core_seconds,
        cpu_usage_max_cores,
        cpu_request_cores,
        cpu_limit_cores,
        ram_usage_avg_bytes,
        ram_usage_max_bytes,
        ram_request_bytes,
        ram_limit_bytes,
        gpu_request,
        gpu_usage_avg
    from source
)

select * from renamed
