-- grain: one row per (cluster, hour_ts, namespace, service) of a provisioned LoadBalancer (ingress set): its active
-- hours and $/hour (METHOD A9). Candidates (tiers: macros/pricing.sql): the load-balancer price of the
-- cluster-hour's provider > that of 'default' (also when the cluster-hour has no node).
with services as (
    select cluster, hour_ts, namespace, service, max(active_h) as active_h
    from {{ ref('stg_metrics__service_hours') }}
    where ingress is not null and active_h > 0
    group by cluster, hour_ts, namespace, service
),

clusters as (
    select * from {{ ref('int_clusters_provider_selected_hourly') }}
),

resource_prices as (
    select * from {{ ref('int_resource_prices_resolved') }}
),

candidates as (
    select services.cluster, services.hour_ts, services.namespace, services.service,
           rp.load_balancer_hour_usd as price, 'provider_resources' as tier
    from services
    join clusters on clusters.cluster = services.cluster and clusters.hour_ts = services.hour_ts
    join resource_prices as rp on rp.provider = clusters.provider
    where rp.load_balancer_hour_usd is not null
    union all
    -- always a row, even without a price
    select services.cluster, services.hour_ts, services.namespace, services.service,
           rp_default.load_balancer_hour_usd, 'default_resources'
    from services
    left join resource_prices as rp_default on rp_default.provider = 'default'
),

ranked as (
    select
        *,
        {{ price_pick(['cluster', 'hour_ts', 'namespace', 'service']) }} as pick
    from candidates
)

select
    services.cluster,
    services.hour_ts,
    services.namespace,
    services.service,
    services.active_h,
    ranked.price as load_balancer_hour_usd
from services
join ranked
    on ranked.cluster = services.cluster and ranked.hour_ts = services.hour_ts
    and ranked.namespace = services.namespace and ranked.service = services.service and ranked.pick = 1
