-- grain: one row per (cluster, hour_ts, namespace, pvc)
with source as (
    select * from {{ source('metrics', 'volume_stats_hours') }}
    where {{ window_filter() }}
),

renamed as (
    select
        cluster,
        hour_ts,
        namespace,
        pvc,
        used_avg_bytes,
        used_max_bytes,
        capacity_bytes
    from source
)

select * from renamed
