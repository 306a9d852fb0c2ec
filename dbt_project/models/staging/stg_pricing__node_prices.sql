-- grain: one row per (asset_class, instance_id_field, instance_id, region) from Kubecost-schema CSV files
with source as (
    select * from {{ source('pricing', 'price_node_csv') }}
),

renamed as (
    select
        lower(asset_class) as asset_class,
        coalesce(nullif(instance_id_field, ''), 'metadata.name') as instance_id_field,
        instance_id,
        nullif(lower(region), '') as region,
        instance_type,
        market_price_hourly,
        source_file,
        line_no
    from source
),

ranked as (
    select
        *,
        -- a later line of the same key wins, like a later file edit
        row_number() over (
            partition by asset_class, instance_id_field, instance_id, region order by source_file desc, line_no desc
        ) as pick
    from renamed
)

select asset_class, instance_id_field, instance_id, region, instance_type, market_price_hourly, source_file, line_no
from ranked
where pick = 1
