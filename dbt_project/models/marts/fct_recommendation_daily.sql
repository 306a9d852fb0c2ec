-- grain: one row per (usage_date, cluster, recommendation_id)
-- What to change, and what it is worth per month in $, kWh and gCO2e, from the look-back window ending on the day
-- (models/intermediate/recommendations: one model per kind, docs/METHOD.md "Recommendations"); saving_* is each
-- row's standalone value, counted_* what it adds to the day's total once (int_recommendations_counted); status what
-- was decided about it (`kubeledger recommend --dismiss/--applied`): a dismissed row counts nothing.
{{ config(unique_key=['usage_date', 'cluster']) }}

select
    usage_date, cluster, recommendation_id, kind, namespace, controller_kind, controller, container, target, action,
    window_days, days_of_data, hours_covered, evidence, confidence, current_cpu_request_cores,
    recommended_cpu_request_cores, current_ram_request_bytes, recommended_ram_request_bytes, saving_usd_per_month,
    saving_kwh_per_month, saving_co2e_g_per_month, is_estimated, estimation_reasons, stage, saving_class,
    superseded_by, depends_on, counted_usd_per_month, counted_kwh_per_month, counted_co2e_g_per_month,
    risk_fix_usd_per_month, risk_fix_kwh_per_month, risk_fix_co2e_g_per_month, status, status_reason, applied_date
from {{ ref('int_recommendations_counted') }}
