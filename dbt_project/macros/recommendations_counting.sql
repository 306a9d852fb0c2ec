{# The parts of models/intermediate/recommendations/int_recommendations_counted.sql (docs/METHOD.md "Counting
   savings once"), one macro per stage: the recommendations with their status, stage 1 (retire) and the saving and
   risk parts of stage 2, stage 2's alternatives, and stage 3's pool overlap. Each renders a run of CTEs of that
   model's WITH list, in its order, each followed by a comma; its comment says which CTEs it reads (defined earlier in
   the model) and which it defines. Descriptions: _recommendations__macros.yml. #}

{# Every recommendation of the day (the union of the kind models, named in kind_models, `columns` of each) with its
   recorded decision: dismissed, applied from the day the change went live, else open.
   Reads: nothing. Defines: listed, actions, recommendations. #}
{% macro rec_count_listed(kind_models, columns, recommendation_actions) -%}
listed as (
    {% for model in kind_models -%}
    select {{ columns | join(', ') }} from {{ ref(model) }}
    {% if not loop.last %}union all
    {% endif -%}
    {%- endfor %}
),

actions as (
    select * from {{ recommendation_actions }}
),

-- each row with its recorded decision; applied counts from the day the change went live
recommendations as (
    select
        listed.*,
        case
            when actions.status = 'dismissed' then 'dismissed'
            when actions.status = 'applied' and actions.applied_date <= listed.usage_date then 'applied'
            else 'open'
        end as status,
        case when actions.status = 'dismissed' then actions.reason end as status_reason,
        case when actions.status = 'applied' and actions.applied_date <= listed.usage_date
            then actions.applied_date end as applied_date
    from listed
    left join actions on actions.recommendation_id = listed.recommendation_id
),
{%- endmacro %}

{# Stage 1 and the parts of stage 2: the retirement that covers each row (an idle namespace, an abandoned
   controller, an unclaimed volume for its rightsizing), and each row's saving parts and risk parts per quantity
   (container rightsizing per resource from its model's CPU and memory columns: a fall saves, a rise is a risk fix;
   a dismissed row saves nothing).
   Reads: recommendations. Defines: retired, retired_namespaces, retired_volumes, parted. #}
{% macro rec_count_retired_and_parted(container_requests_rightsized) -%}
retired as (
    select usage_date, cluster, namespace, controller_kind, controller, recommendation_id as retired_by
    from recommendations
    where kind = 'abandoned_workload' and status <> 'dismissed'
),

retired_namespaces as (
    select usage_date, cluster, namespace, recommendation_id as retired_by
    from recommendations
    where kind = 'idle_namespace' and status <> 'dismissed'
),

-- a volume retired as unclaimed is not also rightsized (both kinds name the volume by its claim, else the PV)
retired_volumes as (
    select usage_date, cluster, target, recommendation_id as retired_by
    from recommendations
    where kind = 'unclaimed_volume' and status <> 'dismissed'
),

-- stages 1 and 2: the parts of each row that save, and those that raise a request
parted as (
    select
        r.*,
        coalesce(retired_namespaces.retired_by, retired.retired_by, retired_volumes.retired_by) as retired_by,
        case when r.status = 'dismissed' then 0 when r.kind = 'container_rightsizing' then
            greatest(p.saving_cpu_usd_per_month, 0) + greatest(p.saving_ram_usd_per_month, 0)
        else greatest(r.saving_usd_per_month, 0) end as saving_part_usd,
        case when r.status = 'dismissed' then 0 when r.kind = 'container_rightsizing'
            then greatest(p.saving_kwh_per_month, 0)
        else greatest(r.saving_kwh_per_month, 0) end as saving_part_kwh,
        case when r.status = 'dismissed' then 0 when r.kind = 'container_rightsizing' then
            greatest(p.saving_cpu_co2e_g_per_month, 0) + greatest(p.saving_ram_co2e_g_per_month, 0)
        else greatest(r.saving_co2e_g_per_month, 0) end as saving_part_co2e_g,
        coalesce(greatest(-p.saving_cpu_usd_per_month, 0) + greatest(-p.saving_ram_usd_per_month, 0), 0)
            as risk_part_usd,
        coalesce(greatest(-p.saving_kwh_per_month, 0), 0) as risk_part_kwh,
        coalesce(greatest(-p.saving_cpu_co2e_g_per_month, 0) + greatest(-p.saving_ram_co2e_g_per_month, 0), 0)
            as risk_part_co2e_g
    from recommendations as r
    left join {{ container_requests_rightsized }} as p
        on r.kind = 'container_rightsizing' and p.usage_date = r.usage_date and p.cluster = r.cluster
        and p.recommendation_id = r.recommendation_id
    left join retired
        on r.kind <> 'abandoned_workload' and retired.usage_date = r.usage_date and retired.cluster = r.cluster
        and retired.namespace = r.namespace and retired.controller_kind = r.controller_kind
        and retired.controller = r.controller
    left join retired_namespaces
        on r.kind not in ('idle_namespace', 'unclaimed_volume', 'volume_rightsizing')
        and retired_namespaces.usage_date = r.usage_date
        and retired_namespaces.cluster = r.cluster and retired_namespaces.namespace = r.namespace
    left join retired_volumes
        on r.kind = 'volume_rightsizing' and retired_volumes.usage_date = r.usage_date
        and retired_volumes.cluster = r.cluster and retired_volumes.target = r.target
),
{%- endmacro %}

{# Stage 2's alternatives, per Deployment: its HPA against its rightsizing savings plus its off-peak scale-down
   (the larger $, then the larger CO2e, a tie keeps the rightsizing; a request to raise keeps the rightsizing), the
   loser sized out by the winner; an off-peak row names the rightsizing it builds on; then what stages 1 and 2
   count of each row.
   Reads: parted. Defines: sizing, rightsized, chosen, early. #}
{% macro rec_count_sizing_alternatives(sizing_kinds, quantities) -%}
-- stage 2 alternatives, per Deployment: its HPA against its rightsizing savings plus its off-peak scale-down
sizing as (
    select
        usage_date, cluster, namespace, controller_kind, controller,
        max(case when kind = 'hpa_candidate' then recommendation_id end) as hpa_id,
        coalesce(max(case when kind = 'container_rightsizing' and risk_part_usd + risk_part_kwh + risk_part_co2e_g > 0
                              then recommendation_id end),
                 max(case when kind = 'off_peak_scale_down' then recommendation_id end),
                 max(case when kind = 'container_rightsizing' then recommendation_id end)) as rest_id,
        max(case when kind = 'container_rightsizing' and risk_part_usd + risk_part_kwh + risk_part_co2e_g > 0
                     then 1 else 0 end) as has_risk_fix,
        sum(case when kind = 'hpa_candidate' then saving_part_usd else 0 end) as hpa_usd,
        sum(case when kind = 'hpa_candidate' then saving_part_co2e_g else 0 end) as hpa_co2e_g,
        sum(case when kind <> 'hpa_candidate' then saving_part_usd else 0 end) as rest_usd,
        sum(case when kind <> 'hpa_candidate' then saving_part_co2e_g else 0 end) as rest_co2e_g
    from parted
    where kind in {{ sizing_kinds }} and retired_by is null and status <> 'dismissed'
    group by usage_date, cluster, namespace, controller_kind, controller
    having max(case when kind = 'hpa_candidate' then 1 else 0 end) = 1
),

rightsized as (
    select
        usage_date, cluster, namespace, controller_kind, controller,
        {{ csv_union_agg('recommendation_id') }} as rightsized_by
    from parted
    where kind = 'container_rightsizing' and status <> 'dismissed'
    group by usage_date, cluster, namespace, controller_kind, controller
),

chosen as (
    select
        parted.*,
        case
            when parted.kind not in {{ sizing_kinds }} or parted.retired_by is not null
                or parted.status = 'dismissed' then null
            when sizing.has_risk_fix = 0 and (sizing.hpa_usd > sizing.rest_usd
                or (sizing.hpa_usd = sizing.rest_usd and sizing.hpa_co2e_g > sizing.rest_co2e_g))
                then case when parted.kind <> 'hpa_candidate' then sizing.hpa_id end
            when parted.kind = 'hpa_candidate' then sizing.rest_id
        end as sized_out_by,
        case when parted.kind = 'off_peak_scale_down' then nullif(rightsized.rightsized_by, '') end
            as rightsized_by
    from parted
    left join sizing
        on sizing.usage_date = parted.usage_date and sizing.cluster = parted.cluster
        and sizing.namespace = parted.namespace and sizing.controller_kind = parted.controller_kind
        and sizing.controller = parted.controller
    left join rightsized
        on rightsized.usage_date = parted.usage_date and rightsized.cluster = parted.cluster
        and rightsized.namespace = parted.namespace and rightsized.controller_kind = parted.controller_kind
        and rightsized.controller = parted.controller
),

early as (
    select
        usage_date, cluster, recommendation_id, kind, namespace, controller_kind, controller, container,
        {%- for q in quantities %}
        case when retired_by is null and sized_out_by is null then saving_part_{{ q }} else 0 end as counted_{{ q }},
        {%- endfor %}
        retired_by
    from chosen
    where kind in ('idle_namespace', 'abandoned_workload', 'unclaimed_volume', 'container_rightsizing',
                   'off_peak_scale_down', 'hpa_candidate')
),
{%- endmacro %}

{# Stage 3's overlap: each workload's cost share on each node pool (instance type @ zone) over the window, at the
   level its row acts on (a container for rightsizing, a controller, a namespace), and what stages 1 and 2 already
   free on each pool (their counted savings x those shares, with the rows that free it).
   Reads: days, early. Defines: container_pools, pool_shares, freed. #}
{% macro rec_count_pool_overlap(workload_hours, node_hours, quantities) -%}
-- each workload's cost on each node pool over the window: a container's (rightsizing), a controller's and a
-- namespace's (retiring)
container_pools as (
    select
        days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.container,
        n.instance_type || '@' || coalesce(n.availability_zone, 'no-zone') as pool,
        sum(h.cpu_cost + h.ram_cost) as cost
    from days
    {{ rec_window_join(workload_hours, 'h') }}
    join {{ node_hours }} as n
        on n.cluster = h.cluster and n.hour_ts = h.hour_ts and n.node = h.node
    where h.controller is not null and n.instance_type is not null
    group by days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.container,
        n.instance_type, n.availability_zone
),

pool_shares as (
    select
        'container' as level, usage_date, cluster, namespace, controller_kind, controller, container, pool,
        cost / nullif(sum(cost) over (partition by usage_date, cluster, namespace, controller_kind, controller,
                                                   container), 0) as share
    from container_pools
    union all
    select
        'controller' as level, usage_date, cluster, namespace, controller_kind, controller,
        cast(null as string) as container, pool,
        sum(cost) / nullif(sum(sum(cost)) over (partition by usage_date, cluster, namespace, controller_kind,
                                                           controller), 0) as share
    from container_pools
    group by usage_date, cluster, namespace, controller_kind, controller, pool
    union all
    select
        'namespace' as level, days.usage_date, h.cluster, h.namespace, cast(null as string) as controller_kind,
        cast(null as string) as controller, cast(null as string) as container,
        n.instance_type || '@' || coalesce(n.availability_zone, 'no-zone') as pool,
        sum(h.cpu_cost + h.ram_cost) / nullif(sum(sum(h.cpu_cost + h.ram_cost)) over (
            partition by days.usage_date, h.cluster, h.namespace), 0) as share
    from days
    {{ rec_window_join(workload_hours, 'h') }}
    join {{ node_hours }} as n
        on n.cluster = h.cluster and n.hour_ts = h.hour_ts and n.node = h.node
    where n.instance_type is not null
    group by days.usage_date, h.cluster, h.namespace, n.instance_type, n.availability_zone
),

-- stage 3: what stages 1 and 2 already free on each pool
freed as (
    select
        early.usage_date, early.cluster, pool_shares.pool,
        {%- for q in quantities %}
        sum(early.counted_{{ q }} * pool_shares.share) as freed_{{ q }},
        {%- endfor %}
        {{ csv_union_agg('early.recommendation_id') }} as freed_by
    from early
    join pool_shares
        on pool_shares.usage_date = early.usage_date and pool_shares.cluster = early.cluster
        and pool_shares.namespace = early.namespace
        and pool_shares.level = case early.kind when 'container_rightsizing' then 'container'
                                                when 'idle_namespace' then 'namespace' else 'controller' end
        and coalesce(pool_shares.controller_kind, '') = coalesce(early.controller_kind, '')
        and coalesce(pool_shares.controller, '') = coalesce(early.controller, '')
        and coalesce(pool_shares.container, '') = coalesce(early.container, '')
    where early.counted_usd > 0 or early.counted_kwh > 0 or early.counted_co2e_g > 0
    group by early.usage_date, early.cluster, pool_shares.pool
),
{%- endmacro %}
