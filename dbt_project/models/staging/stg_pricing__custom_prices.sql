-- grain: one row per price_key of the user's custom price file (hourly)
with source as (
    select * from {{ source('pricing', 'price_custom') }}
),

ranked as (
    select
        -- OpenCost's Alibaba/Oracle files call the load-balancer price defaultLBPrice
        case when price_key = 'defaultLBPrice' then 'LoadBalancer' else price_key end as price_key,
        hourly_value,
        source_file,
        row_number() over (
            partition by case when price_key = 'defaultLBPrice' then 'LoadBalancer' else price_key end
            order by _extracted_at desc
        ) as pick
    from source
)

select price_key, hourly_value as hourly_usd, source_file
from ranked
where pick = 1
