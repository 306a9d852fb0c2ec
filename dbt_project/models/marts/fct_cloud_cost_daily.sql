{#- The whole bill is re-aggregated each build (bills are restated for days after their period, raw keeps every
    charge day): a table, not partitioned by cluster like the other marts -#}
{{ config(materialized='table', partition_by=none, unique_key=none, incremental_strategy=none) }}
-- grain: one row per (usage_date, provider_name, billing_account_id, sub_account_id, service_name, charge_category,
-- region_id, resource_id, tags) of the FOCUS bill; the rule for summing the cost columns is in the model's YAML
with charges as (
    select * from {{ ref('stg_focus__charges') }}
),

daily as (
    select
        charge_date as usage_date,
        provider_name,
        billing_account_id,
        sub_account_id,
        service_name,
        charge_category,
        region_id,
        resource_id,
        tags,
        max(billing_account_name) as billing_account_name,
        max(sub_account_name) as sub_account_name,
        max(invoice_issuer_name) as invoice_issuer_name,
        max(service_category) as service_category,
        max(resource_type) as resource_type,
        max(billing_currency) as billing_currency,
        sum(list_cost) as list_cost,
        sum(billed_cost) as billed_cost,
        sum(effective_cost) as effective_cost,
        sum(contracted_cost) as contracted_cost,
        sum(case when commitment_discount_id is not null and charge_category = 'Usage' then effective_cost else 0 end)
            as commitment_amortized_cost,
        sum(case when commitment_discount_status = 'Unused' then effective_cost else 0 end)
            as commitment_unused_cost,
        sum(case when is_commitment_purchase then billed_cost else 0 end) as commitment_purchase_billed_cost,
        sum(case when is_correction then billed_cost else 0 end) as correction_billed_cost,
        count(*) as charge_rows
    from charges
    group by
        charge_date, provider_name, billing_account_id, sub_account_id, service_name, charge_category, region_id,
        resource_id, tags
)

select * from daily
