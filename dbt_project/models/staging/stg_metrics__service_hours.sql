-- grain: one row per (cluster, hour_ts, namespace, service, pod_uid); pod_uid NULL = no selected pod
with source as (
    select * from {{ source('metrics', 'service_hours') }}
    where {{ window_filter() }}
),

renamed as (
    select
        cluster,
        hour_ts,
        namespace,
        service,
        service_type,
        ingress,
        coalesce(active_minutes, 0) / 60.0 as active_h,
        pod_uid
    from source
    where service_type = 'LoadBalancer'
)

select * from renamed
