-- grain: one row per (cluster, hour_ts, pv), kept across builds (incremental by day)
-- Whether any pod mounted the volume in the hour, its claim (NULL = unclaimed), cost, storage energy and whether the
-- cost rests on the default price; the size it is priced on and the kubelet's stats of its claim (PV rightsizing).
-- Incremental by day (dbt_project.yml); the post-hook drops days older than history_days.
{{ config(post_hook="{{ rec_history_prune() }}") }}

with allocated as (
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
),

volumes as (
    select * from {{ ref('stg_metrics__volume_hours') }}
),

volume_stats as (
    select * from {{ ref('stg_metrics__volume_stats_hours') }}
),

final as (
    select
        allocated.*,
        -- the size the volume's cost is priced on (int_volumes_allocated_hourly's asset cost)
        coalesce(volumes.pv_capacity_bytes, volumes.pvc_request_bytes) as capacity_bytes,
        volume_stats.used_max_bytes,
        volume_stats.capacity_bytes as filesystem_bytes
    from allocated
    left join volumes
        on volumes.cluster = allocated.cluster and volumes.hour_ts = allocated.hour_ts and volumes.pv = allocated.pv
    left join volume_stats
        on volume_stats.cluster = allocated.cluster and volume_stats.hour_ts = allocated.hour_ts
        and volume_stats.namespace = allocated.namespace and volume_stats.pvc = allocated.pvc
)

select * from final
