-- grain: one row per (cluster, hour_ts, namespace, service, pod_uid); pod_uid = '__unmounted__' when no pod ran
-- A provisioned LoadBalancer (ingress set) costs price x active hours (kubeledger rule: no extra resolution step),
-- split over the service's pods by their running hours in the hour (METHOD A9).
with services as (
    select * from {{ ref('stg_metrics__service_hours') }}
    where ingress is not null and active_h > 0
),

pod_run as (
    select cluster, hour_ts, pod_uid, max(run_h) as pod_run_h
    from {{ ref('stg_metrics__container_hours') }}
    where run_h > 0
    group by cluster, hour_ts, pod_uid
),

nodes as (
    select cluster, hour_ts, provider,
           row_number() over (partition by cluster, hour_ts order by count(*) desc, provider) as pick
    from {{ ref('int_nodes_enriched_hourly') }}
    group by cluster, hour_ts, provider
),

resource_prices as (
    select * from {{ ref('int_resource_prices_resolved') }}
),

service_cost as (
    select
        services.cluster,
        services.hour_ts,
        services.namespace,
        services.service,
        max(services.active_h) * max(coalesce(rp.load_balancer_hour_usd, rp_default.load_balancer_hour_usd))
            as service_cost
    from services
    left join nodes on nodes.cluster = services.cluster and nodes.hour_ts = services.hour_ts and nodes.pick = 1
    left join resource_prices as rp on rp.provider = nodes.provider
    left join resource_prices as rp_default on rp_default.provider = 'default'
    group by services.cluster, services.hour_ts, services.namespace, services.service
),

selected as (
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
        service_cost.service_cost * coalesce(weights.weight, 1.0) as load_balancer_cost
    from service_cost
    left join weights
        on weights.cluster = service_cost.cluster and weights.hour_ts = service_cost.hour_ts
        and weights.namespace = service_cost.namespace and weights.service = service_cost.service
)

select * from final
