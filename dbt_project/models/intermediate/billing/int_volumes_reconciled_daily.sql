-- grain: one row per (usage_date, cluster, pv). The volume-day's list-priced cost against the bill's effective
-- cost of its disk (issue 28), matched by the provider volume id (CSI volume handle, EBS volume id), and the rate
-- per dollar of the volume's cost that carries the adjustment to the pods (and unmounted rows) paying for it.
with volumes as (
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        pv,
        sum(pv_cost) as list_cost
    from {{ ref('int_volumes_allocated_hourly') }}
    group by cast(hour_ts as date), cluster, pv
),

volume_keys as (
    select
        cluster,
        cast(hour_ts as date) as usage_date,
        pv,
        {{ resource_key('max(provider_volume_id)') }} as resource_key
    from {{ ref('stg_metrics__volume_hours') }}
    group by cluster, cast(hour_ts as date), pv
),

keyed as (
    select volumes.*, volume_keys.resource_key
    from volumes
    left join volume_keys
        on volume_keys.cluster = volumes.cluster and volume_keys.usage_date = volumes.usage_date
        and volume_keys.pv = volumes.pv
),

-- the bill's effective cost, the status and pv_cost_adjustment / pv_adjustment_rate (macros/billing.sql)
{{ bill_matched('keyed', 'pv') }}
