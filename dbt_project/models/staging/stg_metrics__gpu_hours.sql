-- grain: one row per (cluster, hour_ts, node, gpu_uuid)
with source as (
    select * from {{ source('metrics', 'gpu_hours') }}
    where {{ window_filter() }}
),

renamed as (
    select
        cluster,
        hour_ts,
        node,
        gpu_uuid,
        model_name,
        namespace,
        pod,
        container,
        power_avg_w,
        util_avg
    from source
)

select * from renamed
