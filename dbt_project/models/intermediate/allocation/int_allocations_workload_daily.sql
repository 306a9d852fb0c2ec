-- grain: one row per (usage_date, cluster, node, namespace, pod_uid, container): the workload rows of
-- marts.fct_allocation_daily (columns: macros/allocation_columns.sql). Pod-level costs (PV, LB, network) are split
-- evenly over the pod's running containers; averages are time-weighted over the running hours (METHOD A14).
{%- set container_flags = reason_flags([
    'default_price', 'default_pue', 'embodied_fallback', 'global_default_intensity', 'gpu_power_estimated',
    'lb_pods_from_selector', 'no_egress_classification', 'no_instance_price', 'node_metrics_missing',
    'partial_intensity_coverage', 'provider_average_profile', 'provider_estimated_intensity',
    'region_default_intensity', 'unknown_instance_type', 'usage_above_capacity', 'usage_missing',
    'utilisation_capped', 'zone_default_intensity'
], aggregate=true) %}

with allocated as (
    -- the container-hours with their allocation and energy, read once (a view over int_containers_allocated_hourly)
    select * from {{ ref('int_containers_energy_hourly') }}
),

pod_container_counts as (
    {{ pod_container_counts() }}
),

pod_volumes as (
    select volumes.cluster, volumes.hour_ts, volumes.pod_uid,
           sum(volumes.pv_cost) as pv_cost, sum(volumes.pv_byte_hours) as pv_byte_hours,
           sum(volumes.energy_storage_kwh) as energy_storage_kwh,
           -- each volume's bill adjustment, in proportion to the cost the pod pays for it (issue 28)
           sum(volumes.pv_cost * coalesce(reconciled.pv_adjustment_rate, 0)) as pv_cost_adjustment
    from {{ ref('int_volumes_allocated_hourly') }} as volumes
    left join {{ ref('int_volumes_reconciled_daily') }} as reconciled
        on reconciled.cluster = volumes.cluster and reconciled.usage_date = cast(volumes.hour_ts as date)
        and reconciled.pv = volumes.pv
    where volumes.pod_uid <> '__unmounted__'
    group by volumes.cluster, volumes.hour_ts, volumes.pod_uid
),

pod_load_balancers as (
    select lbs.cluster, lbs.hour_ts, lbs.pod_uid, sum(lbs.load_balancer_cost) as load_balancer_cost,
           -- each load balancer's bill adjustment, in proportion to the cost the pod pays for it (issue 28)
           sum(lbs.load_balancer_cost * coalesce(reconciled.load_balancer_adjustment_rate, 0))
               as load_balancer_cost_adjustment,
           bool_or(lbs.is_pods_from_selector) as is_lb_pods_from_selector
    from {{ ref('int_load_balancers_allocated_hourly') }} as lbs
    left join {{ ref('int_load_balancers_reconciled_daily') }} as reconciled
        on reconciled.cluster = lbs.cluster and reconciled.usage_date = cast(lbs.hour_ts as date)
        and reconciled.namespace = lbs.namespace and reconciled.service = lbs.service
    where lbs.pod_uid <> '__unmounted__'
    group by lbs.cluster, lbs.hour_ts, lbs.pod_uid
),

pod_network as (
    select * from {{ ref('int_pods_network_hourly') }}
),

container_hours as (
    -- pod-level costs (PV, LB, network) split evenly over the pod's running containers
    select
        allocated.*,
        {{ per_container('coalesce(pod_volumes.energy_storage_kwh, 0)') }} as energy_storage_kwh,
        -- the container's operational CO2e with its pod's storage energy share
        allocated.co2e_operational_g
            + {{ per_container('coalesce(pod_volumes.energy_storage_kwh, 0)') }}
              * allocated.carbon_intensity_g_per_kwh * allocated.pue as co2e_operational_with_storage_g,
        {{ per_container('coalesce(pod_volumes.pv_cost, 0)') }} as pv_cost,
        {{ per_container('coalesce(pod_volumes.pv_byte_hours, 0)') }} as pv_byte_hours,
        {{ per_container('coalesce(pod_volumes.pv_cost_adjustment, 0)') }} as pv_cost_adjustment,
        {{ per_container('coalesce(pod_load_balancers.load_balancer_cost, 0)') }}
            as load_balancer_cost,
        {{ per_container('coalesce(pod_load_balancers.load_balancer_cost_adjustment, 0)') }}
            as load_balancer_cost_adjustment,
        coalesce(pod_load_balancers.is_lb_pods_from_selector, false) as is_lb_pods_from_selector,
        {{ per_container('pod_network.network_transfer_bytes') }} as network_transfer_bytes,
        {{ per_container('pod_network.network_receive_bytes') }} as network_receive_bytes,
        {{ per_container('coalesce(pod_network.network_cross_zone_cost, 0)') }}
            as network_cross_zone_cost,
        {{ per_container('coalesce(pod_network.network_cross_region_cost, 0)') }}
            as network_cross_region_cost,
        {{ per_container('coalesce(pod_network.network_internet_cost, 0)') }}
            as network_internet_cost,
        coalesce(pod_network.is_egress_unclassified, false) as is_egress_unclassified,
        {{ add_seconds('allocated.hour_ts', 'coalesce(allocated.run_start_s, 0)') }} as run_start_ts,
        {{ add_seconds('allocated.hour_ts', 'coalesce(allocated.run_end_s, allocated.run_h * 3600)') }} as run_end_ts
    from allocated
    join pod_container_counts
        on pod_container_counts.cluster = allocated.cluster and pod_container_counts.hour_ts = allocated.hour_ts
        and pod_container_counts.pod_uid = allocated.pod_uid
    left join pod_volumes
        on pod_volumes.cluster = allocated.cluster and pod_volumes.hour_ts = allocated.hour_ts
        and pod_volumes.pod_uid = allocated.pod_uid
    left join pod_load_balancers
        on pod_load_balancers.cluster = allocated.cluster and pod_load_balancers.hour_ts = allocated.hour_ts
        and pod_load_balancers.pod_uid = allocated.pod_uid
    left join pod_network
        on pod_network.cluster = allocated.cluster and pod_network.hour_ts = allocated.hour_ts
        and pod_network.pod_uid = allocated.pod_uid
),

workload_daily as (
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        node,
        namespace,
        max(pod) as pod,
        pod_uid,
        container,
        min(run_start_ts) as start_ts,
        max(run_end_ts) as end_ts,
        sum(run_h) * 60.0 as minutes,
        sum(cpu_core_hours) as cpu_core_hours,
        coalesce(sum(cpu_request_core_hours) / nullif(sum(run_h), 0), 0) as cpu_core_request_average,
        coalesce(sum(cpu_usage_core_hours) / nullif(sum(run_h), 0), 0) as cpu_core_usage_average,
        max(cpu_usage_max_cores) as cpu_core_usage_max,
        sum(cpu_cost) as cpu_cost,
        sum(gpu_hours) as gpu_hours,
        coalesce(sum(gpu_hours) / nullif(sum(run_h), 0), 0) as gpu_request_average,
        coalesce(sum(gpu_usage_hours) / nullif(sum(run_h), 0), 0) as gpu_usage_average,
        sum(gpu_cost) as gpu_cost,
        sum(ram_byte_hours) as ram_byte_hours,
        coalesce(sum(ram_request_byte_hours) / nullif(sum(run_h), 0), 0) as ram_byte_request_average,
        coalesce(sum(ram_usage_byte_hours) / nullif(sum(run_h), 0), 0) as ram_byte_usage_average,
        max(ram_usage_max_bytes) as ram_byte_usage_max,
        sum(ram_cost) as ram_cost,
        sum(pv_byte_hours) as pv_byte_hours,
        sum(pv_cost) as pv_cost,
        sum(pv_cost_adjustment) as pv_cost_adjustment,
        sum(network_transfer_bytes) as network_transfer_bytes,
        sum(network_receive_bytes) as network_receive_bytes,
        sum(network_cross_zone_cost) as network_cross_zone_cost,
        sum(network_cross_region_cost) as network_cross_region_cost,
        sum(network_internet_cost) as network_internet_cost,
        sum(load_balancer_cost) as load_balancer_cost,
        sum(load_balancer_cost_adjustment) as load_balancer_cost_adjustment,
        sum(energy_cpu_kwh) as energy_cpu_kwh,
        sum(energy_memory_kwh) as energy_memory_kwh,
        sum(energy_gpu_kwh) as energy_gpu_kwh,
        sum(energy_storage_kwh) as energy_storage_kwh,
        sum(co2e_operational_with_storage_g) as co2e_operational_g,
        sum(co2e_embodied_g) as co2e_embodied_g,
        sum((energy_cpu_kwh + energy_memory_kwh + energy_gpu_kwh + energy_storage_kwh) * carbon_intensity_g_per_kwh)
            as intensity_weight,
        sum((energy_cpu_kwh + energy_memory_kwh + energy_gpu_kwh + energy_storage_kwh) * pue) as pue_weight,
        avg(carbon_intensity_g_per_kwh) as intensity_plain_avg,
        avg(pue) as pue_plain_avg,
        false as idle_clamped,
        {{ reasons_string(container_flags) }} as estimation_reasons
    from container_hours
    group by cast(hour_ts as date), cluster, node, namespace, pod_uid, container
),

workload_rows as (
    select
        {{ allocation_row({
            'allocation_kind': "'workload'",
            'allocation_name': "w.cluster || '/' || coalesce(w.node, '') || '/' || w.namespace || '/' || w.pod || '/' || w.container",
            'controller_kind': 'lower(pod_meta.controller_kind)',
            'controller': 'pod_meta.controller_name',
            'provider_id': 'node_meta.provider_id',
            'labels': "coalesce(pod_meta.labels, '{}')",
            'annotations': "coalesce(pod_meta.annotations, '{}')",
            'namespace_labels': "coalesce(namespace_meta.namespace_labels, '{}')",
            'namespace_annotations': "coalesce(namespace_meta.namespace_annotations, '{}')",
            'node_labels': "coalesce(node_meta.node_labels, '{}')",
            'services': "coalesce(pod_services.services, '[]')",
            'cpu_cost_adjustment': 'w.cpu_cost * coalesce(reconciled.cpu_adjustment_rate, 0)',
            'ram_cost_adjustment': 'w.ram_cost * coalesce(reconciled.ram_adjustment_rate, 0)',
            'gpu_cost_adjustment': 'w.gpu_cost * coalesce(reconciled.gpu_adjustment_rate, 0)',
            'reconciliation_status': "coalesce(reconciled.reconciliation_status, 'no_resource_id')",
        }, rest='w') }}
    from workload_daily as w
    left join {{ ref('int_pods_metadata_daily') }} as pod_meta
        on pod_meta.cluster = w.cluster and pod_meta.usage_date = w.usage_date and pod_meta.pod_uid = w.pod_uid
    left join {{ ref('int_namespaces_metadata_daily') }} as namespace_meta
        on namespace_meta.cluster = w.cluster and namespace_meta.usage_date = w.usage_date
        and namespace_meta.namespace = w.namespace
    left join {{ ref('int_nodes_metadata_daily') }} as node_meta
        on node_meta.cluster = w.cluster and node_meta.usage_date = w.usage_date and node_meta.node = w.node
    left join {{ ref('int_pods_services_daily') }} as pod_services
        on pod_services.cluster = w.cluster and pod_services.usage_date = w.usage_date
        and pod_services.pod_uid = w.pod_uid
    left join {{ ref('int_nodes_reconciled_daily') }} as reconciled
        on reconciled.cluster = w.cluster and reconciled.usage_date = w.usage_date and reconciled.node = w.node
)

select * from workload_rows
