-- grain: one row per (provider, region, instance_type_key): the user's sheet wins over the shipped seed
-- (tiers: macros/pricing.sql)
with candidates as (
    select provider, region, instance_type_key, hourly_usd, spot_hourly_usd, sheet_origin, 'instance_sheet' as tier
    from {{ ref('stg_pricing__price_sheet') }}
    union all
    select
        lower(provider),
        lower(region),
        lower(instance_type),
        hourly_usd,
        spot_hourly_usd,
        'shipped seed instance_prices.csv',
        'instance_seed'
    from {{ ref('instance_prices') }}
),

ranked as (
    select
        *,
        {{ price_pick(['provider', 'region', 'instance_type_key']) }} as pick
    from candidates
)

select provider, region, instance_type_key, hourly_usd, spot_hourly_usd, sheet_origin, tier
from ranked
where pick = 1
