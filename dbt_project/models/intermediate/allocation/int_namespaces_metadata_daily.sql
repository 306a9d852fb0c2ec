-- grain: one row per (cluster, usage_date, namespace) seen that day: its labels and annotations as last seen.
select * from (
    select
        cluster,
        cast(hour_ts as date) as usage_date,
        namespace,
        namespace_labels,
        namespace_annotations,
        row_number() over (partition by cluster, cast(hour_ts as date), namespace order by hour_ts desc) as recency
    from {{ ref('stg_metrics__namespace_hours') }}
) as ranked
where recency = 1
