-- grain: one row per (cluster, usage_date, node) seen that day: providerID and the included labels as last seen.
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
