-- grain: one row per (cluster, hour_ts, namespace, service, pod_uid); pod_uid = '__unmounted__' when no pod ran
-- A provisioned LoadBalancer (ingress set) costs price x active hours (kubeledger rule: no extra resolution step),
-- split over the service's pods by their running hours in the hour (METHOD A9). The pods come from the metrics
-- (kube_endpoint_address); in a cluster-hour where that series was absent, from the Kubernetes API snapshot's
-- Service selector (is_pods_from_selector), and a service left without pods there is flagged
-- is_endpoints_missing on its '__unmounted__' row.
with services as (
    select * from {{ ref('stg_metrics__service_hours') }}
    where ingress is not null and active_h > 0
),

endpoints_absent as (
    select cluster, hour_ts
    from {{ ref('stg_metrics__metric_coverage_hours') }}
    where metric = 'kube_endpoint_address' and is_absent
),

pod_run as (
    select cluster, hour_ts, pod_uid, max(run_h) as pod_run_h
    from {{ ref('stg_metrics__container_hours') }}
    where run_h > 0
    group by cluster, hour_ts, pod_uid
),

service_cost as (
    select cluster, hour_ts, namespace, service, active_h * load_balancer_hour_usd as service_cost
    from {{ ref('int_load_balancers_priced_hourly') }}
),

metric_selected as (
    select distinct
        services.cluster,
        services.hour_ts,
        services.namespace,
        services.service,
        services.pod_uid,
        pod_run.pod_run_h
    from services
    join pod_run
        on pod_run.cluster = services.cluster and pod_run.hour_ts = services.hour_ts
        and pod_run.pod_uid = services.pod_uid
),

metric_selected_services as (
    select distinct cluster, hour_ts, namespace, service from metric_selected
),

selector_selected as (
    -- only for service-hours the metrics mapped to no running pod
    select
        by_selector.cluster,
        by_selector.hour_ts,
        by_selector.namespace,
        by_selector.service,
        by_selector.pod_uid,
        pod_run.pod_run_h
    from {{ ref('int_services_pods_selected_hourly') }} as by_selector
    join pod_run
        on pod_run.cluster = by_selector.cluster and pod_run.hour_ts = by_selector.hour_ts
        and pod_run.pod_uid = by_selector.pod_uid
    left join metric_selected_services as mapped
        on mapped.cluster = by_selector.cluster and mapped.hour_ts = by_selector.hour_ts
        and mapped.namespace = by_selector.namespace and mapped.service = by_selector.service
    where mapped.service is null
),

selected as (
    select *, false as is_pods_from_selector from metric_selected
    union all
    select *, true as is_pods_from_selector from selector_selected
),

weights as (
    select
        *,
        pod_run_h / sum(pod_run_h) over (partition by cluster, hour_ts, namespace, service) as weight
    from selected
),

final as (
    select
        service_cost.cluster,
        service_cost.hour_ts,
        service_cost.namespace,
        service_cost.service,
        coalesce(weights.pod_uid, '__unmounted__') as pod_uid,
        service_cost.service_cost * coalesce(weights.weight, 1.0) as load_balancer_cost,
        coalesce(weights.is_pods_from_selector, false) as is_pods_from_selector,
        weights.pod_uid is null and endpoints_absent.cluster is not null as is_endpoints_missing
    from service_cost
    left join weights
        on weights.cluster = service_cost.cluster and weights.hour_ts = service_cost.hour_ts
        and weights.namespace = service_cost.namespace and weights.service = service_cost.service
    left join endpoints_absent
        on endpoints_absent.cluster = service_cost.cluster and endpoints_absent.hour_ts = service_cost.hour_ts
)

select * from final
