-- grain: one row per provider (plus 'default'): the per-resource hourly prices a node of that provider gets
-- when no instance price is known, and the ratios used to split an instance price (METHOD A4, A5).
-- Precedence per key: the per-resource tiers of macros/pricing.sql (custom file > OpenCost provider file >
-- [load balancers: kubeledger seed] > OpenCost default.json > [seed default] > OpenCost built-in).
{%- set keys = ['CPU', 'spotCPU', 'RAM', 'spotRAM', 'GPU', 'spotGPU', 'storage',
                'zoneNetworkEgress', 'regionNetworkEgress', 'internetNetworkEgress'] %}
with shipped as (
    select provider, price_key, hourly_usd from {{ ref('opencost_prices') }}
),

custom as (
    select price_key, hourly_usd from {{ ref('stg_pricing__custom_prices') }}
),

lb as (
    select provider, hourly_usd from {{ ref('load_balancer_prices') }}
),

providers as (
    select distinct provider
    from shipped
    where provider not in ('default', 'opencost_builtin')
    union all
    select 'default'
    union all
    select 'onprem'
),

candidates as (
    -- one candidate per (provider, key, tier); the ranking is price_pick's (macros/pricing.sql)
    select p.provider, c.price_key, c.hourly_usd, 'custom' as tier
    from providers as p cross join custom as c
    union all
    select p.provider, s.price_key, s.hourly_usd, 'provider_file'
    from providers as p join shipped as s on s.provider = p.provider
    union all
    select p.provider, s.price_key, s.hourly_usd, 'default_file'
    from providers as p join shipped as s on s.provider = 'default'
    union all
    select p.provider, s.price_key, s.hourly_usd, 'builtin'
    from providers as p join shipped as s on s.provider = 'opencost_builtin'
    union all
    -- load balancers: kubeledger's seed (OpenCost's implementation values) outranks default.json and built-in
    select p.provider, 'LoadBalancer', lb.hourly_usd, 'provider_seed'
    from providers as p join lb on lb.provider = p.provider
    union all
    select p.provider, 'LoadBalancer', lb.hourly_usd, 'default_seed'
    from providers as p join lb on lb.provider = 'default'
),

ranked as (
    select
        *,
        {{ price_pick(['provider', 'price_key']) }} as pick
    from candidates
    where hourly_usd is not null
),

picked as (
    select * from ranked
    where pick = 1
),

pivoted as (
    select
        provider,
        {%- for k in keys %}
        max(case when price_key = '{{ k }}' then hourly_usd end) as {{ k | lower }}_usd,
        {%- endfor %}
        max(case when price_key = 'LoadBalancer' then hourly_usd end) as load_balancer_usd,
        max(case when price_key in ('CPU', 'RAM', 'GPU') and tier = 'custom' then 1 else 0 end) = 1
            as is_custom
    from picked
    group by provider
),

final as (
    select
        pivoted.provider,
        pivoted.cpu_usd,
        coalesce(pivoted.spotcpu_usd, pivoted.cpu_usd) as spot_cpu_usd,
        pivoted.ram_usd,
        coalesce(pivoted.spotram_usd, pivoted.ram_usd) as spot_ram_usd,
        pivoted.gpu_usd,
        coalesce(pivoted.spotgpu_usd, pivoted.gpu_usd) as spot_gpu_usd,
        pivoted.storage_usd as storage_gib_hour_usd,
        coalesce(pivoted.zonenetworkegress_usd, 0) as egress_zone_gib_usd,
        coalesce(pivoted.regionnetworkegress_usd, 0) as egress_region_gib_usd,
        coalesce(pivoted.internetnetworkegress_usd, 0) as egress_internet_gib_usd,
        pivoted.load_balancer_usd as load_balancer_hour_usd,
        -- ratios for splitting an instance price (OpenCost: 10 and 100 when undefined)
        case when coalesce(pivoted.ram_usd, 0) > 0 and pivoted.cpu_usd is not null
             then pivoted.cpu_usd / pivoted.ram_usd else 10.0 end as cpu_to_ram,
        case when coalesce(pivoted.ram_usd, 0) > 0 and pivoted.gpu_usd is not null
             then pivoted.gpu_usd / pivoted.ram_usd else 100.0 end as gpu_to_ram,
        case when pivoted.is_custom then 'custom' else 'default' end as price_source
    from pivoted
)

select * from final
