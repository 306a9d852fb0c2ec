-- grain: one row per row of raw.cur2_line_items (an AWS CUR 2.0 line item; CUR has no row key), in the FOCUS
-- columns of stg_focus__charges (which unions these rows with the FOCUS files'). The mapping and its sources are
-- in _staging__models.yml.
with source as (
    select * from {{ source('billing', 'cur2_line_items') }}
),

mapped as (
    select
        cast(charge_date as date) as charge_date,
        cast(line_item_usage_start_date as timestamp) as charge_period_start,
        cast(line_item_usage_end_date as timestamp) as charge_period_end,
        cast(bill_billing_period_start_date as timestamp) as billing_period_start,
        cast(bill_billing_period_end_date as timestamp) as billing_period_end,
        case
            when line_item_line_item_type in (
                'Usage', 'SavingsPlanCoveredUsage', 'DiscountedUsage', 'SavingsPlanNegation',
                'BundledDiscount', 'Discount', 'PrivateRateDiscount', 'EdpDiscount'
            ) then 'Usage'
            when line_item_line_item_type in (
                'Fee', 'RIFee', 'SavingsPlanRecurringFee', 'SavingsPlanUpfrontFee'
            ) then 'Purchase'
            when line_item_line_item_type = 'Tax' then 'Tax'
            when line_item_line_item_type = 'Credit' then 'Credit'
            else 'Adjustment'
        end as charge_category,
        cast(null as string) as charge_class,
        cast(null as string) as charge_frequency,
        'AWS' as provider_name,
        bill_invoicing_entity as invoice_issuer_name,
        bill_payer_account_id as billing_account_id,
        bill_payer_account_name as billing_account_name,
        line_item_usage_account_id as sub_account_id,
        line_item_usage_account_name as sub_account_name,
        coalesce(line_item_product_code, product_servicecode) as service_name,
        cast(null as string) as service_category,
        product_region_code as region_id,
        line_item_resource_id as resource_id,
        cast(null as string) as resource_type,
        cast(null as string) as pricing_category,
        line_item_currency_code as billing_currency,
        cast(pricing_public_on_demand_cost as double) as list_cost,
        cast(line_item_unblended_cost as double) as billed_cost,
        cast(case
            when line_item_line_item_type = 'SavingsPlanCoveredUsage'
                then savings_plan_savings_plan_effective_cost
            when line_item_line_item_type = 'SavingsPlanRecurringFee'
                then coalesce(savings_plan_total_commitment_to_date, 0)
                - coalesce(savings_plan_used_commitment, 0)
            when line_item_line_item_type in ('SavingsPlanNegation', 'SavingsPlanUpfrontFee')
                then 0
            when line_item_line_item_type = 'DiscountedUsage'
                then reservation_effective_cost
            when line_item_line_item_type = 'RIFee'
                then coalesce(reservation_unused_amortized_upfront_fee_for_billing_period, 0)
                + coalesce(reservation_unused_recurring_fee, 0)
            when line_item_line_item_type = 'Fee' and reservation_reservation_a_r_n is not null
                then 0
            else line_item_unblended_cost
        end as double) as effective_cost,
        cast(null as double) as contracted_cost,
        coalesce(savings_plan_savings_plan_a_r_n, reservation_reservation_a_r_n)
            as commitment_discount_id,
        case
            when line_item_line_item_type in ('SavingsPlanCoveredUsage', 'DiscountedUsage')
                then 'Used'
        end as commitment_discount_status,
        resource_tags as tags,
        false as is_correction,
        coalesce(
            line_item_line_item_type in (
                'Fee', 'RIFee', 'SavingsPlanRecurringFee', 'SavingsPlanUpfrontFee'
            )
            and coalesce(savings_plan_savings_plan_a_r_n, reservation_reservation_a_r_n) is not null,
            false
        ) as is_commitment_purchase,
        source_file
    from source
)

select * from mapped
