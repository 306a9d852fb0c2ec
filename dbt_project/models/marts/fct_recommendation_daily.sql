-- grain: one row per (usage_date, cluster, recommendation_id)
-- What to change, and what it is worth per month in $, kWh and gCO2e, from the look-back window ending on the day
-- (models/intermediate/recommendations: one model per kind, docs/METHOD.md "Recommendations").
{%- set kinds = ['int_container_requests_rightsized', 'int_abandoned_workloads_flagged',
                 'int_node_pools_idle_sized', 'int_volumes_unclaimed_flagged', 'int_batch_runs_shifted',
                 'int_workloads_zone_shifted'] %}
{%- set columns = ['usage_date', 'cluster', 'recommendation_id', 'kind', 'namespace', 'controller_kind',
                   'controller', 'container', 'target', 'action', 'window_days', 'days_of_data', 'hours_covered',
                   'evidence', 'confidence', 'current_cpu_request_cores', 'recommended_cpu_request_cores',
                   'current_ram_request_bytes', 'recommended_ram_request_bytes', 'saving_usd_per_month',
                   'saving_kwh_per_month', 'saving_co2e_g_per_month', 'is_estimated', 'estimation_reasons'] %}
{{ config(unique_key=['usage_date', 'cluster']) }}

{% for model in kinds %}
select {{ columns | join(', ') }} from {{ ref(model) }}
{% if not loop.last %}union all{% endif %}
{%- endfor %}
