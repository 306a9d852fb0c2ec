-- grain: one row per (usage_date, cluster, recommendation_id)
-- Every recommendation of the day, with what it adds to the day's total once the others are counted (docs/METHOD.md
-- "Counting savings once"). The stages run in order, each on what the earlier ones leave:
--   1 retire: idle namespaces, abandoned workloads, unclaimed volumes (counted whole); an abandoned workload in an
--     idle namespace is superseded by the namespace (counted 0);
--   2 rightsize: a container of a retired controller or namespace is superseded by the retirement (counted 0); each
--     resource whose request falls is counted (CPU: cost, embodied CO2e; memory: cost, energy, operational CO2e)
--     and each one that rises is a risk fix, shown apart and never netted against savings. An off-peak scale-down
--     is computed on the rightsized requests (depends_on the Deployment's rightsizing rows) and counted with them;
--     an HPA is their alternative: per Deployment, the larger $ of (HPA) and (rightsizing savings + off-peak) is
--     counted (then the larger CO2e; a tie keeps the rightsizing), the other superseded by it; a Deployment with a
--     request to raise (a risk fix) keeps its rightsizing and gets no HPA (an HPA scales on the request); a
--     volume's rightsizing is counted whole unless its volume is retired as unclaimed (superseded by that row,
--     counted 0), and no namespace retirement supersedes it (idle namespaces do not count their volumes);
--   3 re-pack: a pool's node removal T overlaps the stage-1/2 savings S of the workloads on the pool (by their cost
--     share on it), so the pool row counts max(T - S, 0) per quantity: the pool adds up to max(S, T);
--   4 shift: time and zone shifts of one controller are alternatives (the larger CO2e saving is counted) and a
--     retired controller or namespace shifts nothing;
--   5 spot: spot pricing applies to what the earlier stages leave of a workload, cumulatively (not an alternative):
--     a spot_eligible row counts its $ saving x max(1 - S / C, 0), S the stage-2 $ counted on the same controller
--     (rightsizing, off-peak scale-down or HPA, its depends_on) and C the workload's monthly cost the saving was
--     priced on; a retired controller or namespace is priced nothing (superseded_by the retirement). Re-packing
--     frees nodes, not the workload's own cost share, and shifts move carbon only, so neither changes it. Spot
--     saves dollars only: its kWh and CO2e are 0.
-- The standalone saving_* columns are unchanged; the total of any set of rows is the sum of their counted_* columns.
-- A recommendation dismissed with `kubeledger recommend --dismiss` (stg_user__recommendation_actions) counts nothing,
-- retires nothing and is no controller's chosen shift: the others count as if it were not there. An applied one is
-- counted as before (its outcome: fct_recommendation_outcome_daily).
{%- set kinds = ['int_container_requests_rightsized', 'int_abandoned_workloads_flagged', 'int_namespaces_idle_flagged',
                 'int_node_pools_idle_sized', 'int_volumes_unclaimed_flagged', 'int_batch_runs_shifted',
                 'int_workloads_zone_shifted', 'int_deployments_off_peak_scaled', 'int_deployments_autoscaled',
                 'int_workloads_spot_priced', 'int_volumes_rightsized'] %}
{%- set sizing_kinds = "('container_rightsizing', 'off_peak_scale_down', 'hpa_candidate')" %}
{%- set columns = ['usage_date', 'cluster', 'recommendation_id', 'kind', 'namespace', 'controller_kind',
                   'controller', 'container', 'target', 'action', 'window_days', 'days_of_data', 'hours_covered',
                   'evidence', 'confidence', 'current_cpu_request_cores', 'recommended_cpu_request_cores',
                   'current_ram_request_bytes', 'recommended_ram_request_bytes', 'saving_usd_per_month',
                   'saving_kwh_per_month', 'saving_co2e_g_per_month', 'is_estimated', 'estimation_reasons'] %}
{%- set quantities = ['usd', 'kwh', 'co2e_g'] %}

with listed as (
    {% for model in kinds -%}
    select {{ columns | join(', ') }} from {{ ref(model) }}
    {% if not loop.last %}union all
    {% endif -%}
    {%- endfor %}
),

actions as (
    select * from {{ ref('stg_user__recommendation_actions') }}
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

days as (
    {{ rec_build_days() }}
),

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
    left join {{ ref('int_container_requests_rightsized') }} as p
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

-- each workload's cost on each node pool over the window: a container's (rightsizing), a controller's and a
-- namespace's (retiring)
container_pools as (
    select
        days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.container,
        n.instance_type || '@' || coalesce(n.availability_zone, 'no-zone') as pool,
        sum(h.cpu_cost + h.ram_cost) as cost
    from days
    {{ rec_window_join(ref('int_workload_hours_recorded'), 'h') }}
    join {{ ref('int_node_hours_recorded') }} as n
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
    {{ rec_window_join(ref('int_workload_hours_recorded'), 'h') }}
    join {{ ref('int_node_hours_recorded') }} as n
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

-- stage 5's base: the stage-2 savings counted on each controller (what rightsizing leaves is priced at spot)
sized_down as (
    select
        usage_date, cluster, namespace, controller_kind, controller,
        sum(counted_usd) as sized_usd,
        {{ csv_union_agg('recommendation_id') }} as sized_by
    from early
    where kind in {{ sizing_kinds }} and counted_usd > 0
    group by usage_date, cluster, namespace, controller_kind, controller
),

-- stage 4: one shift per controller (the larger CO2e saving), none for a retired controller
shifts as (
    select
        usage_date, cluster, recommendation_id,
        first_value(recommendation_id) over (
            partition by usage_date, cluster, namespace, controller_kind, controller
            order by saving_co2e_g_per_month desc, recommendation_id asc) as chosen
    from parted
    where kind in ('carbon_shift_time', 'carbon_shift_zone') and retired_by is null and status <> 'dismissed'
),

counted as (
    select
        parted.*,
        case parted.kind
            when 'idle_namespace' then 1 when 'abandoned_workload' then 1 when 'unclaimed_volume' then 1
            when 'container_rightsizing' then 2 when 'off_peak_scale_down' then 2 when 'hpa_candidate' then 2
            when 'volume_rightsizing' then 2
            when 'idle_node_pool' then 3 when 'spot_eligible' then 5 else 4
        end as stage,
        case
            when parted.retired_by is not null then parted.retired_by
            when parted.sized_out_by is not null then parted.sized_out_by
            when shifts.chosen <> parted.recommendation_id then shifts.chosen
        end as superseded_by,
        case
            when parted.kind = 'idle_node_pool' then nullif(freed.freed_by, '')
            when parted.kind = 'spot_eligible' then nullif(sized_down.sized_by, '')
            else parted.rightsized_by
        end as depends_on,
        {%- for q in quantities %}
        case
            when parted.retired_by is not null or parted.sized_out_by is not null
                or shifts.chosen <> parted.recommendation_id then 0
            when parted.kind = 'idle_node_pool'
                then greatest(parted.saving_part_{{ q }} - coalesce(freed.freed_{{ q }}, 0), 0)
            when parted.kind = 'spot_eligible'
                then parted.saving_part_{{ q }} * greatest(1 - coalesce({{ safe_divide(
                    'sized_down.sized_usd', 'spot.workload_cost_usd_per_month') }}, 0), 0)
            else parted.saving_part_{{ q }}
        end as counted_{{ q }},
        case when parted.retired_by is null and parted.status <> 'dismissed' then parted.risk_part_{{ q }} else 0 end
            as risk_fix_{{ q }}
        {{- ',' if not loop.last }}
        {%- endfor %}
    from chosen as parted
    left join freed
        on parted.kind = 'idle_node_pool' and freed.usage_date = parted.usage_date
        and freed.cluster = parted.cluster and freed.pool = parted.target
    left join shifts
        on shifts.usage_date = parted.usage_date and shifts.cluster = parted.cluster
        and shifts.recommendation_id = parted.recommendation_id
    left join {{ ref('int_workloads_spot_priced') }} as spot
        on parted.kind = 'spot_eligible' and spot.usage_date = parted.usage_date and spot.cluster = parted.cluster
        and spot.recommendation_id = parted.recommendation_id
    left join sized_down
        on parted.kind = 'spot_eligible' and sized_down.usage_date = parted.usage_date
        and sized_down.cluster = parted.cluster and sized_down.namespace = parted.namespace
        and sized_down.controller_kind = parted.controller_kind and sized_down.controller = parted.controller
)

select
    {{ columns | join(', ') }},
    stage,
    case when retired_by is null and (risk_part_usd > 0 or risk_part_kwh > 0 or risk_part_co2e_g > 0) then 'risk_fix'
        else 'saving' end as saving_class,
    superseded_by,
    depends_on,
    counted_usd as counted_usd_per_month,
    counted_kwh as counted_kwh_per_month,
    counted_co2e_g as counted_co2e_g_per_month,
    risk_fix_usd as risk_fix_usd_per_month,
    risk_fix_kwh as risk_fix_kwh_per_month,
    risk_fix_co2e_g as risk_fix_co2e_g_per_month,
    status,
    status_reason,
    applied_date
from counted
