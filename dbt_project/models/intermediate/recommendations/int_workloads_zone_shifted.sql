-- grain: one row per (usage_date, cluster, namespace, controller_kind, controller) that would emit at least
-- min_saving_co2e_g_per_month less in another configured cluster's carbon zone.
-- Estimate: the same hourly energy x PUE at the other zone's landed intensity of the same hours, against the
-- actual operational CO2e of those hours; the greenest other zone is shown. Energy and embodied carbon are unchanged
-- (latency, data residency and capacity there are not judged).
with days as (
    {{ rec_build_days() }}
),

cluster_hours as (
    {{ rec_cluster_hours() }}
),

zone_hours as (
    select cluster, carbon_zone, hour_ts, avg(carbon_intensity_g_per_kwh) as intensity
    from {{ ref('int_node_hours_recorded') }}
    where carbon_zone is not null
    group by cluster, carbon_zone, hour_ts
),

workload_hours as (
    select
        days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.hour_ts, h.carbon_zone,
        sum(h.energy_kwh * h.pue) as energy_pue_kwh,
        sum(h.co2e_operational_g) as co2e_g,
        {{ rec_flags_any('h') }}
    from days
    {{ rec_window_join(ref('int_workload_hours_recorded'), 'h') }}
    where h.controller is not null and h.carbon_zone is not null
    group by days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.hour_ts, h.carbon_zone
),

moved as (
    select
        w.usage_date, w.cluster, w.namespace, w.controller_kind, w.controller,
        other.cluster as other_cluster, other.carbon_zone as other_zone,
        max(w.carbon_zone) as carbon_zone,
        count(distinct cast(w.hour_ts as date)) as days_of_data,
        count(distinct w.hour_ts) as hours_covered,
        sum(w.co2e_g) as co2e_g,
        sum(w.energy_pue_kwh * other.intensity) as other_co2e_g,
        {{ rec_reasons_agg() }} as estimation_reasons
    from workload_hours as w
    join zone_hours as other
        on other.cluster <> w.cluster and other.carbon_zone <> w.carbon_zone and other.hour_ts = w.hour_ts
    group by w.usage_date, w.cluster, w.namespace, w.controller_kind, w.controller, other.cluster, other.carbon_zone
),

best as (
    select
        moved.*,
        (moved.co2e_g - moved.other_co2e_g) * {{ hours_per_month() }} / cluster_hours.observed_hours
            as saving_co2e_g_per_month,
        row_number() over (partition by moved.usage_date, moved.cluster, moved.namespace, moved.controller_kind,
                                        moved.controller
                           order by moved.other_co2e_g - moved.co2e_g, moved.other_cluster, moved.other_zone) as pick
    from moved
    join cluster_hours on cluster_hours.usage_date = moved.usage_date and cluster_hours.cluster = moved.cluster
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('carbon_shift_zone', 'namespace', 'controller_kind', 'controller',
        'cast(null as string)', "namespace || '/' || lower(controller_kind) || '/' || controller",
        "'Run it in cluster ' || other_cluster || ' (zone ' || other_zone || ') instead of zone ' || carbon_zone",
        [('carbon_zone', 'carbon_zone'), ('other_cluster', 'other_cluster'), ('other_zone', 'other_zone'),
         ('co2e_g_in_window', 'co2e_g'), ('other_co2e_g_in_window', 'other_co2e_g'),
         ('basis', "'estimate: the same hourly energy at the other zone''s landed intensity of the same hours'")]) }},
    {{ rec_closing_columns(saves_money=false) }}
from best
where pick = 1 and saving_co2e_g_per_month >= {{ rec_param('min_saving_co2e_g_per_month') }}
