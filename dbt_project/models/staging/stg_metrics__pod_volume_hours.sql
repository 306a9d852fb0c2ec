-- grain: one row per (cluster, hour_ts, pod_uid, pvc)
with source as (
    select * from {{ source('metrics', 'pod_volume_hours') }}
    where {{ window_filter() }}
),

renamed as (
    select distinct
        cluster,
        hour_ts,
        namespace,
        pod_uid,
        pvc
    from source
)

select * from renamed
