-- grain: one row per (provider, region, instance_type): the user's sheet wins over the shipped seed
with user_sheet as (
    select
        lower(provider) as provider,
        lower(region) as region,
        lower(instance_type) as instance_type_key,
        hourly_usd,
        spot_hourly_usd,
        'user sheet ' || source_file as sheet_origin,
        1 as precedence
    from {{ source('pricing', 'price_sheet') }}
),

shipped as (
    select
        lower(provider) as provider,
        lower(region) as region,
        lower(instance_type) as instance_type_key,
        hourly_usd,
        spot_hourly_usd,
        'shipped seed instance_prices.csv' as sheet_origin,
        2 as precedence
    from {{ ref('instance_prices') }}
),

unioned as (
    select * from user_sheet
    union all
    select * from shipped
),

ranked as (
    select
        *,
        row_number() over (partition by provider, region, instance_type_key order by precedence) as pick
    from unioned
)

select provider, region, instance_type_key, hourly_usd, spot_hourly_usd, sheet_origin
from ranked
where pick = 1
