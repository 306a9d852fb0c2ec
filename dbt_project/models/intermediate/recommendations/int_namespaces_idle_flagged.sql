-- grain: one row per (usage_date, cluster, namespace) idle over the whole look-back window
-- A namespace (not kube-*) observed on every day of the window whose pods together averaged under
-- abandoned_max_cpu_cores of CPU and under abandoned_max_network_bytes_per_s of traffic (sent + received): the
-- thresholds of one abandoned replica, for the whole namespace. Deleting it saves all its containers' cost, energy
-- and carbon (operational and embodied), per observed cluster-hour x 730; its volumes are not counted here.
with days as (
    {{ rec_build_days() }}
),

cluster_hours as (
    {{ rec_cluster_hours() }}
),

namespaces as (
    select
        days.usage_date, h.cluster, h.namespace,
        count(distinct cast(h.hour_ts as date)) as days_of_data,
        count(distinct h.hour_ts) as hours_covered,
        count(distinct h.pod_uid) as pods,
        count(distinct h.controller_kind || '/' || h.controller) as controllers,
        sum(h.cpu_usage_core_hours) / count(distinct h.hour_ts) as cpu_cores,
        sum(h.network_bytes) / (count(distinct h.hour_ts) * 3600) as network_bytes_per_s,
        sum(h.cpu_cost + h.ram_cost + h.gpu_cost) as cost,
        sum(h.energy_kwh) as energy_kwh,
        sum(h.co2e_operational_g + h.co2e_embodied_g) as co2e_g,
        {{ rec_reasons_agg([('bool_or(h.is_usage_missing)', 'usage_missing')]) }} as estimation_reasons
    from days
    {{ rec_window_join(ref('int_workload_hours_recorded'), 'h') }}
    where h.namespace not like 'kube-%'
    group by days.usage_date, h.cluster, h.namespace
),

flagged as (
    select
        namespaces.*,
        {{ rec_monthly_savings('namespaces') }}
    from namespaces
    join cluster_hours
        on cluster_hours.usage_date = namespaces.usage_date and cluster_hours.cluster = namespaces.cluster
    where namespaces.days_of_data >= {{ rec_window_days() }}
        and {{ rec_is_abandoned('namespaces.cpu_cores', 'namespaces.network_bytes_per_s') }}
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('idle_namespace', 'namespace', 'cast(null as string)', 'cast(null as string)',
        'cast(null as string)', 'namespace',
        "'Delete namespace ' || namespace || ' or scale it to zero: its ' || cast(pods as string)
         || case when pods = 1 then ' pod used ' else ' pods used ' end || " ~ rec_int_text('cpu_cores * 1000000') ~ " || ' micro-cores of CPU and '
         || " ~ rec_int_text('network_bytes_per_s') ~ " || ' B/s of traffic on average, every day of the window'",
        [('cpu_cores', 'cpu_cores'), ('network_bytes_per_s', 'network_bytes_per_s'), ('pods', 'pods'),
         ('controllers', 'controllers')] + rec_abandoned_evidence()) }},
    {{ rec_closing_columns() }}
from flagged
