-- grain: one row per (usage_date, resource_key) of the FOCUS bill in the build window's days; resource_key NULL for
-- the day's charges without a resource. The bill side of the reconciliation (issue 28): a resource's effective
-- (amortised) cost of a UTC day, every charge category summed, as fct_cloud_cost_daily sums it.
with charges as (
    select
        charge_date as usage_date,
        {{ resource_key('resource_id') }} as resource_key,
        coalesce(sub_account_id, billing_account_id) as account_id,
        list_cost,
        effective_cost
    from {{ ref('stg_focus__charges') }}
    where {{ built_days_filter('charge_date', cluster_col=none) }}
)

select
    usage_date,
    resource_key,
    max(account_id) as account_id,
    sum(list_cost) as list_cost,
    sum(effective_cost) as effective_cost,
    count(*) as charge_rows
from charges
group by usage_date, resource_key
