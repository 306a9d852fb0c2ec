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

bill_days as (
    select distinct usage_date from {{ ref('int_cloud_costs_keyed_daily') }}
),

billed as (
    select
        volumes.*,
        volume_keys.resource_key,
        bill.effective_cost as billed_cost,
        bill.account_id,
        {{ reconciliation_status('volume_keys.resource_key', 'bill.resource_key', 'bill_days.usage_date') }}
            as reconciliation_status
    from volumes
    left join volume_keys
        on volume_keys.cluster = volumes.cluster and volume_keys.usage_date = volumes.usage_date
        and volume_keys.pv = volumes.pv
    left join {{ ref('int_cloud_costs_keyed_daily') }} as bill
        on bill.usage_date = volumes.usage_date and bill.resource_key = volume_keys.resource_key
    left join bill_days on bill_days.usage_date = volumes.usage_date
)

select
    *,
    case when reconciliation_status = 'reconciled' then billed_cost - list_cost else 0.0 end
        as pv_cost_adjustment,
    -- a volume with no list cost keeps its adjustment on the asset (nothing to spread it over)
    case when reconciliation_status = 'reconciled' then coalesce((billed_cost - list_cost) / nullif(list_cost, 0), 0)
        else 0.0 end as pv_adjustment_rate
from billed
