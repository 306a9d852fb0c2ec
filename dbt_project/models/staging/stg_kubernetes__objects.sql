-- grain: one row per (cluster, kind, uid): the latest snapshot of each object up to the window's end
with source as (
    select * from {{ source('kubernetes', 'k8s_objects') }}
    where 1 = 1
    {%- if var('max_ts', none) %} and hour_ts < cast({{ sql_string(var('max_ts')) }} as timestamp){% endif %}
    {%- if var('cluster', none) %} and cluster = {{ sql_string(var('cluster')) }}{% endif %}
),

ranked as (
    select
        *,
        row_number() over (partition by cluster, kind, uid order by hour_ts desc) as recency
    from source
),

renamed as (
    select
        cluster,
        hour_ts as snapshot_hour_ts,
        kind,
        namespace,
        name,
        uid,
        labels,
        annotations,
        owner_kind,
        owner_name,
        owner_uid,
        spec
    from ranked
    where recency = 1
)

select * from renamed
