-- grain: one row per (cluster, hour_ts, pv)
with source as (
    select * from {{ source('metrics', 'volume_hours') }}
    where {{ window_filter() }}
),

renamed as (
    select
        cluster,
        hour_ts,
        pv,
        namespace,
        pvc,
        storage_class,
        pvc_request_bytes,
        pv_capacity_bytes,
        provider_volume_id,
        coalesce(active_minutes, 0) / 60.0 as active_h
    from source
)

select * from renamed
