-- grain: one row per (cluster, kind, uid): the latest snapshot of each object up to the window's end
with snapshots as (
    select * from {{ ref('stg_kubernetes__object_snapshots') }}
    {%- if var('max_ts', none) %}
    where snapshot_hour_ts < cast({{ sql_string(var('max_ts')) }} as timestamp)
    {%- endif %}
),

ranked as (
    select
        *,
        row_number() over (partition by cluster, kind, uid order by snapshot_hour_ts desc) as recency
    from snapshots
),

latest as (
    select
        cluster,
        snapshot_hour_ts,
        kind,
        {%- for column in kubernetes_object_columns() %}
        {{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    from ranked
    where recency = 1
)

select * from latest
