-- grain: one row per (cluster, hour_ts, namespace)
with source as (
    select * from {{ source('metrics', 'namespace_hours') }}
    where {{ window_filter() }}
),

renamed as (
    select
        cluster,
        hour_ts,
        namespace,
        coalesce(labels, '{}') as namespace_labels,
        coalesce(annotations, '{}') as namespace_annotations
    from source
)

select * from renamed
