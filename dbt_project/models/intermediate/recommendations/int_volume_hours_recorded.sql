-- grain: one row per (cluster, hour_ts, pv), kept across builds (incremental by day)
-- Whether any pod mounted the volume in the hour, its claim (NULL = unclaimed), cost, storage energy and whether the
-- cost rests on the default price.
-- Incremental by day (dbt_project.yml); the post-hook drops days older than history_days.
{{ config(post_hook="{{ rec_history_prune() }}") }}

select
    cast(hour_ts as date) as usage_date,
    cluster,
    hour_ts,
    pv,
    max(namespace) as namespace,
    max(pvc) as pvc,
    bool_or(pod_uid <> '__unmounted__' and coef > 0) as is_mounted,
    sum(pv_cost) as pv_cost,
    sum(energy_storage_kwh) as energy_storage_kwh,
    -- priced at the default storage rate (no custom or sheet price): the recommendation says so, as fct_asset_daily
    bool_or(price_source = 'default') as is_default_price
from {{ ref('int_volumes_allocated_hourly') }}
group by cast(hour_ts as date), cluster, hour_ts, pv
