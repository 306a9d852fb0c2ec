-- grain: one row per (cluster, hour_ts) with nodes: the provider most of the cluster-hour's nodes run on (ties: the
-- first by name). Assets not tied to a node (volumes, load balancers) take this provider's prices (METHOD A7, A9).
with counted as (
    select cluster, hour_ts, provider, count(*) as node_count
    from {{ ref('int_nodes_enriched_hourly') }}
    group by cluster, hour_ts, provider
),

ranked as (
    select
        *,
        row_number() over (partition by cluster, hour_ts order by node_count desc, provider asc) as pick
    from counted
)

select cluster, hour_ts, provider, node_count
from ranked
where pick = 1
