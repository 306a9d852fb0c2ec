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
