-- grain: one row per (usage_date, cluster, namespace, controller_kind, controller) Deployment with a steady request
-- and bursty usage that a HorizontalPodAutoscaler would size hour by hour.
-- Steady: the same replicas (at least 2) and CPU request per replica in every hour of the window (an HPA that acts
-- would have changed them), and no HorizontalPodAutoscaler of the cluster's latest Kubernetes API snapshot scales
-- it; a cluster whose latest snapshot did not list HPAs (API off or unreachable, the list refused) is not checked:
-- its rows say `hpa_not_checked`. Bursty: p95 / p50 of the Deployment's hourly CPU usage >= hpa_min_burst_ratio.
-- Per hour: needed = max(ceil(CPU usage / (request per replica x hpa_target_utilization)), ceil(summed memory
-- peaks / memory request per replica), 1). Proposed HPA: min = the least need, max = max(the largest need, the
-- replicas now), target = hpa_target_utilization. Saving = the replica-hours above the need, (replicas - needed) /
-- replicas of each hour's allocation cost, memory energy and CO2e (operational memory part and embodied share), net
-- over the window, per observed cluster-hour x 730. Computed on today's requests: it is the alternative of
-- rightsizing the Deployment's containers and scaling it down off-peak (int_recommendations_counted keeps the
-- larger).
with days as (
    {{ rec_build_days() }}
),

cluster_hours as (
    {{ rec_cluster_hours() }}
),

-- the latest Kubernetes API snapshot of each cluster up to the window's end: whether it listed HPAs, and the
-- Deployments they scale (the HPAs in that snapshot, not ones deleted before it)
listed as (
    select
        cluster,
        snapshot_hour_ts,
        {{ json_value_text('spec', 'listed') }} like '%"HorizontalPodAutoscaler"%' as lists_hpas
    from {{ ref('stg_kubernetes__objects') }}
    where kind = 'ListedKinds'
),

hpa_listed as (
    select cluster, bool_or(lists_hpas) as lists_hpas
    from listed
    group by cluster
),

scaled as (
    select distinct hpa.cluster, hpa.namespace, {{ json_text('hpa.spec', 'scaleTargetName') }} as controller
    from {{ ref('stg_kubernetes__objects') }} as hpa
    join listed on listed.cluster = hpa.cluster and listed.snapshot_hour_ts = hpa.snapshot_hour_ts
    where hpa.kind = 'HorizontalPodAutoscaler' and listed.lists_hpas
        and {{ json_text('hpa.spec', 'scaleTargetKind') }} = 'Deployment'
),

hourly as (
    select
        days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.hour_ts,
        sum(h.run_h) / count(distinct h.container) as pod_hours,
        sum(h.cpu_usage_core_hours) as cpu_usage_cores,
        sum(h.ram_usage_max_bytes) as ram_peak_bytes,
        sum(h.cpu_request_cores * h.run_h) as cpu_request_core_hours,
        sum(h.ram_request_bytes * h.run_h) as ram_request_byte_hours,
        sum(h.cpu_cost + h.ram_cost + h.gpu_cost) as cost,
        sum(h.energy_memory_kwh) as energy_kwh,
        sum(h.energy_memory_kwh * h.carbon_intensity_g_per_kwh * h.pue + h.co2e_embodied_g) as co2e_g,
        bool_or(h.is_usage_missing) as is_usage_missing,
        {{ rec_flags_any('h') }}
    from days
    {{ rec_window_join(ref('int_workload_hours_recorded'), 'h') }}
    where h.controller_kind = 'Deployment'
    group by days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.hour_ts
),

needs as (
    select
        *,
        cast(round(pod_hours) as integer) as replicas,
        cpu_request_core_hours / nullif(pod_hours, 0) as cpu_request_per_replica,
        greatest(
            ceil(cpu_usage_cores * pod_hours
                 / nullif(cpu_request_core_hours * {{ rec_param('hpa_target_utilization') }}, 0) - 1e-9),
            ceil(ram_peak_bytes * pod_hours / nullif(ram_request_byte_hours, 0) - 1e-9),
            1) as needed
    from hourly
),

-- whether the cluster's latest snapshot listed HPAs (else its rows say hpa_not_checked)
needs_checked as (
    select needs.*, coalesce(hpa_listed.lists_hpas, false) as is_hpa_checked
    from needs
    left join hpa_listed on hpa_listed.cluster = needs.cluster
),

controllers as (
    select
        usage_date, cluster, namespace, controller_kind, controller,
        count(distinct cast(hour_ts as date)) as days_of_data,
        count(distinct hour_ts) as hours_covered,
        min(replicas) as replicas,
        max(replicas) as replicas_max,
        min(cpu_request_per_replica) as cpu_request_min,
        max(cpu_request_per_replica) as cpu_request_max,
        {{ quantile_cont('cpu_usage_cores', 0.5) }} as cpu_usage_p50_cores,
        {{ quantile_cont('cpu_usage_cores', 0.95) }} as cpu_usage_p95_cores,
        min(needed) as min_replicas,
        max(needed) as needed_max,
        sum((replicas - needed) / pod_hours * cost) as cost,
        sum((replicas - needed) / pod_hours * energy_kwh) as energy_kwh,
        sum((replicas - needed) / pod_hours * co2e_g) as co2e_g,
        sum(replicas - needed) as replica_hours_above_need,
        {{ rec_reasons_agg([('bool_or(is_usage_missing)', 'usage_missing'),
                            ('not bool_or(is_hpa_checked)', 'hpa_not_checked')]) }} as estimation_reasons,
        bool_or(is_hpa_checked) as hpa_checked
    from needs_checked
    where pod_hours > 0
    group by usage_date, cluster, namespace, controller_kind, controller
),

flagged as (
    select
        controllers.*,
        greatest(controllers.needed_max, controllers.replicas) as max_replicas,
        {{ rec_monthly_savings('controllers') }}
    from controllers
    join cluster_hours
        on cluster_hours.usage_date = controllers.usage_date and cluster_hours.cluster = controllers.cluster
    left join scaled
        on scaled.cluster = controllers.cluster and scaled.namespace = controllers.namespace
        and scaled.controller = controllers.controller
    where scaled.controller is null and controllers.replicas >= 2 and controllers.replicas_max = controllers.replicas
        and controllers.cpu_request_max <= controllers.cpu_request_min * 1.000001
        and controllers.cpu_usage_p50_cores > 0
        and controllers.cpu_usage_p95_cores
        >= controllers.cpu_usage_p50_cores * {{ rec_param('hpa_min_burst_ratio') }}
        and controllers.cost > 0
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('hpa_candidate', 'namespace', 'controller_kind', 'controller',
        'cast(null as string)', "namespace || '/' || lower(controller_kind) || '/' || controller",
        "'Add a HorizontalPodAutoscaler: min ' || " ~ rec_int_text('min_replicas') ~ " || ', max ' || "
         ~ rec_int_text('max_replicas') ~ " || ' replicas, target ' || "
         ~ rec_int_text(rec_param('hpa_target_utilization') ~ ' * 100') ~ " || '% CPU (now a fixed ' || "
         ~ rec_int_text('replicas') ~ " || ')'",
        [('replicas', 'replicas'), ('min_replicas', 'min_replicas'), ('max_replicas', 'max_replicas'),
         ('target_cpu_utilization', rec_param('hpa_target_utilization')),
         ('cpu_request_per_replica_cores', 'cpu_request_min'), ('cpu_usage_p50_cores', 'cpu_usage_p50_cores'),
         ('cpu_usage_p95_cores', 'cpu_usage_p95_cores'),
         ('burst_ratio', 'cpu_usage_p95_cores / cpu_usage_p50_cores'),
         ('min_burst_ratio', rec_param('hpa_min_burst_ratio')),
         ('replica_hours_above_need', 'replica_hours_above_need'),
         ('hpa_checked', 'hpa_checked'),
         ('basis', "case when hpa_checked then 'No HorizontalPodAutoscaler of the latest Kubernetes API snapshot "
                   "scales it, and the replicas did not change in the window' else 'HorizontalPodAutoscalers are "
                   "not in the Kubernetes API snapshot: whether one exists was not checked (the replicas did not "
                   "change in the window)' end")]) }},
    {{ rec_closing_columns() }}
from flagged
