-- grain: one row per (usage_date, cluster, node). The node-day's list-priced cost against the bill's effective
-- cost of its instance (issue 28): adjustment = billed - list, spread over CPU, RAM and GPU in proportion to their
-- list cost, and the rate per dollar of allocated cost that carries it down to the node's allocation rows.
{%- set resources = ['cpu', 'ram', 'gpu'] %}
with nodes as (
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        node,
        {%- for r in resources %}
        sum(node_{{ r }}_cost) as {{ r }}_cost,
        -- what the node's workload and idle rows carry (they exceed the node's when idle was clamped)
        sum(allocated_{{ r }}_cost + idle_{{ r }}_cost) as {{ r }}_cost_rows,
        {%- endfor %}
        sum(node_cpu_cost + node_ram_cost + node_gpu_cost) as list_cost
    from {{ ref('int_nodes_costed_hourly') }}
    group by cast(hour_ts as date), cluster, node
),

keyed as (
    select
        nodes.*,
        {{ resource_key('meta.provider_id') }} as resource_key
    from nodes
    left join {{ ref('int_nodes_metadata_daily') }} as meta
        on meta.cluster = nodes.cluster and meta.usage_date = nodes.usage_date and meta.node = nodes.node
),

bill_days as (
    select distinct usage_date from {{ ref('int_cloud_costs_keyed_daily') }}
),

billed as (
    select
        keyed.*,
        bill.effective_cost as billed_cost,
        bill.account_id,
        {{ reconciliation_status('keyed.resource_key', 'bill.resource_key', 'bill_days.usage_date') }}
            as reconciliation_status
    from keyed
    left join {{ ref('int_cloud_costs_keyed_daily') }} as bill
        on bill.usage_date = keyed.usage_date and bill.resource_key = keyed.resource_key
    left join bill_days on bill_days.usage_date = keyed.usage_date
),

spread as (
    select
        *,
        {%- for r in resources %}
        case
            when reconciliation_status <> 'reconciled' then 0.0
            when list_cost > 0 then (billed_cost - list_cost) * {{ r }}_cost / list_cost
            -- nothing list-priced to spread over: the whole bill is CPU cost
            else {{ 'billed_cost' if r == 'cpu' else '0.0' }}
        end as {{ r }}_cost_adjustment{{ ',' if not loop.last }}
        {%- endfor %}
    from billed
)

select
    *,
    {%- for r in resources %}
    -- an allocation row's adjustment = its cost x this rate; with no row cost the node's idle row takes it all
    coalesce({{ r }}_cost_adjustment / nullif({{ r }}_cost_rows, 0), 0) as {{ r }}_adjustment_rate,
    case when coalesce({{ r }}_cost_rows, 0) = 0 then {{ r }}_cost_adjustment else 0.0 end
        as {{ r }}_adjustment_unspread{{ ',' if not loop.last }}
    {%- endfor %}
from spread
