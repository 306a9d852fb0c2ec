-- grain: one row per (cluster, hour_ts, metric): an optional series family the metrics source checked in the hour.
-- No row = not checked (hours landed before the check existed): models assume nothing then.
with source as (
    select * from {{ source('metrics', 'metric_coverage_hours') }}
    where {{ window_filter() }}
),

renamed as (
    select
        cluster,
        hour_ts,
        metric,
        series_count,
        series_count = 0 as is_absent
    from source
)

select * from renamed
