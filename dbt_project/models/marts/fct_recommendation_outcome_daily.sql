-- grain: one row per (usage_date, cluster, recommendation_id) of each recommendation with a recorded decision
-- What was decided about a recommendation (`kubeledger recommend --dismiss/--applied`, read through
-- stg_user__recommendation_actions) and, once applied, what it saved: the estimate it was applied on (its
-- fct_recommendation_daily row of the applied day, else the newest before) beside the realised saving, measured in
-- fct_allocation_daily over the same scope (the container, controller, namespace or node pool of the recommendation;
-- an unclaimed volume's cost in fct_asset_daily):
--   realised per month = (mean daily value over the cluster's days before the applied day
--                         - mean daily value over its days after it, up to the built day) x 730 / 24
-- each side at most window_days long (the recommendations' look-back); the applied day itself is left out (it mixes
-- both). A cluster day without rows in the scope counts 0 (a retired workload costs nothing after). NULL until the
-- built day has a day after the applied one (and without a day before it). docs/METHOD.md "Dismiss and track".
{{ config(unique_key=['usage_date', 'cluster']) }}
{%- set window = rec_window_days() %}
{%- set quantities = [('usd', 'total_cost'), ('kwh', 'energy_kwh'), ('co2e_g', 'co2e_total_g')] %}

with days as (
    {{ rec_build_days() }}
),

actions as (
    select * from {{ ref('stg_user__recommendation_actions') }}
),

recommendations as (
    select
        usage_date, cluster, recommendation_id, kind, namespace, controller_kind, controller, container, target,
        saving_usd_per_month, saving_kwh_per_month, saving_co2e_g_per_month
    from {{ ref('fct_recommendation_daily') }}
),

pools as (
    select distinct
        cluster, node, cast(hour_ts as date) as usage_date,
        instance_type || '@' || coalesce(availability_zone, 'no-zone') as pool
    from {{ ref('int_node_hours_recorded') }}
    where instance_type is not null
),

allocation as (
    select
        a.usage_date, a.cluster, a.namespace, a.controller_kind, a.controller, a.container, pools.pool,
        a.total_cost, a.energy_kwh, a.co2e_total_g
    from {{ ref('fct_allocation_daily') }} as a
    left join pools on pools.cluster = a.cluster and pools.node = a.node and pools.usage_date = a.usage_date
),

cluster_days as (
    select distinct cluster, usage_date from {{ ref('fct_allocation_daily') }}
),

-- the decisions standing on each built day: a dismissal, or a change applied on or before the day
decided as (
    select
        days.usage_date, days.cluster, actions.recommendation_id, actions.kind as recorded_kind, actions.status,
        actions.reason, actions.applied_date, actions.recorded_at
    from days
    join actions on actions.cluster = days.cluster
    where actions.status = 'dismissed' or actions.applied_date <= days.usage_date
),

-- the estimate acted on: the row of the applied day (of the built day for a dismissal), else the newest before
estimates as (
    select
        decided.usage_date, decided.recommendation_id, r.usage_date as estimated_on, r.kind, r.namespace,
        r.controller_kind, r.controller, r.container, r.target, r.saving_usd_per_month, r.saving_kwh_per_month,
        r.saving_co2e_g_per_month,
        row_number() over (
            partition by decided.usage_date, decided.recommendation_id
            order by case when r.usage_date <= coalesce(decided.applied_date, decided.usage_date) then 0 else 1 end,
                r.usage_date desc) as pick
    from decided
    join recommendations as r
        on r.cluster = decided.cluster and r.recommendation_id = decided.recommendation_id
        and r.usage_date <= decided.usage_date
),

scoped as (
    select
        decided.*, estimates.estimated_on, estimates.namespace, estimates.controller_kind, estimates.controller,
        estimates.container, estimates.target, estimates.saving_usd_per_month, estimates.saving_kwh_per_month,
        estimates.saving_co2e_g_per_month, coalesce(estimates.kind, decided.recorded_kind) as kind
    from decided
    left join estimates
        on estimates.usage_date = decided.usage_date and estimates.recommendation_id = decided.recommendation_id
        and estimates.pick = 1
),

-- the cluster's days on each side of the applied day, up to the built day
observed as (
    select
        s.usage_date, s.recommendation_id, c.usage_date as measured_date, c.usage_date < s.applied_date as is_before
    from scoped as s
    join cluster_days as c
        on c.cluster = s.cluster and c.usage_date <= s.usage_date and c.usage_date <> s.applied_date
        and c.usage_date >= {{ dbt.dateadd('day', -window, 's.applied_date') }}
        and c.usage_date <= {{ dbt.dateadd('day', window, 's.applied_date') }}
    where s.status = 'applied' and s.target is not null
),

-- the scope's value on each of those days
measured as (
    select
        o.usage_date, o.recommendation_id, o.measured_date,
        {%- for q, column in quantities %}
        sum(a.{{ column }}) as {{ q }}{{ ',' if not loop.last }}
        {%- endfor %}
    from observed as o
    join scoped as s on s.usage_date = o.usage_date and s.recommendation_id = o.recommendation_id
    join allocation as a
        on a.cluster = s.cluster and a.usage_date = o.measured_date
        and case
            when s.kind = 'container_rightsizing'
                then a.namespace = s.namespace and a.controller_kind = s.controller_kind
                and a.controller = s.controller and a.container = s.container
            when s.kind = 'idle_namespace' then a.namespace = s.namespace
            when s.kind = 'idle_node_pool' then a.pool = s.target
            when s.kind = 'unclaimed_volume' then false
            else a.namespace = s.namespace and a.controller_kind = s.controller_kind and a.controller = s.controller
        end
    group by o.usage_date, o.recommendation_id, o.measured_date
    union all
    select
        o.usage_date, o.recommendation_id, o.measured_date, sum(v.total_cost) as usd, cast(null as double) as kwh,
        cast(null as double) as co2e_g
    from observed as o
    join scoped as s on s.usage_date = o.usage_date and s.recommendation_id = o.recommendation_id
    join {{ ref('fct_asset_daily') }} as v
        on v.cluster = s.cluster and v.usage_date = o.measured_date and v.asset_kind = 'volume'
        and v.asset_name = s.target
    where s.kind = 'unclaimed_volume'
    group by o.usage_date, o.recommendation_id, o.measured_date
),

compared as (
    select
        o.usage_date, o.recommendation_id,
        count(case when o.is_before then 1 end) as days_before,
        count(case when not o.is_before then 1 end) as days_after,
        {%- for q, column in quantities %}
        sum(case when o.is_before then coalesce(m.{{ q }}, 0) end) as before_{{ q }},
        sum(case when not o.is_before then coalesce(m.{{ q }}, 0) end) as after_{{ q }}{{ ',' if not loop.last }}
        {%- endfor %}
    from observed as o
    left join measured as m
        on m.usage_date = o.usage_date and m.recommendation_id = o.recommendation_id
        and m.measured_date = o.measured_date
    group by o.usage_date, o.recommendation_id
),

final as (
    select
        s.usage_date, s.cluster, s.recommendation_id, s.kind, s.target, s.status, s.reason, s.applied_date,
        s.recorded_at, s.estimated_on,
        s.saving_usd_per_month as estimated_usd_per_month,
        s.saving_kwh_per_month as estimated_kwh_per_month,
        s.saving_co2e_g_per_month as estimated_co2e_g_per_month,
        cast(c.days_before as integer) as days_before,
        cast(c.days_after as integer) as days_after,
        {%- for q, column in quantities %}
        case
            when c.days_before > 0 and c.days_after > 0{{ " and s.kind <> 'unclaimed_volume'" if q != 'usd' }}
                then (c.before_{{ q }} / c.days_before - c.after_{{ q }} / c.days_after) * 730.0 / 24
        end as realised_{{ q }}_per_month{{ ',' if not loop.last }}
        {%- endfor %}
    from scoped as s
    left join compared as c on c.usage_date = s.usage_date and c.recommendation_id = s.recommendation_id
)

select * from final
