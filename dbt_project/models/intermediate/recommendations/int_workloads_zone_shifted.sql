-- grain: one row per (usage_date, cluster, namespace, controller_kind, controller, carbon_zone) that would emit at
-- least min_saving_co2e_g_per_month less in another carbon zone: the part of a multi-zone workload in each of its
-- zones is judged on its own.
-- Estimate: the same hourly energy x PUE at the other zone's landed intensity of the same hours, against the
-- actual operational CO2e of those hours. Not moved: DaemonSets (one pod per node by design) and controllers whose
-- pods mounted a claim in the window (a zonal volume pins them) or whose node selector or required node affinity
-- fixes their zone, region or node (rec_placement_pin_keys; known where the Kubernetes API is read). The target
-- must have room in every hour moved (its allocatable CPU and memory minus the requests already placed there hold
-- the workload's requests; each move is judged alone). A zone of the same cluster is preferred to another
-- cluster's; then the larger saving. Latency and data residency are not known here (docs/METHOD.md).
{%- set intensity_flags = ['is_global_default_intensity', 'is_intensity_partial', 'is_intensity_provider_estimated',
                           'is_region_default_intensity', 'is_zone_default_intensity'] %}
{%- set zone_flags = [] %}
{%- for col, code in rec_input_flags() %}
    {%- do zone_flags.append(('bool_or(w.' ~ col ~ ')' ~ (' or bool_or(other.' ~ col ~ ')' if col in intensity_flags
                                                           else ''), code)) %}
{%- endfor %}

with days as (
    {{ rec_build_days() }}
),

cluster_hours as (
    {{ rec_cluster_hours() }}
),

zone_hours as (
    select
        cluster, carbon_zone, hour_ts,
        avg(carbon_intensity_g_per_kwh) as intensity,
        sum(cpu_allocatable_cores * node_run_h) - sum(cpu_request_core_hours) as spare_cpu_core_hours,
        sum(ram_allocatable_bytes * node_run_h) - sum(ram_request_byte_hours) as spare_ram_byte_hours,
        {{ rec_flags_any() }}
    from {{ ref('int_node_hours_recorded') }}
    where carbon_zone is not null
    group by cluster, carbon_zone, hour_ts
),

workload_hours as (
    select
        days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.hour_ts, h.carbon_zone,
        sum(h.energy_kwh * h.pue) as energy_pue_kwh,
        sum(h.co2e_operational_g) as co2e_g,
        sum(coalesce(h.cpu_request_cores, 0) * h.run_h) as cpu_request_core_hours,
        sum(coalesce(h.ram_request_bytes, 0) * h.run_h) as ram_request_byte_hours,
        {{ rec_flags_any('h') }}
    from days
    {{ rec_window_join(ref('int_workload_hours_recorded'), 'h') }}
    where h.controller is not null and h.carbon_zone is not null and h.controller_kind <> 'DaemonSet'
    group by days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.hour_ts, h.carbon_zone
),

placement_bound as (
    select distinct days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller
    from days
    {{ rec_window_join(ref('int_workload_hours_recorded'), 'h') }}
    where h.mounts_volume or coalesce(h.pins_placement, false)
),

moved as (
    select
        w.usage_date, w.cluster, w.namespace, w.controller_kind, w.controller, w.carbon_zone,
        other.cluster as other_cluster, other.carbon_zone as other_zone,
        count(distinct cast(w.hour_ts as date)) as days_of_data,
        count(distinct w.hour_ts) as hours_covered,
        sum(w.co2e_g) as co2e_g,
        sum(w.energy_pue_kwh * other.intensity) as other_co2e_g,
        min(case when w.cpu_request_core_hours <= other.spare_cpu_core_hours
                  and w.ram_request_byte_hours <= other.spare_ram_byte_hours then 1 else 0 end) as fits,
        -- the workload's own input flags, and the target zone's intensity flags (its hours are priced in CO2e too)
        {{ reasons_string(zone_flags | sort(attribute=1)) }} as estimation_reasons
    from workload_hours as w
    join zone_hours as other
        on other.carbon_zone <> w.carbon_zone and other.hour_ts = w.hour_ts
    group by w.usage_date, w.cluster, w.namespace, w.controller_kind, w.controller, w.carbon_zone,
        other.cluster, other.carbon_zone
),

candidates as (
    select
        moved.*,
        {{ rec_per_month('moved.co2e_g - moved.other_co2e_g', 'cluster_hours.observed_hours') }}
            as saving_co2e_g_per_month
    from moved
    join cluster_hours on cluster_hours.usage_date = moved.usage_date and cluster_hours.cluster = moved.cluster
    left join placement_bound
        on placement_bound.usage_date = moved.usage_date and placement_bound.cluster = moved.cluster
        and placement_bound.namespace = moved.namespace and placement_bound.controller_kind = moved.controller_kind
        and placement_bound.controller = moved.controller
    where moved.fits = 1 and placement_bound.controller is null
),

best as (
    select
        *,
        row_number() over (partition by usage_date, cluster, namespace, controller_kind, controller, carbon_zone
                           order by case when other_cluster = cluster then 0 else 1 end asc,
                                    other_co2e_g - co2e_g asc, other_cluster asc, other_zone asc) as pick
    from candidates
    where saving_co2e_g_per_month >= {{ rec_param('min_saving_co2e_g_per_month') }}
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('carbon_shift_zone', 'namespace', 'controller_kind', 'controller',
        'cast(null as string)', "namespace || '/' || lower(controller_kind) || '/' || controller || '@' || carbon_zone",
        "case when other_cluster = cluster then 'Move it to the node pools in zone ' || other_zone
              || ' of this cluster (from zone ' || carbon_zone || ')'
              else 'Run it in cluster ' || other_cluster || ' (zone ' || other_zone || ') instead of zone '
              || carbon_zone end",
        [('carbon_zone', 'carbon_zone'), ('other_cluster', 'other_cluster'), ('other_zone', 'other_zone'),
         ('co2e_g_in_window', 'co2e_g'), ('other_co2e_g_in_window', 'other_co2e_g'),
         ('capacity_checked_hours', 'hours_covered'), ('placement_checked', "'daemonsets, mounted claims, node selectors and required node affinity'"),
         ('basis', "'estimate: the same hourly energy at the other zone''s landed intensity of the same hours'")]) }},
    {{ rec_closing_columns(saves_money=false) }}
from best
where pick = 1
