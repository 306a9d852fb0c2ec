-- grain: one row per row of the FOCUS bill files (FOCUS has no row key) and per AWS CUR 2.0 line item
-- (stg_cur2__line_items, already in these columns); every FOCUS column kubeledger uses, typed
with source as (
    select * from {{ source('billing', 'focus_charges') }}
),

renamed as (
    select
        cast(charge_date as date) as charge_date,
        cast(charge_period_start as timestamp) as charge_period_start,
        cast(charge_period_end as timestamp) as charge_period_end,
        cast(billing_period_start as timestamp) as billing_period_start,
        cast(billing_period_end as timestamp) as billing_period_end,
        charge_category,
        charge_class,
        charge_frequency,
        provider_name,
        invoice_issuer_name,
        billing_account_id,
        billing_account_name,
        sub_account_id,
        sub_account_name,
        service_name,
        service_category,
        region_id,
        resource_id,
        resource_type,
        pricing_category,
        billing_currency,
        cast(list_cost as double) as list_cost,
        cast(billed_cost as double) as billed_cost,
        cast(effective_cost as double) as effective_cost,
        cast(contracted_cost as double) as contracted_cost,
        commitment_discount_id,
        commitment_discount_status,
        tags,
        coalesce(charge_class = 'Correction', false) as is_correction,
        coalesce(charge_category = 'Purchase' and commitment_discount_id is not null, false)
            as is_commitment_purchase,
        source_file
    from source
),

cur2 as (
    select * from {{ ref('stg_cur2__line_items') }}
)

select * from renamed
union all
select * from cur2
