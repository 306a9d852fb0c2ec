-- grain: one row per (cluster, usage_date, pod_uid) selected by a service that day: the services that select the
-- pod, from the metrics plus LoadBalancers mapped by their snapshot selector (JSON array, distinct names).
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
