-- grain: one row per (usage_date, cluster, namespace, controller_kind, controller) that looks abandoned
-- Deployments and StatefulSets whose replicas averaged under abandoned_max_cpu_cores of CPU and under
-- abandoned_max_network_bytes_per_s of traffic (sent + received) over the look-back window. Removing them saves
-- all their cost, energy and carbon (operational and embodied), per observed cluster-hour x 730.
with days as (
    {{ rec_build_days() }}
),

cluster_hours as (
    {{ rec_cluster_hours() }}
),

pod_hours as (
    select
        days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.hour_ts, h.pod_uid,
        max(h.run_h) as run_h,
        sum(h.cpu_usage_core_hours) as cpu_usage_core_hours,
        sum(h.network_bytes) as network_bytes,
        sum(h.cpu_cost + h.ram_cost + h.gpu_cost) as cost,
        sum(h.energy_kwh) as energy_kwh,
        sum(h.co2e_operational_g + h.co2e_embodied_g) as co2e_g,
        bool_or(h.is_usage_missing) as is_usage_missing,
        {{ rec_flags_any('h') }}
    from days
    {{ rec_window_join(ref('int_workload_hours_recorded'), 'h') }}
    where h.controller_kind in ('Deployment', 'StatefulSet')
    group by days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.hour_ts, h.pod_uid
),

controllers as (
    select
        usage_date, cluster, namespace, controller_kind, controller,
        count(distinct cast(hour_ts as date)) as days_of_data,
        count(distinct hour_ts) as hours_covered,
        sum(cpu_usage_core_hours) / nullif(sum(run_h), 0) as cpu_cores_per_replica,
        sum(network_bytes) / nullif(sum(run_h) * 3600, 0) as network_bytes_per_s_per_replica,
        sum(run_h) / count(distinct hour_ts) as replicas,
        sum(cost) as cost,
        sum(energy_kwh) as energy_kwh,
        sum(co2e_g) as co2e_g,
        {{ rec_reasons_agg([('bool_or(is_usage_missing)', 'usage_missing')]) }} as estimation_reasons
    from pod_hours
    group by usage_date, cluster, namespace, controller_kind, controller
),

flagged as (
    select
        controllers.*,
        {{ rec_monthly_savings('controllers') }}
    from controllers
    join cluster_hours
        on cluster_hours.usage_date = controllers.usage_date and cluster_hours.cluster = controllers.cluster
    where {{ rec_is_abandoned('controllers.cpu_cores_per_replica', 'controllers.network_bytes_per_s_per_replica') }}
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('abandoned_workload', 'namespace', 'controller_kind', 'controller',
        'cast(null as string)', "namespace || '/' || lower(controller_kind) || '/' || controller",
        "'Scale ' || lower(controller_kind) || ' ' || controller || ' to zero or delete it: its replicas used '
         || " ~ rec_int_text('cpu_cores_per_replica * 1000000') ~ " || ' micro-cores of CPU and '
         || " ~ rec_int_text('network_bytes_per_s_per_replica') ~ " || ' B/s of traffic on average'",
        [('cpu_cores_per_replica', 'cpu_cores_per_replica'),
         ('network_bytes_per_s_per_replica', 'network_bytes_per_s_per_replica'), ('replicas', 'replicas')]
        + rec_abandoned_evidence()) }},
    {{ rec_closing_columns() }}
from flagged
