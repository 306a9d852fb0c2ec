-- grain: one row per (cluster, hour_ts, pod_uid)
-- Egress cost = classified GiB x zone/region/internet price (METHOD A8); without classification the cost is 0
-- and flagged, never guessed. Transfer/receive bytes come from cAdvisor either way. Unclassified = the coverage
-- says kubecost_pod_network_egress_bytes_total was absent in the cluster-hour, or the pod has no classified bytes.
with pods as (
    select * from {{ ref('stg_metrics__pod_hours') }}
),

egress_absent as (
    select cluster, hour_ts
    from {{ ref('stg_metrics__metric_coverage_hours') }}
    where metric = 'kubecost_pod_network_egress_bytes_total' and is_absent
),

nodes as (
    select cluster, hour_ts, node, provider from {{ ref('int_nodes_enriched_hourly') }}
),

resource_prices as (
    select * from {{ ref('int_resource_prices_resolved') }}
),

final as (
    select
        pods.cluster,
        pods.hour_ts,
        pods.pod_uid,
        pods.network_transmit_bytes as network_transfer_bytes,
        pods.network_receive_bytes,
        coalesce(pods.egress_cross_zone_bytes, 0) / 1073741824.0
            * coalesce(rp.egress_zone_gib_usd, rp_default.egress_zone_gib_usd) as network_cross_zone_cost,
        coalesce(pods.egress_cross_region_bytes, 0) / 1073741824.0
            * coalesce(rp.egress_region_gib_usd, rp_default.egress_region_gib_usd) as network_cross_region_cost,
        coalesce(pods.egress_internet_bytes, 0) / 1073741824.0
            * coalesce(rp.egress_internet_gib_usd, rp_default.egress_internet_gib_usd) as network_internet_cost,
        coalesce(pods.network_transmit_bytes, 0) > 0
            and (
                egress_absent.cluster is not null
                or (pods.egress_cross_zone_bytes is null
                    and pods.egress_cross_region_bytes is null
                    and pods.egress_internet_bytes is null)
            ) as is_egress_unclassified
    from pods
    left join egress_absent on egress_absent.cluster = pods.cluster and egress_absent.hour_ts = pods.hour_ts
    left join nodes on nodes.cluster = pods.cluster and nodes.hour_ts = pods.hour_ts and nodes.node = pods.node
    left join resource_prices as rp on rp.provider = nodes.provider
    left join resource_prices as rp_default on rp_default.provider = 'default'
)

select * from final
