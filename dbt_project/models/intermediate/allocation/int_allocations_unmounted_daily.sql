-- grain: '__unmounted__' rows per (usage_date, cluster, namespace): volume cost with no pod mounting the claim
-- (claim namespace, or NULL) and LoadBalancer cost with no pod behind it (METHOD A7, A9), as rows of
-- marts.fct_allocation_daily (columns: macros/allocation_columns.sql). Their storage energy is charged at the
-- cluster-hour's energy-weighted intensity × PUE (the configured defaults with no node energy that hour).
with cluster_hour_intensity as (
    select
        cluster,
        hour_ts,
        sum(energy_kwh * carbon_intensity_g_per_kwh * pue) / nullif(sum(energy_kwh), 0) as intensity_x_pue
    from {{ ref('int_nodes_energy_hourly') }}
    group by cluster, hour_ts
),

unmounted_hourly as (
    select
        volumes.cluster,
        volumes.hour_ts,
        volumes.namespace,
        volumes.pv_cost,
        volumes.pv_byte_hours,
        -- the volume's bill adjustment on the part no pod paid for (issue 28)
        volumes.pv_cost * coalesce(reconciled.pv_adjustment_rate, 0) as pv_cost_adjustment,
        cast(0 as double) as load_balancer_cost,
        cast(0 as double) as load_balancer_cost_adjustment,
        volumes.energy_storage_kwh,
        volumes.energy_storage_kwh * coalesce(cluster_hour_intensity.intensity_x_pue,
            {{ default_intensity() }} * {{ default_pue() }})
            as co2e_operational_g,
        false as is_lb_endpoints_missing
    from {{ ref('int_volumes_allocated_hourly') }} as volumes
    left join cluster_hour_intensity
        on cluster_hour_intensity.cluster = volumes.cluster and cluster_hour_intensity.hour_ts = volumes.hour_ts
    left join {{ ref('int_volumes_reconciled_daily') }} as reconciled
        on reconciled.cluster = volumes.cluster and reconciled.usage_date = cast(volumes.hour_ts as date)
        and reconciled.pv = volumes.pv
    where volumes.pod_uid = '__unmounted__'
    union all
    -- the load balancer's bill adjustment on the part no pod paid for (issue 28)
    select lbs.cluster, lbs.hour_ts, lbs.namespace, 0.0, 0.0, 0.0, lbs.load_balancer_cost,
           lbs.load_balancer_cost * coalesce(reconciled.load_balancer_adjustment_rate, 0), 0.0, 0.0,
           coalesce(lbs.is_endpoints_missing, false)
    from {{ ref('int_load_balancers_allocated_hourly') }} as lbs
    left join {{ ref('int_load_balancers_reconciled_daily') }} as reconciled
        on reconciled.cluster = lbs.cluster and reconciled.usage_date = cast(lbs.hour_ts as date)
        and reconciled.namespace = lbs.namespace and reconciled.service = lbs.service
    where lbs.pod_uid = '__unmounted__'
),

unmounted_daily as (
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        namespace,
        min(hour_ts) as start_ts,
        max({{ dbt.dateadd('hour', 1, 'hour_ts') }}) as end_ts,
        sum(pv_byte_hours) as pv_byte_hours,
        sum(pv_cost) as pv_cost,
        sum(pv_cost_adjustment) as pv_cost_adjustment,
        sum(load_balancer_cost) as load_balancer_cost,
        sum(load_balancer_cost_adjustment) as load_balancer_cost_adjustment,
        sum(energy_storage_kwh) as energy_storage_kwh,
        sum(co2e_operational_g) as co2e_operational_g,
        {{ reasons_string([('bool_or(is_lb_endpoints_missing)', 'lb_endpoints_missing')]) }} as estimation_reasons
    from unmounted_hourly
    group by cast(hour_ts as date), cluster, namespace
)

select
    {{ allocation_row({
        'usage_date': 'u.usage_date', 'cluster': 'u.cluster', 'namespace': 'u.namespace',
        'pod': "'__unmounted__'", 'pod_uid': "'__unmounted__'", 'container': "'__unmounted__'",
        'allocation_kind': "'unmounted'",
        'allocation_name': "u.cluster || '/' || coalesce(u.namespace, '__unmounted__') || '/__unmounted__'",
        'namespace_labels': "coalesce(namespace_meta.namespace_labels, '{}')",
        'namespace_annotations': "coalesce(namespace_meta.namespace_annotations, '{}')",
        'start_ts': 'u.start_ts', 'end_ts': 'u.end_ts',
        'pv_byte_hours': 'u.pv_byte_hours', 'pv_cost': 'u.pv_cost', 'load_balancer_cost': 'u.load_balancer_cost',
        'pv_cost_adjustment': 'u.pv_cost_adjustment',
        'load_balancer_cost_adjustment': 'u.load_balancer_cost_adjustment',
        'energy_storage_kwh': 'u.energy_storage_kwh', 'co2e_operational_g': 'u.co2e_operational_g',
        'estimation_reasons': 'u.estimation_reasons',
    }) }}
from unmounted_daily as u
left join {{ ref('int_namespaces_metadata_daily') }} as namespace_meta
    on namespace_meta.cluster = u.cluster and namespace_meta.usage_date = u.usage_date
    and namespace_meta.namespace = u.namespace
