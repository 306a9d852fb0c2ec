-- grain: one row per (cluster, hour_ts, node)
-- Each node-hour's CPU, RAM and GPU unit prices and where they came from (METHOD A4-A6).
-- Precedence (tiers: macros/pricing.sql): per-node CSV (Kubecost schema) > instance price sheet or seed (provider,
-- region, type) > per-resource prices; a missing, zero or NaN instance price is no candidate (falls through, flagged).
with nodes as (
    select * from {{ ref('int_nodes_enriched_hourly') }}
),

resource_prices as (
    select * from {{ ref('int_resource_prices_resolved') }}
),

sheet as (
    select * from {{ ref('int_instance_prices_resolved') }}
),

csv_prices as (
    select * from {{ ref('stg_pricing__node_prices') }}
),

-- each node's best CSV `node` row and, on a GPU node, its best `gpu` row: one match for both classes, the one of
-- volumes too (macros/pricing.sql csv_instance_match, csv_match_order)
csv_match as (
    select
        nodes.cluster,
        nodes.hour_ts,
        nodes.node,
        csv_prices.asset_class,
        csv_prices.market_price_hourly,
        row_number() over (
            partition by nodes.cluster, nodes.hour_ts, nodes.node, csv_prices.asset_class
            order by {{ csv_match_order('csv_prices', region='nodes.region') }}
        ) as pick
    from nodes
    join csv_prices
        on (csv_prices.asset_class = 'node' or (csv_prices.asset_class = 'gpu' and nodes.gpu_count > 0))
        and {{ csv_instance_match('csv_prices', name='nodes.node', provider_id='nodes.provider_id',
                                  labels='nodes.labels', region='nodes.region') }}
),

joined as (
    select
        nodes.*,
        csv_node.market_price_hourly as csv_node_price,
        csv_gpu.market_price_hourly as csv_gpu_price,
        case when nodes.is_spot and sheet.spot_hourly_usd is not null then sheet.spot_hourly_usd
             else sheet.hourly_usd end as sheet_price,
        sheet.tier as sheet_tier,
        sheet.hourly_usd is not null and nodes.is_spot and sheet.spot_hourly_usd is null as is_spot_price_missing,
        case when nodes.is_spot then coalesce(rp.spot_cpu_usd, rp_default.spot_cpu_usd)
             else coalesce(rp.cpu_usd, rp_default.cpu_usd) end as base_cpu_usd,
        case when nodes.is_spot then coalesce(rp.spot_ram_usd, rp_default.spot_ram_usd)
             else coalesce(rp.ram_usd, rp_default.ram_usd) end as base_ram_usd,
        case when nodes.is_spot then coalesce(rp.spot_gpu_usd, rp_default.spot_gpu_usd)
             else coalesce(rp.gpu_usd, rp_default.gpu_usd) end as base_gpu_usd,
        coalesce(rp.cpu_to_ram, rp_default.cpu_to_ram) as cpu_to_ram,
        coalesce(rp.gpu_to_ram, rp_default.gpu_to_ram) as gpu_to_ram,
        coalesce(rp.price_source, rp_default.price_source) as resource_price_source
    from nodes
    left join csv_match as csv_node
        on csv_node.cluster = nodes.cluster and csv_node.hour_ts = nodes.hour_ts
        and csv_node.node = nodes.node and csv_node.asset_class = 'node' and csv_node.pick = 1
    left join csv_match as csv_gpu
        on csv_gpu.cluster = nodes.cluster and csv_gpu.hour_ts = nodes.hour_ts
        and csv_gpu.node = nodes.node and csv_gpu.asset_class = 'gpu' and csv_gpu.pick = 1
    left join sheet
        on sheet.provider = nodes.provider
        and sheet.region = nodes.region
        and sheet.instance_type_key = lower(nodes.instance_type)
    left join resource_prices as rp on rp.provider = nodes.provider
    left join resource_prices as rp_default on rp_default.provider = 'default'
),

node_price_candidates as (
    select cluster, hour_ts, node, csv_node_price as price, 'csv' as price_source, 'asset_csv' as tier
    from joined
    where csv_node_price > 0 and not {{ is_nan("csv_node_price") }}
    union all
    select cluster, hour_ts, node, sheet_price, 'sheet', sheet_tier
    from joined
    where sheet_price > 0 and not {{ is_nan("sheet_price") }}
),

node_price_picked as (
    select
        *,
        {{ price_pick(['cluster', 'hour_ts', 'node']) }} as pick
    from node_price_candidates
),

with_node_price as (
    select
        joined.*,
        picked.price as node_price_usd,
        -- no instance price: the per-resource prices (of the provider, else 'default') and their source
        coalesce(picked.price_source, joined.resource_price_source) as price_source,
        joined.ram_capacity_bytes / 1073741824.0 as ram_gib
    from joined
    left join node_price_picked as picked
        on picked.cluster = joined.cluster and picked.hour_ts = joined.hour_ts
        and picked.node = joined.node and picked.pick = 1
),

normalised as (
    select
        *,
        case
            when node_price_usd is null then null
            when base_ram_usd is null or base_ram_usd = 0 then 0.0
            when gpu_count > 0 and csv_gpu_price is null
                then node_price_usd / (gpu_count * gpu_to_ram + vcpus * cpu_to_ram + ram_gib)
            when gpu_count > 0
                then greatest(node_price_usd - gpu_count * csv_gpu_price, 0) / (vcpus * cpu_to_ram + ram_gib)
            else node_price_usd / (vcpus * cpu_to_ram + ram_gib)
        end as split_ram_usd
    from with_node_price
),

priced as (
    select
        *,
        case
            when node_price_usd is null then base_cpu_usd
            when base_ram_usd is null or base_ram_usd = 0
                then greatest(node_price_usd - gpu_count * coalesce(csv_gpu_price, 0), 0) / vcpus
            else split_ram_usd * cpu_to_ram
        end as cpu_price_before_discount,
        case when node_price_usd is null then base_ram_usd else split_ram_usd end as ram_price_before_discount,
        case
            when csv_gpu_price is not null then csv_gpu_price
            when node_price_usd is null then base_gpu_usd
            when gpu_count > 0 and (base_ram_usd is null or base_ram_usd = 0) then 0.0
            when gpu_count > 0 then split_ram_usd * gpu_to_ram
            else base_gpu_usd
        end as gpu_price_usd
    from normalised
),

final as (
    select
        cluster,
        hour_ts,
        node,
        provider,
        region,
        instance_type,
        is_spot,
        vcpus,
        ram_gib,
        gpu_count,
        node_run_h,
        node_price_usd,
        cpu_price_before_discount * (1 - {{ sql_number(var('cpu_discount_pct')) }} / 100.0) as cpu_price_usd,
        ram_price_before_discount * (1 - {{ sql_number(var('ram_discount_pct')) }} / 100.0) as ram_price_usd,
        gpu_price_usd,
        price_source,
        price_source = 'default' as is_default_price,
        node_price_usd is null and instance_type is not null and provider <> 'onprem' as is_instance_price_missing,
        is_spot_price_missing,
        is_vcpu_unknown
    from priced
)

select * from final
