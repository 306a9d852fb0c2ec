-- grain: one row per (cluster, hour_ts, pv) of an active volume: its $/GiB-hour and where it came from (METHOD A7).
-- Candidates (tiers: macros/pricing.sql): the user's CSV row for the PV name, then for its storage class > the
-- storage price of the cluster-hour's provider > that of 'default' (also when the cluster-hour has no node).
with volumes as (
    select cluster, hour_ts, pv, storage_class
    from {{ ref('stg_metrics__volume_hours') }}
    where active_h > 0
),

clusters as (
    select * from {{ ref('int_clusters_provider_selected_hourly') }}
),

resource_prices as (
    select * from {{ ref('int_resource_prices_resolved') }}
),

csv_prices as (
    select * from {{ ref('stg_pricing__node_prices') }}
    where asset_class = 'pv'
),

located as (
    select
        volumes.*,
        coalesce(clusters.provider, 'default') as provider,
        rp.storage_gib_hour_usd as provider_price,
        rp_default.storage_gib_hour_usd as default_price,
        coalesce(rp.price_source, rp_default.price_source) as resource_price_source
    from volumes
    left join clusters on clusters.cluster = volumes.cluster and clusters.hour_ts = volumes.hour_ts
    left join resource_prices as rp on rp.provider = clusters.provider
    left join resource_prices as rp_default on rp_default.provider = 'default'
),

candidates as (
    -- the CSV rows of the PV's name or storage class (macros/pricing.sql csv_instance_match; the name's first)
    select located.cluster, located.hour_ts, located.pv, csv.market_price_hourly as price, 'csv' as price_source,
           'asset_csv' as tier, {{ csv_match_order('csv') }} as tier_order
    from located
    join csv_prices as csv
        on {{ csv_instance_match('csv', name='located.pv', storage_class='located.storage_class') }}
    where csv.market_price_hourly is not null
    union all
    select cluster, hour_ts, pv, provider_price, resource_price_source, 'provider_resources', 1
    from located
    where provider_price is not null
    union all
    -- always a row, even without a price
    select cluster, hour_ts, pv, default_price, resource_price_source, 'default_resources', 1
    from located
),

ranked as (
    select
        *,
        {{ price_pick(['cluster', 'hour_ts', 'pv'], then_by=['tier_order']) }} as pick
    from candidates
)

select
    located.cluster,
    located.hour_ts,
    located.pv,
    located.provider,
    ranked.price as price_gib_hour_usd,
    ranked.price_source
from located
join ranked
    on ranked.cluster = located.cluster and ranked.hour_ts = located.hour_ts and ranked.pv = located.pv
    and ranked.pick = 1
