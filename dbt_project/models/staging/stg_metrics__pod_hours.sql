-- grain: one row per (cluster, hour_ts, pod_uid)
with source as (
    select * from {{ source('metrics', 'pod_hours') }}
    where {{ window_filter() }}
),

renamed as (
    select
        cluster,
        hour_ts,
        namespace,
        pod,
        pod_uid,
        node,
        phase,
        owner_kind,
        owner_name,
        controller_kind,
        controller_name,
        coalesce(labels, '{}') as labels,
        coalesce(annotations, '{}') as annotations,
        network_transmit_bytes,
        network_receive_bytes,
        egress_cross_zone_bytes,
        egress_cross_region_bytes,
        egress_internet_bytes
    from source
)

select * from renamed
