-- grain: one row per (cluster, hour_ts, namespace, service, pod_uid)
-- LoadBalancer service -> pods by a Kubernetes API snapshot's Service selector, for the cluster-hours whose
-- coverage says kube_endpoint_address was absent (kube-state-metrics < 2.6 or its endpoints collector off).
-- The selector is the service's snapshot nearest in time to the hour (ties: the earlier one), which for a backfill
-- may be one taken after it. A pod is selected when it is in the service's namespace in that hour and every key of
-- the selector has the selector's value in the pod's labels: its kube-state-metrics labels of that hour (original or
-- sanitised key) first, else the labels of its own nearest snapshot. An empty or unknown selector selects nothing.
-- A snapshot's selector need not be the hour's, so the models flag these rows (lb_pods_from_selector).
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

snapshots as (
    select * from {{ ref('stg_kubernetes__object_snapshots') }}
    where kind in ('Service', 'Pod')
),

service_selectors as (
    select cluster, hour_ts, namespace, service, selector, selector_snapshot_hour_ts
    from (
        select
            service_hours.cluster,
            service_hours.hour_ts,
            service_hours.namespace,
            service_hours.service,
            {{ json_value_text('snapshots.spec', 'selector') }} as selector,
            snapshots.snapshot_hour_ts as selector_snapshot_hour_ts,
            row_number() over (
                partition by service_hours.cluster, service_hours.hour_ts, service_hours.namespace,
                             service_hours.service
                order by abs({{ seconds_between('service_hours.hour_ts', 'snapshots.snapshot_hour_ts') }}),
                         snapshots.snapshot_hour_ts, snapshots.uid
            ) as nearest
        from service_hours
        join snapshots
            on snapshots.kind = 'Service' and snapshots.cluster = service_hours.cluster
            and snapshots.namespace = service_hours.namespace and snapshots.name = service_hours.service
    ) as ranked
    where nearest = 1
),

selector_terms as (
    select
        cluster,
        hour_ts,
        namespace,
        service,
        selector_snapshot_hour_ts,
        selector_key,
        {{ json_text_expr('selector', 'selector_key') }} as selector_value,
        count(*) over (partition by cluster, hour_ts, namespace, service) as selector_terms
    from (
        select service_selectors.*, {{ unnest_json_keys('selector') }} as selector_key
        from service_selectors
    ) as keyed
),

candidate_pods as (
    select pods.cluster, pods.hour_ts, pods.namespace, pods.pod_uid, pods.labels as metric_labels
    from {{ ref('stg_metrics__pod_hours') }} as pods
    where exists (
        select 1 from selector_terms
        where selector_terms.cluster = pods.cluster and selector_terms.hour_ts = pods.hour_ts
        and selector_terms.namespace = pods.namespace
    )
),

pod_snapshot_labels as (
    select cluster, hour_ts, pod_uid, labels as snapshot_labels
    from (
        select
            candidate_pods.cluster,
            candidate_pods.hour_ts,
            candidate_pods.pod_uid,
            snapshots.labels,
            row_number() over (
                partition by candidate_pods.cluster, candidate_pods.hour_ts, candidate_pods.pod_uid
                order by abs({{ seconds_between('candidate_pods.hour_ts', 'snapshots.snapshot_hour_ts') }}),
                         snapshots.snapshot_hour_ts
            ) as nearest
        from candidate_pods
        join snapshots
            on snapshots.kind = 'Pod' and snapshots.cluster = candidate_pods.cluster
            and snapshots.uid = candidate_pods.pod_uid
    ) as ranked
    where nearest = 1
),

pods as (
    select
        candidate_pods.*,
        coalesce(pod_snapshot_labels.snapshot_labels, '{}') as snapshot_labels
    from candidate_pods
    left join pod_snapshot_labels
        on pod_snapshot_labels.cluster = candidate_pods.cluster and pod_snapshot_labels.hour_ts = candidate_pods.hour_ts
        and pod_snapshot_labels.pod_uid = candidate_pods.pod_uid
),

matched_terms as (
    select
        selector_terms.cluster,
        selector_terms.hour_ts,
        selector_terms.namespace,
        selector_terms.service,
        pods.pod_uid,
        max(selector_terms.selector_snapshot_hour_ts) as selector_snapshot_hour_ts,
        max(selector_terms.selector_terms) as selector_terms,
        count(*) as terms_matched
    from selector_terms
    join pods
        on pods.cluster = selector_terms.cluster and pods.hour_ts = selector_terms.hour_ts
        and pods.namespace = selector_terms.namespace
    where {{ label_value_expr(['pods.metric_labels', 'pods.snapshot_labels'], 'selector_terms.selector_key') }}
        = selector_terms.selector_value
    group by selector_terms.cluster, selector_terms.hour_ts, selector_terms.namespace, selector_terms.service,
             pods.pod_uid
),

final as (
    select cluster, hour_ts, namespace, service, pod_uid, selector_snapshot_hour_ts
    from matched_terms
    where terms_matched = selector_terms
)

select * from final
