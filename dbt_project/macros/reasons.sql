{# Reason codes by what they make uncertain (docs in README "Methodology"). #}
{% macro carbon_reason_codes() -%}
    {{ return(['default_pue', 'embodied_fallback', 'global_default_intensity', 'gpu_power_estimated',
               'node_idle_energy', 'partial_hour_coverage', 'partial_intensity_coverage', 'provider_average_profile',
               'provider_estimated_intensity', 'region_default_intensity', 'unknown_instance_type',
               'unknown_vcpu', 'utilisation_capped', 'zone_default_intensity']) }}
{%- endmacro %}

{% macro cost_reason_codes() -%}
    {{ return(['default_price', 'idle_clamped', 'lb_endpoints_missing', 'lb_pods_from_selector',
               'no_egress_classification', 'no_instance_price', 'node_metrics_missing', 'partial_hour_coverage', 'usage_above_capacity',
               'usage_missing', 'unknown_vcpu']) }}
{%- endmacro %}

{# True when the ','-joined reasons column holds any of the codes. #}
{% macro has_any_reason(reasons_col, codes) -%}
    ({%- for code in codes %}(',' || {{ reasons_col }} || ',') like '%,{{ code }},%'{% if not loop.last %} or {% endif %}{% endfor -%})
{%- endmacro %}
