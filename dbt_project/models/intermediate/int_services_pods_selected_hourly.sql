-- grain: one row per (cluster, hour_ts, namespace, service, pod_uid)
-- LoadBalancer service -> pods by the Kubernetes API snapshot's Service selector, for the cluster-hours whose
-- coverage says kube_endpoint_address was absent (kube-state-metrics < 2.6 or its endpoints collector off).
-- A pod is selected when it is in the service's namespace in that hour and every key of the selector has the
-- selector's value in the pod's labels: its kube-state-metrics labels of that hour (original or sanitised key)
-- first, else its snapshot labels. An empty or unknown selector selects nothing. The selector is the snapshot's
-- (current, not historical), so the rows carry that snapshot's hour and the models flag them.
with endpoints_absent as (
    select cluster, hour_ts
    from {{ ref('stg_metrics__metric_coverage_hours') }}
    where metric = 'kube_endpoint_address' and is_absent
),

service_hours as (
    select distinct
        services.cluster,
        services.hour_ts,
        services.namespace,
        services.service
    from {{ ref('stg_metrics__service_hours') }} as services
    join endpoints_absent
        on endpoints_absent.cluster = services.cluster and endpoints_absent.hour_ts = services.hour_ts
),

snapshot_services as (
    select cluster, namespace, service, selector, selector_snapshot_hour_ts
    from (
        select
            cluster,
            namespace,
            name as service,
            {{ json_value_text('spec', 'selector') }} as selector,
            snapshot_hour_ts as selector_snapshot_hour_ts,
            row_number() over (partition by cluster, namespace, name order by snapshot_hour_ts desc, uid) as recency
        from {{ ref('stg_kubernetes__objects') }}
        where kind = 'Service'
    ) as ranked
    where recency = 1
),

selector_terms as (
    select
        cluster,
        namespace,
        service,
        selector_snapshot_hour_ts,
        selector_key,
        {{ json_text_expr('selector', 'selector_key') }} as selector_value,
        count(*) over (partition by cluster, namespace, service) as selector_terms
    from (
        select snapshot_services.*, {{ unnest_json_keys('selector') }} as selector_key
        from snapshot_services
    ) as keyed
),

pods as (
    select
        pods.cluster,
        pods.hour_ts,
        pods.namespace,
        pods.pod_uid,
        pods.labels as metric_labels,
        coalesce(k8s_pod.labels, '{}') as snapshot_labels
    from {{ ref('stg_metrics__pod_hours') }} as pods
    left join {{ ref('stg_kubernetes__objects') }} as k8s_pod
        on k8s_pod.cluster = pods.cluster and k8s_pod.kind = 'Pod' and k8s_pod.uid = pods.pod_uid
    where exists (
        select 1 from service_hours
        where service_hours.cluster = pods.cluster and service_hours.hour_ts = pods.hour_ts
        and service_hours.namespace = pods.namespace
    )
),

matched_terms as (
    select
        service_hours.cluster,
        service_hours.hour_ts,
        service_hours.namespace,
        service_hours.service,
        pods.pod_uid,
        max(selector_terms.selector_snapshot_hour_ts) as selector_snapshot_hour_ts,
        max(selector_terms.selector_terms) as selector_terms,
        count(*) as terms_matched
    from service_hours
    join selector_terms
        on selector_terms.cluster = service_hours.cluster and selector_terms.namespace = service_hours.namespace
        and selector_terms.service = service_hours.service
    join pods
        on pods.cluster = service_hours.cluster and pods.hour_ts = service_hours.hour_ts
        and pods.namespace = service_hours.namespace
    where {{ label_value_expr(['pods.metric_labels', 'pods.snapshot_labels'], 'selector_terms.selector_key') }}
        = selector_terms.selector_value
    group by service_hours.cluster, service_hours.hour_ts, service_hours.namespace, service_hours.service,
             pods.pod_uid
),

final as (
    select cluster, hour_ts, namespace, service, pod_uid, selector_snapshot_hour_ts
    from matched_terms
    where terms_matched = selector_terms
)

select * from final
