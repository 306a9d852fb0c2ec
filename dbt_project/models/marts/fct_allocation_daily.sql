-- grain: one row per (usage_date, cluster, node, namespace, pod_uid, container), plus one '__idle__' row per
-- (usage_date, cluster, node) and '__unmounted__' rows per (usage_date, cluster, namespace).
-- Kubecost allocation fields in snake case, with energy and carbon beside cost; before any sharing.
{%- set container_flags = [
    ('bool_or(is_default_price)', 'default_price'),
    ('bool_or(is_default_pue)', 'default_pue'),
    ('bool_or(is_embodied_fallback)', 'embodied_fallback'),
    ('bool_or(is_global_default_intensity)', 'global_default_intensity'),
    ('bool_or(is_gpu_power_estimated)', 'gpu_power_estimated'),
    ('bool_or(is_lb_pods_from_selector)', 'lb_pods_from_selector'),
    ('bool_or(is_egress_unclassified)', 'no_egress_classification'),
    ('bool_or(is_instance_price_missing)', 'no_instance_price'),
    ('bool_or(is_node_missing)', 'node_metrics_missing'),
    ('bool_or(is_intensity_partial)', 'partial_intensity_coverage'),
    ('bool_or(is_provider_average_profile)', 'provider_average_profile'),
    ('bool_or(is_intensity_provider_estimated)', 'provider_estimated_intensity'),
    ('bool_or(is_region_default_intensity)', 'region_default_intensity'),
    ('bool_or(is_unknown_instance_type)', 'unknown_instance_type'),
    ('bool_or(is_usage_above_capacity)', 'usage_above_capacity'),
    ('bool_or(is_usage_missing)', 'usage_missing'),
    ('bool_or(is_utilisation_capped)', 'utilisation_capped'),
    ('bool_or(is_zone_default_intensity)', 'zone_default_intensity'),
] %}
{%- set idle_flags = [
    ('bool_or(is_default_price)', 'default_price'),
    ('bool_or(is_default_pue)', 'default_pue'),
    ('bool_or(is_embodied_fallback)', 'embodied_fallback'),
    ('bool_or(is_global_default_intensity)', 'global_default_intensity'),
    ('bool_or(idle_clamped)', 'idle_clamped'),
    ('bool_or(is_instance_price_missing)', 'no_instance_price'),
    ('bool_or(is_node_idle and node_run_h > 0)', 'node_idle_energy'),
    ('bool_or(is_intensity_partial)', 'partial_intensity_coverage'),
    ('bool_or(is_provider_average_profile)', 'provider_average_profile'),
    ('bool_or(is_intensity_provider_estimated)', 'provider_estimated_intensity'),
    ('bool_or(is_region_default_intensity)', 'region_default_intensity'),
    ('bool_or(is_unknown_instance_type)', 'unknown_instance_type'),
    ('bool_or(is_zone_default_intensity)', 'zone_default_intensity'),
] %}
{{ config(unique_key=['usage_date', 'cluster']) }}

with allocated as (
    select * from {{ ref('int_containers_allocated_hourly') }}
),

energy as (
    select * from {{ ref('int_containers_energy_hourly') }}
),

pod_container_counts as (
    select cluster, hour_ts, pod_uid, count(*) as containers_in_pod
    from allocated
    group by cluster, hour_ts, pod_uid
),

pod_volumes as (
    select cluster, hour_ts, pod_uid,
           sum(pv_cost) as pv_cost, sum(pv_byte_hours) as pv_byte_hours, sum(energy_storage_kwh) as energy_storage_kwh
    from {{ ref('int_volumes_allocated_hourly') }}
    where pod_uid <> '__unmounted__'
    group by cluster, hour_ts, pod_uid
),

pod_load_balancers as (
    select cluster, hour_ts, pod_uid, sum(load_balancer_cost) as load_balancer_cost,
           bool_or(is_pods_from_selector) as is_lb_pods_from_selector
    from {{ ref('int_load_balancers_allocated_hourly') }}
    where pod_uid <> '__unmounted__'
    group by cluster, hour_ts, pod_uid
),

pod_network as (
    select * from {{ ref('int_pods_network_hourly') }}
),

container_hours as (
    -- pod-level costs (PV, LB, network) split evenly over the pod's running containers
    select
        allocated.*,
        energy.energy_cpu_kwh,
        energy.energy_memory_kwh,
        energy.energy_gpu_kwh,
        coalesce(pod_volumes.energy_storage_kwh, 0) / pod_container_counts.containers_in_pod as energy_storage_kwh,
        energy.co2e_operational_g
            + coalesce(pod_volumes.energy_storage_kwh, 0) / pod_container_counts.containers_in_pod
              * energy.carbon_intensity_g_per_kwh * energy.pue as co2e_operational_g,
        energy.co2e_embodied_g,
        energy.carbon_intensity_g_per_kwh,
        energy.pue,
        energy.is_unknown_instance_type,
        energy.is_provider_average_profile,
        energy.is_zone_default_intensity,
        energy.is_region_default_intensity,
        energy.is_global_default_intensity,
        energy.is_intensity_provider_estimated,
        energy.is_intensity_partial,
        energy.is_default_pue,
        energy.is_embodied_fallback,
        energy.is_gpu_power_estimated,
        energy.is_utilisation_capped,
        coalesce(pod_volumes.pv_cost, 0) / pod_container_counts.containers_in_pod as pv_cost,
        coalesce(pod_volumes.pv_byte_hours, 0) / pod_container_counts.containers_in_pod as pv_byte_hours,
        coalesce(pod_load_balancers.load_balancer_cost, 0) / pod_container_counts.containers_in_pod
            as load_balancer_cost,
        coalesce(pod_load_balancers.is_lb_pods_from_selector, false) as is_lb_pods_from_selector,
        pod_network.network_transfer_bytes / pod_container_counts.containers_in_pod as network_transfer_bytes,
        pod_network.network_receive_bytes / pod_container_counts.containers_in_pod as network_receive_bytes,
        coalesce(pod_network.network_cross_zone_cost, 0) / pod_container_counts.containers_in_pod
            as network_cross_zone_cost,
        coalesce(pod_network.network_cross_region_cost, 0) / pod_container_counts.containers_in_pod
            as network_cross_region_cost,
        coalesce(pod_network.network_internet_cost, 0) / pod_container_counts.containers_in_pod
            as network_internet_cost,
        coalesce(pod_network.is_egress_unclassified, false) as is_egress_unclassified,
        {{ add_seconds('allocated.hour_ts', 'coalesce(allocated.run_start_s, 0)') }} as run_start_ts,
        {{ add_seconds('allocated.hour_ts', 'coalesce(allocated.run_end_s, allocated.run_h * 3600)') }} as run_end_ts
    from allocated
    join energy
        on energy.cluster = allocated.cluster and energy.hour_ts = allocated.hour_ts
        and energy.pod_uid = allocated.pod_uid and energy.container = allocated.container
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
        sum(cpu_request_core_hours) / nullif(sum(run_h), 0) as cpu_core_request_average,
        sum(cpu_usage_core_hours) / nullif(sum(run_h), 0) as cpu_core_usage_average,
        max(cpu_usage_max_cores) as cpu_core_usage_max,
        sum(cpu_cost) as cpu_cost,
        sum(gpu_hours) as gpu_hours,
        sum(gpu_hours) / nullif(sum(run_h), 0) as gpu_request_average,
        sum(gpu_usage_hours) / nullif(sum(run_h), 0) as gpu_usage_average,
        sum(gpu_cost) as gpu_cost,
        sum(ram_byte_hours) as ram_byte_hours,
        sum(ram_request_byte_hours) / nullif(sum(run_h), 0) as ram_byte_request_average,
        sum(ram_usage_byte_hours) / nullif(sum(run_h), 0) as ram_byte_usage_average,
        max(ram_usage_max_bytes) as ram_byte_usage_max,
        sum(ram_cost) as ram_cost,
        sum(pv_byte_hours) as pv_byte_hours,
        sum(pv_cost) as pv_cost,
        sum(network_transfer_bytes) as network_transfer_bytes,
        sum(network_receive_bytes) as network_receive_bytes,
        sum(network_cross_zone_cost) as network_cross_zone_cost,
        sum(network_cross_region_cost) as network_cross_region_cost,
        sum(network_internet_cost) as network_internet_cost,
        sum(load_balancer_cost) as load_balancer_cost,
        sum(energy_cpu_kwh) as energy_cpu_kwh,
        sum(energy_memory_kwh) as energy_memory_kwh,
        sum(energy_gpu_kwh) as energy_gpu_kwh,
        sum(energy_storage_kwh) as energy_storage_kwh,
        sum(co2e_operational_g) as co2e_operational_g,
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

idle_daily as (
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        node,
        min(hour_ts) as start_ts,
        max({{ add_seconds('hour_ts', 'node_run_h * 3600') }}) as end_ts,
        sum(node_run_h) * 60.0 as minutes,
        sum(idle_cpu_core_hours) as cpu_core_hours,
        sum(idle_cpu_cost) as cpu_cost,
        sum(idle_gpu_hours) as gpu_hours,
        sum(idle_gpu_cost) as gpu_cost,
        sum(idle_ram_byte_hours) as ram_byte_hours,
        sum(idle_ram_cost) as ram_cost,
        sum(greatest(idle_cpu_energy_j, 0)) / 3.6e6 as energy_cpu_kwh,
        sum(greatest(idle_memory_energy_j, 0)) / 3.6e6 as energy_memory_kwh,
        sum(greatest(idle_gpu_energy_j, 0)) / 3.6e6 as energy_gpu_kwh,
        sum(idle_co2e_operational_g) as co2e_operational_g,
        sum(idle_co2e_embodied_g) as co2e_embodied_g,
        sum(idle_energy_j / 3.6e6 * carbon_intensity_g_per_kwh) as intensity_weight,
        sum(idle_energy_j / 3.6e6 * pue) as pue_weight,
        avg(carbon_intensity_g_per_kwh) as intensity_plain_avg,
        avg(pue) as pue_plain_avg,
        bool_or(idle_clamped) as idle_clamped,
        {{ reasons_string(idle_flags) }} as estimation_reasons
    from {{ ref('int_nodes_costed_hourly') }}
    group by cast(hour_ts as date), cluster, node
),

cluster_hour_intensity as (
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
        cast(0 as double) as load_balancer_cost,
        volumes.energy_storage_kwh,
        volumes.energy_storage_kwh * coalesce(cluster_hour_intensity.intensity_x_pue,
            {{ sql_number(var('default_intensity_g_per_kwh', 500)) }} * {{ sql_number(var('default_pue', 1.3)) }})
            as co2e_operational_g,
        false as is_lb_endpoints_missing
    from {{ ref('int_volumes_allocated_hourly') }} as volumes
    left join cluster_hour_intensity
        on cluster_hour_intensity.cluster = volumes.cluster and cluster_hour_intensity.hour_ts = volumes.hour_ts
    where volumes.pod_uid = '__unmounted__'
    union all
    select cluster, hour_ts, namespace, 0.0, 0.0, load_balancer_cost, 0.0, 0.0,
           coalesce(is_endpoints_missing, false)
    from {{ ref('int_load_balancers_allocated_hourly') }}
    where pod_uid = '__unmounted__'
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
        sum(load_balancer_cost) as load_balancer_cost,
        sum(energy_storage_kwh) as energy_storage_kwh,
        sum(co2e_operational_g) as co2e_operational_g,
        {{ reasons_string([('bool_or(is_lb_endpoints_missing)', 'lb_endpoints_missing')]) }} as estimation_reasons
    from unmounted_hourly
    group by cast(hour_ts as date), cluster, namespace
),

pod_meta as (
    select * from (
        select
            pods.cluster,
            cast(pods.hour_ts as date) as usage_date,
            pods.pod_uid,
            coalesce(pods.owner_kind, k8s_pod.owner_kind) as owner_kind,
            coalesce(pods.owner_name, k8s_pod.owner_name) as owner_name,
            -- the metrics' resolved controller, else the API's owner chain (ReplicaSet → Deployment, Job → CronJob)
            coalesce(pods.controller_kind, k8s_owner.owner_kind, k8s_pod.owner_kind) as controller_kind,
            coalesce(pods.controller_name, k8s_owner.owner_name, k8s_pod.owner_name) as controller_name,
            coalesce(k8s_pod.labels, pods.labels) as labels,
            coalesce(k8s_pod.annotations, pods.annotations) as annotations,
            row_number() over (
                partition by pods.cluster, cast(pods.hour_ts as date), pods.pod_uid order by pods.hour_ts desc
            ) as recency
        from {{ ref('stg_metrics__pod_hours') }} as pods
        left join {{ ref('stg_kubernetes__objects') }} as k8s_pod
            on k8s_pod.cluster = pods.cluster and k8s_pod.kind = 'Pod' and k8s_pod.uid = pods.pod_uid
        left join {{ ref('stg_kubernetes__objects') }} as k8s_owner
            on k8s_owner.cluster = k8s_pod.cluster and k8s_owner.uid = k8s_pod.owner_uid
            and k8s_owner.kind in ('ReplicaSet', 'Job')
    ) as ranked
    where recency = 1
),

namespace_meta as (
    select * from (
        select
            cluster,
            cast(hour_ts as date) as usage_date,
            namespace,
            namespace_labels,
            namespace_annotations,
            row_number() over (partition by cluster, cast(hour_ts as date), namespace order by hour_ts desc) as recency
        from {{ ref('stg_metrics__namespace_hours') }}
    ) as ranked
    where recency = 1
),

node_meta as (
    select * from (
        select
            nodes.cluster,
            cast(nodes.hour_ts as date) as usage_date,
            nodes.node,
            nodes.provider_id,
            nodes.node_labels,
            row_number() over (
                partition by nodes.cluster, cast(nodes.hour_ts as date), nodes.node order by nodes.hour_ts desc
            ) as recency
        from {{ ref('int_nodes_enriched_hourly') }} as nodes
    ) as ranked
    where recency = 1
),

pod_services as (
    -- the services that select the pod: from the metrics, plus LoadBalancers mapped by their snapshot selector
    select
        cluster,
        cast(hour_ts as date) as usage_date,
        pod_uid,
        {{ json_array_agg_distinct('service') }} as services
    from (
        select cluster, hour_ts, pod_uid, service
        from {{ ref('stg_metrics__service_hours') }}
        where pod_uid is not null
        union all
        select cluster, hour_ts, pod_uid, service
        from {{ ref('int_load_balancers_allocated_hourly') }}
        where is_pods_from_selector
    ) as pod_service_hours
    group by cluster, cast(hour_ts as date), pod_uid
),

workload_rows as (
    select
        w.usage_date,
        w.cluster,
        w.node,
        w.namespace,
        w.pod,
        w.pod_uid,
        w.container,
        'workload' as allocation_kind,
        w.cluster || '/' || coalesce(w.node, '') || '/' || w.namespace || '/' || w.pod || '/' || w.container
            as allocation_name,
        lower(pod_meta.controller_kind) as controller_kind,
        pod_meta.controller_name as controller,
        node_meta.provider_id,
        coalesce(pod_meta.labels, '{}') as labels,
        coalesce(pod_meta.annotations, '{}') as annotations,
        coalesce(namespace_meta.namespace_labels, '{}') as namespace_labels,
        coalesce(namespace_meta.namespace_annotations, '{}') as namespace_annotations,
        coalesce(node_meta.node_labels, '{}') as node_labels,
        coalesce(pod_services.services, '[]') as services,
        w.start_ts,
        w.end_ts,
        w.minutes,
        w.cpu_core_hours,
        w.cpu_core_request_average,
        w.cpu_core_usage_average,
        w.cpu_core_usage_max,
        w.cpu_cost,
        w.gpu_hours,
        w.gpu_request_average,
        w.gpu_usage_average,
        w.gpu_cost,
        w.ram_byte_hours,
        w.ram_byte_request_average,
        w.ram_byte_usage_average,
        w.ram_byte_usage_max,
        w.ram_cost,
        w.pv_byte_hours,
        w.pv_cost,
        w.network_transfer_bytes,
        w.network_receive_bytes,
        w.network_cross_zone_cost,
        w.network_cross_region_cost,
        w.network_internet_cost,
        w.load_balancer_cost,
        w.energy_cpu_kwh,
        w.energy_memory_kwh,
        w.energy_gpu_kwh,
        w.energy_storage_kwh,
        w.co2e_operational_g,
        w.co2e_embodied_g,
        w.intensity_weight,
        w.pue_weight,
        w.intensity_plain_avg,
        w.pue_plain_avg,
        w.idle_clamped,
        w.estimation_reasons
    from workload_daily as w
    left join pod_meta
        on pod_meta.cluster = w.cluster and pod_meta.usage_date = w.usage_date and pod_meta.pod_uid = w.pod_uid
    left join namespace_meta
        on namespace_meta.cluster = w.cluster and namespace_meta.usage_date = w.usage_date
        and namespace_meta.namespace = w.namespace
    left join node_meta
        on node_meta.cluster = w.cluster and node_meta.usage_date = w.usage_date and node_meta.node = w.node
    left join pod_services
        on pod_services.cluster = w.cluster and pod_services.usage_date = w.usage_date
        and pod_services.pod_uid = w.pod_uid
),

idle_rows as (
    select
        i.usage_date,
        i.cluster,
        i.node,
        cast(null as varchar) as namespace,
        '__idle__' as pod,
        '__idle__' as pod_uid,
        '__idle__' as container,
        'idle' as allocation_kind,
        i.cluster || '/' || i.node || '/__idle__' as allocation_name,
        cast(null as varchar) as controller_kind,
        cast(null as varchar) as controller,
        node_meta.provider_id,
        '{}' as labels,
        '{}' as annotations,
        '{}' as namespace_labels,
        '{}' as namespace_annotations,
        coalesce(node_meta.node_labels, '{}') as node_labels,
        '[]' as services,
        i.start_ts,
        i.end_ts,
        i.minutes,
        i.cpu_core_hours,
        cast(0 as double) as cpu_core_request_average,
        cast(0 as double) as cpu_core_usage_average,
        cast(null as double) as cpu_core_usage_max,
        i.cpu_cost,
        i.gpu_hours,
        cast(0 as double) as gpu_request_average,
        cast(0 as double) as gpu_usage_average,
        i.gpu_cost,
        i.ram_byte_hours,
        cast(0 as double) as ram_byte_request_average,
        cast(0 as double) as ram_byte_usage_average,
        cast(null as double) as ram_byte_usage_max,
        i.ram_cost,
        cast(0 as double) as pv_byte_hours,
        cast(0 as double) as pv_cost,
        cast(null as double) as network_transfer_bytes,
        cast(null as double) as network_receive_bytes,
        cast(0 as double) as network_cross_zone_cost,
        cast(0 as double) as network_cross_region_cost,
        cast(0 as double) as network_internet_cost,
        cast(0 as double) as load_balancer_cost,
        i.energy_cpu_kwh,
        i.energy_memory_kwh,
        i.energy_gpu_kwh,
        cast(0 as double) as energy_storage_kwh,
        i.co2e_operational_g,
        i.co2e_embodied_g,
        i.intensity_weight,
        i.pue_weight,
        i.intensity_plain_avg,
        i.pue_plain_avg,
        i.idle_clamped,
        i.estimation_reasons
    from idle_daily as i
    left join node_meta
        on node_meta.cluster = i.cluster and node_meta.usage_date = i.usage_date and node_meta.node = i.node
),

unmounted_rows as (
    select
        u.usage_date,
        u.cluster,
        cast(null as varchar) as node,
        u.namespace,
        '__unmounted__' as pod,
        '__unmounted__' as pod_uid,
        '__unmounted__' as container,
        'unmounted' as allocation_kind,
        u.cluster || '/' || coalesce(u.namespace, '__unmounted__') || '/__unmounted__' as allocation_name,
        cast(null as varchar) as controller_kind,
        cast(null as varchar) as controller,
        cast(null as varchar) as provider_id,
        '{}' as labels,
        '{}' as annotations,
        coalesce(namespace_meta.namespace_labels, '{}') as namespace_labels,
        coalesce(namespace_meta.namespace_annotations, '{}') as namespace_annotations,
        '{}' as node_labels,
        '[]' as services,
        u.start_ts,
        u.end_ts,
        cast(0 as double) as minutes,
        cast(0 as double) as cpu_core_hours,
        cast(0 as double) as cpu_core_request_average,
        cast(0 as double) as cpu_core_usage_average,
        cast(null as double) as cpu_core_usage_max,
        cast(0 as double) as cpu_cost,
        cast(0 as double) as gpu_hours,
        cast(0 as double) as gpu_request_average,
        cast(0 as double) as gpu_usage_average,
        cast(0 as double) as gpu_cost,
        cast(0 as double) as ram_byte_hours,
        cast(0 as double) as ram_byte_request_average,
        cast(0 as double) as ram_byte_usage_average,
        cast(null as double) as ram_byte_usage_max,
        cast(0 as double) as ram_cost,
        u.pv_byte_hours,
        u.pv_cost,
        cast(null as double) as network_transfer_bytes,
        cast(null as double) as network_receive_bytes,
        cast(0 as double) as network_cross_zone_cost,
        cast(0 as double) as network_cross_region_cost,
        cast(0 as double) as network_internet_cost,
        u.load_balancer_cost,
        cast(0 as double) as energy_cpu_kwh,
        cast(0 as double) as energy_memory_kwh,
        cast(0 as double) as energy_gpu_kwh,
        u.energy_storage_kwh,
        u.co2e_operational_g,
        cast(0 as double) as co2e_embodied_g,
        cast(0 as double) as intensity_weight,
        cast(0 as double) as pue_weight,
        cast(null as double) as intensity_plain_avg,
        cast(null as double) as pue_plain_avg,
        false as idle_clamped,
        u.estimation_reasons
    from unmounted_daily as u
    left join namespace_meta
        on namespace_meta.cluster = u.cluster and namespace_meta.usage_date = u.usage_date
        and namespace_meta.namespace = u.namespace
),

unioned as (
    select * from workload_rows
    union all
    select * from idle_rows
    union all
    select * from unmounted_rows
),

final as (
    select
        usage_date,
        cast(usage_date as timestamp) as window_start,
        {{ dbt.dateadd('day', 1, 'cast(usage_date as timestamp)') }} as window_end,
        cluster,
        node,
        namespace,
        pod,
        pod_uid,
        container,
        allocation_kind,
        allocation_name,
        controller_kind,
        controller,
        provider_id,
        labels,
        annotations,
        namespace_labels,
        namespace_annotations,
        node_labels,
        services,
        start_ts,
        end_ts,
        minutes,
        cpu_core_hours,
        coalesce(cpu_core_request_average, 0) as cpu_core_request_average,
        coalesce(cpu_core_usage_average, 0) as cpu_core_usage_average,
        cpu_core_usage_max,
        cpu_cost,
        cast(0 as double) as cpu_cost_idle,
        {{ efficiency('cpu_core_usage_average', 'cpu_core_request_average', 'cpu_cost') }} as cpu_efficiency,
        gpu_hours,
        coalesce(gpu_request_average, 0) as gpu_request_average,
        coalesce(gpu_usage_average, 0) as gpu_usage_average,
        gpu_cost,
        cast(0 as double) as gpu_cost_idle,
        case
            when coalesce(gpu_request_average, 0) > 0 and coalesce(gpu_usage_average, 0) > 0
                then gpu_usage_average / gpu_request_average
            when coalesce(gpu_usage_average, 0) = 0 or gpu_cost = 0 then 0.0
            else 1.0
        end as gpu_efficiency,
        ram_byte_hours,
        coalesce(ram_byte_request_average, 0) as ram_byte_request_average,
        coalesce(ram_byte_usage_average, 0) as ram_byte_usage_average,
        ram_byte_usage_max,
        ram_cost,
        cast(0 as double) as ram_cost_idle,
        {{ efficiency('ram_byte_usage_average', 'ram_byte_request_average', 'ram_cost') }} as ram_efficiency,
        pv_byte_hours,
        pv_cost,
        network_transfer_bytes,
        network_receive_bytes,
        network_cross_zone_cost,
        network_cross_region_cost,
        network_internet_cost,
        network_cross_zone_cost + network_cross_region_cost + network_internet_cost as network_cost,
        load_balancer_cost,
        cast(0 as double) as shared_cost,
        cast(0 as double) as external_cost,
        cpu_cost + gpu_cost + ram_cost + pv_cost
            + network_cross_zone_cost + network_cross_region_cost + network_internet_cost
            + load_balancer_cost as total_cost,
        case
            when allocation_kind <> 'workload' or cpu_cost + ram_cost = 0 then 0.0
            else ({{ efficiency('cpu_core_usage_average', 'cpu_core_request_average', 'cpu_cost') }} * cpu_cost
                  + {{ efficiency('ram_byte_usage_average', 'ram_byte_request_average', 'ram_cost') }} * ram_cost)
                 / (cpu_cost + ram_cost)
        end as total_efficiency,
        energy_cpu_kwh + energy_memory_kwh + energy_gpu_kwh + energy_storage_kwh as energy_kwh,
        energy_cpu_kwh,
        energy_memory_kwh,
        energy_gpu_kwh,
        energy_storage_kwh,
        co2e_operational_g,
        co2e_embodied_g,
        co2e_operational_g + co2e_embodied_g as co2e_total_g,
        coalesce(intensity_weight / nullif(energy_cpu_kwh + energy_memory_kwh + energy_gpu_kwh + energy_storage_kwh, 0),
                 intensity_plain_avg) as carbon_intensity_g_per_kwh,
        coalesce(pue_weight / nullif(energy_cpu_kwh + energy_memory_kwh + energy_gpu_kwh + energy_storage_kwh, 0),
                 pue_plain_avg) as pue,
        idle_clamped,
        estimation_reasons <> '' as is_estimated,
        estimation_reasons
    from unioned
),

with_ratio as (
    select
        final.*,
        total_cost / nullif(sum(total_cost) over (partition by usage_date, cluster), 0) as cost_ratio
    from final
)

select * from with_ratio
