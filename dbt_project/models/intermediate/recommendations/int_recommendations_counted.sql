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

-- every recommendation of the day with its recorded decision (defines listed, actions, recommendations)
with {{ rec_count_listed(kinds, columns, ref('stg_user__recommendation_actions')) }}

days as (
    {{ rec_build_days() }}
),

-- stage 1 and the parts of stage 2: the retirement covering each row, its saving and risk parts per quantity
-- (defines retired, retired_namespaces, retired_volumes, parted)
{{ rec_count_retired_and_parted(ref('int_container_requests_rightsized')) }}

-- stage 2's alternatives per Deployment, and what stages 1 and 2 count of each row
-- (defines sizing, rightsized, chosen, early)
{{ rec_count_sizing_alternatives(sizing_kinds, quantities) }}

-- stage 3's overlap: each workload's cost share per node pool, what stages 1 and 2 free on each pool
-- (defines container_pools, pool_shares, freed)
{{ rec_count_pool_overlap(ref('int_workload_hours_recorded'), ref('int_node_hours_recorded'), quantities) }}

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
