-- grain: one row per provider (plus 'default'): the per-resource hourly prices a node of that provider gets
-- when no instance price is known, and the ratios used to split an instance price (METHOD A4, A5).
-- Precedence per key: user custom file > OpenCost provider file > OpenCost default.json > OpenCost built-in.
{%- set keys = ['CPU', 'spotCPU', 'RAM', 'spotRAM', 'GPU', 'spotGPU', 'storage',
                'zoneNetworkEgress', 'regionNetworkEgress', 'internetNetworkEgress'] %}
with shipped as (
    select provider, price_key, hourly_usd from {{ ref('opencost_prices') }}
),

custom as (
    select price_key, hourly_usd from {{ ref('stg_pricing__custom_prices') }}
),

providers as (
    select distinct provider from shipped where provider not in ('default', 'opencost_builtin')
    union all select 'default'
    union all select 'onprem'
),

candidates as (
    -- one candidate per (provider, key, precedence)
    select p.provider, c.price_key, c.hourly_usd, 1 as precedence, 'custom' as price_source
    from providers p cross join custom c
    union all
    select p.provider, s.price_key, s.hourly_usd, 2, 'default'
    from providers p join shipped s on s.provider = p.provider
    union all
    select p.provider, s.price_key, s.hourly_usd, 3, 'default'
    from providers p join shipped s on s.provider = 'default'
    union all
    select p.provider, s.price_key, s.hourly_usd, 4, 'default'
    from providers p join shipped s on s.provider = 'opencost_builtin'
),

ranked as (
    select
        *,
        row_number() over (partition by provider, price_key order by precedence) as pick
    from candidates
    where hourly_usd is not null
),

picked as (
    select * from ranked where pick = 1
),

pivoted as (
    select
        provider,
        {%- for k in keys %}
        max(case when price_key = '{{ k }}' then hourly_usd end) as {{ k | lower }}_usd,
        {%- endfor %}
        max(case when price_key in ('CPU', 'RAM', 'GPU') and price_source = 'custom' then 1 else 0 end) = 1
            as is_custom
    from picked
    group by provider
),

lb as (
    select provider, hourly_usd from {{ ref('load_balancer_prices') }}
),

lb_files as (
    -- a LoadBalancer price from the user's custom file, else from the provider's OpenCost file
    select provider, hourly_usd from picked where price_key = 'LoadBalancer' and precedence <= 2
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
        coalesce(lb_files.hourly_usd, lb.hourly_usd, lb_default.hourly_usd) as load_balancer_hour_usd,
        -- ratios for splitting an instance price (OpenCost: 10 and 100 when undefined)
        case when coalesce(pivoted.ram_usd, 0) > 0 and pivoted.cpu_usd is not null
             then pivoted.cpu_usd / pivoted.ram_usd else 10.0 end as cpu_to_ram,
        case when coalesce(pivoted.ram_usd, 0) > 0 and pivoted.gpu_usd is not null
             then pivoted.gpu_usd / pivoted.ram_usd else 100.0 end as gpu_to_ram,
        case when pivoted.is_custom then 'custom' else 'default' end as price_source
    from pivoted
    left join lb_files on lb_files.provider = pivoted.provider
    left join lb on lb.provider = pivoted.provider
    left join lb as lb_default on lb_default.provider = 'default'
)

select * from final
