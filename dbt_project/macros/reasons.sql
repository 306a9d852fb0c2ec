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

{# Each estimation flag and the reason code it reports in estimation_reasons: the one map from flags to codes (a
   flag is a column of the hourly models; node_idle_energy's is an idle node that ran). A model names the codes it
   reports and reads their flags with reason_flags. #}
{% macro flag_reason_codes() -%}
    {{ return([
        ('is_default_price', 'default_price'),
        ('is_default_pue', 'default_pue'),
        ('is_embodied_fallback', 'embodied_fallback'),
        ('is_global_default_intensity', 'global_default_intensity'),
        ('is_gpu_power_estimated', 'gpu_power_estimated'),
        ('idle_clamped', 'idle_clamped'),
        ('is_lb_pods_from_selector', 'lb_pods_from_selector'),
        ('is_egress_unclassified', 'no_egress_classification'),
        ('is_instance_price_missing', 'no_instance_price'),
        ('is_node_idle and node_run_h > 0', 'node_idle_energy'),
        ('is_node_missing', 'node_metrics_missing'),
        ('is_intensity_partial', 'partial_intensity_coverage'),
        ('is_provider_average_profile', 'provider_average_profile'),
        ('is_intensity_provider_estimated', 'provider_estimated_intensity'),
        ('is_region_default_intensity', 'region_default_intensity'),
        ('is_unknown_instance_type', 'unknown_instance_type'),
        ('is_vcpu_unknown', 'unknown_vcpu'),
        ('is_usage_above_capacity', 'usage_above_capacity'),
        ('is_usage_missing', 'usage_missing'),
        ('is_utilisation_capped', 'utilisation_capped'),
        ('is_zone_default_intensity', 'zone_default_intensity'),
    ]) }}
{%- endmacro %}

{# (flag, code) of flag_reason_codes for each of `codes`, in their order (the order of the reasons string, as
   reasons_string takes them). aggregate: the flag OR-ed over the group, bool_or(flag). columns: {code: column} for
   a model that holds a flag under a name of its own. #}
{% macro reason_flags(codes, aggregate=false, columns={}) -%}
    {%- set flags = {} -%}
    {%- for flag, code in flag_reason_codes() -%}{%- do flags.update({code: flag}) -%}{%- endfor -%}
    {%- do flags.update(columns) -%}
    {%- set pairs = [] -%}
    {%- for code in codes -%}
        {%- if code not in flags -%}
            {{ exceptions.raise_compiler_error("no estimation flag reports the reason code `" ~ code
                                               ~ "`: flag_reason_codes (macros/reasons.sql) maps flags to codes") }}
        {%- endif -%}
        {%- do pairs.append(('bool_or(' ~ flags[code] ~ ')' if aggregate else flags[code], code)) -%}
    {%- endfor -%}
    {{ return(pairs) }}
{%- endmacro %}

{# True when the ','-joined reasons column holds any of the codes. #}
{% macro has_any_reason(reasons_col, codes) -%}
    ({%- for code in codes %}(',' || {{ reasons_col }} || ',') like '%,{{ code }},%'{% if not loop.last %} or {% endif %}{% endfor -%})
{%- endmacro %}
