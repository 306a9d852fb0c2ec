{#- The whole bill is re-aggregated each build (bills are restated for days after their period, raw keeps every
    charge day): rebuilt whole, not partitioned by cluster like the other marts. On Spark it is an external table in
    the lake, and a plain table cannot be built twice there (dbt drops the table, its files stay, and CREATE TABLE AS
    SELECT refuses the non-empty folder): an incremental model whose every build overwrites the whole table. -#}
{{ config(materialized='incremental' if target.type == 'spark' else 'table', partition_by=none, unique_key=none,
          incremental_strategy='insert_overwrite' if target.type == 'spark' else none) }}
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
),

keyed as (
    select
        daily.*,
        {{ resource_key('resource_id') }} as resource_key,
        coalesce(daily.sub_account_id, daily.billing_account_id) as account_id
    from daily
),

matched as (
    -- the bill lines a cluster's node or volume was reconciled with (every day of marts.fct_asset_daily)
    select usage_date, resource_key, min(cluster) as cluster
    from {{ ref('fct_asset_daily') }}
    where reconciliation_status = 'reconciled'
    group by usage_date, resource_key
),

cluster_accounts as (
    select distinct keyed.account_id
    from keyed
    join matched on matched.usage_date = keyed.usage_date and matched.resource_key = keyed.resource_key
)

select
    keyed.usage_date, keyed.provider_name, keyed.billing_account_id, keyed.sub_account_id, keyed.service_name,
    keyed.charge_category, keyed.region_id, keyed.resource_id, keyed.tags, keyed.billing_account_name,
    keyed.sub_account_name, keyed.invoice_issuer_name, keyed.service_category, keyed.resource_type,
    keyed.billing_currency, keyed.list_cost, keyed.billed_cost, keyed.effective_cost, keyed.contracted_cost,
    keyed.commitment_amortized_cost, keyed.commitment_unused_cost, keyed.commitment_purchase_billed_cost,
    keyed.correction_billed_cost, keyed.charge_rows,
    keyed.resource_key,
    matched.cluster as matched_cluster,
    case
        when matched.cluster is not null then 'in_cluster'
        when cluster_accounts.account_id is not null then 'out_of_cluster'
        else 'other_account'
    end as cluster_scope
from keyed
left join matched on matched.usage_date = keyed.usage_date and matched.resource_key = keyed.resource_key
left join cluster_accounts on cluster_accounts.account_id = keyed.account_id
