{#- the Dagster asset check's asset (the test refs several models) #}
{{ config(meta={'dagster': {'ref': {'name': 'fct_allocation_shared_daily'}}}) }}
-- The days the build wrote only (built_days_filter, macros/windows.sql): in a backfill other days may be mid-build.
-- Sharing moves cost, energy and carbon between rows; it never creates or loses any (METHOD A12, A18).
-- Per cluster and day: Σ total_cost after sharing = Σ before + the monthly overhead for the day; Σ CO2e and Σ kWh
-- are equal before and after. Rows returned = failures.
{%- set policy = var('sharing') %}
with unshared as (
    select usage_date, cluster, sum(total_cost) as cost, sum(co2e_total_g) as co2e, sum(energy_kwh) as kwh
    from {{ ref('fct_allocation_daily') }}
    where {{ built_days_filter() }}
    group by usage_date, cluster
),

shared as (
    select usage_date, cluster, sum(total_cost) as cost, sum(co2e_total_g) as co2e, sum(energy_kwh) as kwh
    from {{ ref('fct_allocation_shared_daily') }}
    where {{ built_days_filter() }}
    group by usage_date, cluster
),

compared as (
    select
        unshared.usage_date,
        unshared.cluster,
        unshared.cost + {{ sql_number(policy.get('monthly_overhead_usd', 0)) }} / 730.0 * 24 as expected_cost,
        coalesce(shared.cost, 0) as shared_cost,
        unshared.co2e as expected_co2e,
        coalesce(shared.co2e, 0) as shared_co2e,
        unshared.kwh as expected_kwh,
        coalesce(shared.kwh, 0) as shared_kwh
    from unshared
    left join shared on shared.usage_date = unshared.usage_date and shared.cluster = unshared.cluster
)

select *
from compared
where abs(shared_cost - expected_cost) > 1e-9 * greatest(abs(expected_cost), 1)
   or abs(shared_co2e - expected_co2e) > 1e-9 * greatest(abs(expected_co2e), 1)
   or abs(shared_kwh - expected_kwh) > 1e-9 * greatest(abs(expected_kwh), 1)
