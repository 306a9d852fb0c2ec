-- Writer: pipelines/sources/focus.py (FOCUS 1.0-1.2 cloud bills, CSV or Parquet; settings `billing:`).
-- One row per row of the bill files, typed; the FOCUS column each comes from is named in
-- dbt_project/models/staging/_staging__models.yml (stg_focus__charges). Replaced per charge_date (the UTC day of
-- ChargePeriodStart) in one transaction: a daily run re-reads its days and `billing.reread_days` before them, so
-- late and restated bill rows replace what was loaded for those days.
-- grain: one row per bill-file row (FOCUS has no row key)
create table if not exists raw.focus_charges (
    charge_date                     date      not null,   -- UTC day of ChargePeriodStart (the partition)
    source_file                     varchar   not null,
    billing_period_start            timestamp,
    billing_period_end              timestamp,
    charge_period_start             timestamp not null,   -- naive UTC
    charge_period_end               timestamp,
    charge_category                 varchar   not null,   -- Usage | Purchase | Tax | Credit | Adjustment
    charge_class                    varchar,              -- Correction for restatements of earlier periods
    charge_description              varchar,
    charge_frequency                varchar,              -- One-Time | Recurring | Usage-Based
    provider_name                   varchar,              -- ProviderName (1.0-1.2), ServiceProviderName (1.3)
    publisher_name                  varchar,
    invoice_issuer_name             varchar,
    invoice_id                      varchar,
    billing_account_id              varchar,
    billing_account_name            varchar,
    sub_account_id                  varchar,
    sub_account_name                varchar,
    service_name                    varchar,
    service_category                varchar,
    region_id                       varchar,
    region_name                     varchar,
    availability_zone               varchar,
    resource_id                     varchar,
    resource_name                   varchar,
    resource_type                   varchar,
    sku_id                          varchar,
    pricing_category                varchar,              -- Standard | Dynamic | Committed | Other
    pricing_quantity                double,
    pricing_unit                    varchar,
    consumed_quantity               double,
    consumed_unit                   varchar,
    billing_currency                varchar,
    list_cost                       double,
    billed_cost                     double    not null,
    effective_cost                  double,
    contracted_cost                 double,
    commitment_discount_id          varchar,
    commitment_discount_name        varchar,
    commitment_discount_category    varchar,              -- Spend | Usage
    commitment_discount_type        varchar,
    commitment_discount_status      varchar,              -- Used | Unused
    commitment_discount_quantity    double,
    tags                            varchar,              -- JSON object text of the Tags column
    _extracted_at                   timestamp not null
);

-- Writer: pipelines/sources/cur2.py (AWS Data Exports CUR 2.0, Parquet or CSV; settings `billing.cur2_path`).
-- The CUR 2.0 columns kubeledger maps to FOCUS, under their CUR names, typed; the mapping is
-- dbt_project/models/staging/stg_cur2__line_items.sql. Replaced per charge_date (the UTC day of
-- line_item_usage_start_date) in one transaction, re-reading `billing.reread_days` like raw.focus_charges.
-- grain: one row per CUR line item of the export files (identity_line_item_id is not unique across hours)
create table if not exists raw.cur2_line_items (
    charge_date                                                 date      not null,  -- UTC day of usage start
    source_file                                                 varchar   not null,
    bill_billing_period_start_date                              timestamp,
    bill_billing_period_end_date                                timestamp,
    bill_payer_account_id                                       varchar,
    bill_payer_account_name                                     varchar,
    bill_invoicing_entity                                       varchar,
    bill_invoice_id                                             varchar,
    line_item_usage_start_date                                  timestamp not null,  -- naive UTC
    line_item_usage_end_date                                    timestamp,
    line_item_line_item_type                                    varchar   not null,  -- Usage | SavingsPlanCoveredUsage | ...
    line_item_line_item_description                             varchar,
    line_item_usage_account_id                                  varchar,
    line_item_usage_account_name                                varchar,
    line_item_product_code                                      varchar,
    line_item_usage_type                                        varchar,
    line_item_resource_id                                       varchar,
    line_item_availability_zone                                 varchar,
    line_item_currency_code                                     varchar,
    line_item_usage_amount                                      double,
    line_item_unblended_cost                                    double    not null,
    product_servicecode                                         varchar,
    product_region_code                                         varchar,
    pricing_term                                                varchar,              -- OnDemand | Reserved | Spot
    pricing_public_on_demand_cost                               double,
    savings_plan_savings_plan_a_r_n                             varchar,
    savings_plan_savings_plan_effective_cost                    double,
    savings_plan_total_commitment_to_date                       double,
    savings_plan_used_commitment                                double,
    reservation_reservation_a_r_n                               varchar,
    reservation_effective_cost                                  double,
    reservation_unused_amortized_upfront_fee_for_billing_period double,
    reservation_unused_recurring_fee                            double,
    resource_tags                                               varchar,              -- JSON object text of the map
    _extracted_at                                               timestamp not null
);
