-- grain: one row per row of the user's instance price sheet (keys lower-cased; precedence over the shipped seed
-- is decided in int_instance_prices_resolved)
with source as (
    select * from {{ source('pricing', 'price_sheet') }}
)

select
    lower(provider) as provider,
    lower(region) as region,
    lower(instance_type) as instance_type_key,
    hourly_usd,
    spot_hourly_usd,
    'user sheet ' || source_file as sheet_origin
from source
