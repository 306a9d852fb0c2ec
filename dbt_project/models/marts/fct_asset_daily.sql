-- grain: one row per (usage_date, cluster, asset_kind, asset_name): nodes, volumes, load balancers, overhead
with nodes as (
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        'node' as asset_kind,
        node as asset_name,
        max(provider) as provider,
        max(instance_type) as instance_type,
        max(region) as region,
        bool_or(is_spot) as is_spot,
        sum(node_run_h) as hours,
        {{ asset_costs({'cpu_cost': 'sum(node_cpu_cost)', 'ram_cost': 'sum(node_ram_cost)',
                         'gpu_cost': 'sum(node_gpu_cost)'}) }}
        max(price_source) as price_source_max,
        min(price_source) as price_source_min,
        avg(node_price_usd) as hourly_price_usd,
        bool_or(is_default_price) as is_estimated
    from {{ ref('int_nodes_costed_hourly') }}
    group by cast(hour_ts as date), cluster, node
),

volumes as (
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        'volume' as asset_kind,
        pv as asset_name,
        {{ no_instance() }}
        count(distinct hour_ts) as hours,
        {{ asset_costs({'pv_cost': 'sum(pv_cost)'}) }}
        max(price_source) as price_source_max,
        min(price_source) as price_source_min,
        cast(null as double) as hourly_price_usd,
        max(price_source) = 'default' as is_estimated
    from {{ ref('int_volumes_allocated_hourly') }}
    group by cast(hour_ts as date), cluster, pv
),

load_balancers as (
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        'load_balancer' as asset_kind,
        namespace || '/' || service as asset_name,
        {{ no_instance() }}
        count(distinct hour_ts) as hours,
        {{ asset_costs({'load_balancer_cost': 'sum(load_balancer_cost)'}) }}
        'default' as price_source_max,
        'default' as price_source_min,
        cast(null as double) as hourly_price_usd,
        true as is_estimated
    from {{ ref('int_load_balancers_allocated_hourly') }}
    group by cast(hour_ts as date), cluster, namespace, service
),

overhead as (
    -- cluster management fee: hourly, for every hour the cluster reported nodes; overhead, never idle
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        'overhead' as asset_kind,
        'cluster-management' as asset_name,
        {{ no_instance() }}
        count(distinct hour_ts) as hours,
        {{ asset_costs({'overhead_cost':
            'count(distinct hour_ts) * ' ~ sql_number(var('cluster_management_fee_per_hour'))}) }}
        'custom' as price_source_max,
        'custom' as price_source_min,
        {{ sql_number(var('cluster_management_fee_per_hour')) }} as hourly_price_usd,
        false as is_estimated
    from {{ ref('int_nodes_enriched_hourly') }}
    where {{ sql_number(var('cluster_management_fee_per_hour')) }} > 0
    group by cast(hour_ts as date), cluster
),

unioned as (
    select * from nodes
    union all
    select * from volumes
    union all
    select * from load_balancers
    union all
    select * from overhead
),

final as (
    select
        usage_date,
        cluster,
        asset_kind,
        asset_name,
        provider,
        instance_type,
        region,
        is_spot,
        cast(hours as double) as hours,
        cpu_cost,
        ram_cost,
        gpu_cost,
        pv_cost,
        load_balancer_cost,
        overhead_cost,
        cpu_cost + ram_cost + gpu_cost + pv_cost + load_balancer_cost + overhead_cost as total_cost,
        hourly_price_usd,
        case when price_source_min = price_source_max then price_source_min else 'mixed' end as price_source,
        is_estimated
    from unioned
),

reconciled as (
    -- the bill (issue 28): nodes, volumes and load balancers matched by resource id; the other kinds have none
    select
        final.*,
        coalesce(nodes.resource_key, volumes.resource_key, load_balancers.resource_key) as resource_key,
        coalesce(nodes.billed_cost, volumes.billed_cost, load_balancers.billed_cost) as billed_cost,
        coalesce(nodes.cpu_cost_adjustment, 0.0) as cpu_cost_adjustment,
        coalesce(nodes.ram_cost_adjustment, 0.0) as ram_cost_adjustment,
        coalesce(nodes.gpu_cost_adjustment, 0.0) as gpu_cost_adjustment,
        coalesce(volumes.pv_cost_adjustment, 0.0) as pv_cost_adjustment,
        coalesce(load_balancers.load_balancer_cost_adjustment, 0.0) as load_balancer_cost_adjustment,
        coalesce(nodes.reconciliation_status, volumes.reconciliation_status, load_balancers.reconciliation_status,
                 'no_resource_id') as reconciliation_status
    from final
    left join {{ ref('int_nodes_reconciled_daily') }} as nodes
        on final.asset_kind = 'node' and nodes.usage_date = final.usage_date and nodes.cluster = final.cluster
        and nodes.node = final.asset_name
    left join {{ ref('int_volumes_reconciled_daily') }} as volumes
        on final.asset_kind = 'volume' and volumes.usage_date = final.usage_date
        and volumes.cluster = final.cluster and volumes.pv = final.asset_name
    left join {{ ref('int_load_balancers_reconciled_daily') }} as load_balancers
        on final.asset_kind = 'load_balancer' and load_balancers.usage_date = final.usage_date
        and load_balancers.cluster = final.cluster
        and load_balancers.namespace || '/' || load_balancers.service = final.asset_name
)

select
    usage_date, cluster, asset_kind, asset_name, provider,
    instance_type, region, is_spot, hours, cpu_cost, ram_cost, gpu_cost, pv_cost, load_balancer_cost, overhead_cost,
    total_cost, hourly_price_usd, price_source, is_estimated,
    resource_key,
    billed_cost,
    cpu_cost_adjustment,
    ram_cost_adjustment,
    gpu_cost_adjustment,
    pv_cost_adjustment,
    load_balancer_cost_adjustment,
    cpu_cost_adjustment + ram_cost_adjustment + gpu_cost_adjustment + pv_cost_adjustment
    + load_balancer_cost_adjustment as cost_adjustment,
    reconciliation_status
from reconciled
