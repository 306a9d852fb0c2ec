-- grain: one row per (cluster, usage_date, pod_uid) with pod metrics that day: the pod's owner and controller,
-- labels and annotations as last seen in the day (the API snapshot's before the metrics').
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
