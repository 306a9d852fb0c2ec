{# The few engine-specific functions, wrapped so the models can move to Spark or Trino.
   Each dispatches on the adapter; DuckDB is the implemented default. #}

{% macro json_text(json_col, key) -%}
    {{ return(adapter.dispatch('json_text', 'kubeledger')(json_col, key)) }}
{%- endmacro %}
{% macro default__json_text(json_col, key) -%}
    json_extract_string({{ json_col }}, '$."{{ key | replace("'", "''") | replace('"', '') }}"')
{%- endmacro %}

{% macro regex_replace(expr, pattern, replacement) -%}
    {{ return(adapter.dispatch('regex_replace', 'kubeledger')(expr, pattern, replacement)) }}
{%- endmacro %}
{% macro default__regex_replace(expr, pattern, replacement) -%}
    regexp_replace({{ expr }}, '{{ pattern }}', '{{ replacement }}')
{%- endmacro %}

{% macro seconds_between(start_ts, end_ts) -%}
    {{ return(adapter.dispatch('seconds_between', 'kubeledger')(start_ts, end_ts)) }}
{%- endmacro %}
{% macro default__seconds_between(start_ts, end_ts) -%}
    cast(date_diff('second', {{ start_ts }}, {{ end_ts }}) as double)
{%- endmacro %}

{% macro add_seconds(ts, seconds_expr) -%}
    {{ return(adapter.dispatch('add_seconds', 'kubeledger')(ts, seconds_expr)) }}
{%- endmacro %}
{% macro default__add_seconds(ts, seconds_expr) -%}
    ({{ ts }} + to_microseconds(cast(round(({{ seconds_expr }}) * 1000000) as bigint)))
{%- endmacro %}

{# JSON object text built from (key, SQL expression) pairs; NULL values are kept as JSON null. #}
{% macro json_object_text(pairs) -%}
    {{ return(adapter.dispatch('json_object_text', 'kubeledger')(pairs)) }}
{%- endmacro %}
{% macro default__json_object_text(pairs) -%}
    cast(json_object(
    {%- for k, expr in pairs %}
        '{{ k | replace("'", "''") }}', {{ expr }}{% if not loop.last %},{% endif %}
    {%- endfor %}
    ) as varchar)
{%- endmacro %}

{# Distinct reason codes of true flags, in a fixed order, joined with ','. Portable: concat_ws skips NULLs. #}
{% macro reasons_string(flags) -%}
    coalesce(concat_ws(','
    {%- for expr, code in flags %}
        , case when {{ expr }} then '{{ code }}' end
    {%- endfor %}
    ), '')
{%- endmacro %}

{% macro safe_divide(numerator, denominator) -%}
    case when ({{ denominator }}) is null or ({{ denominator }}) = 0 then null
         else ({{ numerator }}) / ({{ denominator }}) end
{%- endmacro %}

{# JSON text of a key computed at run time (a column or expression). #}
{% macro json_text_expr(json_col, key_expr) -%}
    {{ return(adapter.dispatch('json_text_expr', 'kubeledger')(json_col, key_expr)) }}
{%- endmacro %}
{% macro default__json_text_expr(json_col, key_expr) -%}
    json_extract_string({{ json_col }}, '$."' || replace({{ key_expr }}, '"', '') || '"')
{%- endmacro %}

{% macro is_nan(expr) -%}
    {{ return(adapter.dispatch('is_nan', 'kubeledger')(expr)) }}
{%- endmacro %}
{% macro default__is_nan(expr) -%}
    isnan({{ expr }})
{%- endmacro %}

{# JSON array text of the distinct values of a column, sorted. #}
{% macro json_array_agg_distinct(col) -%}
    {{ return(adapter.dispatch('json_array_agg_distinct', 'kubeledger')(col)) }}
{%- endmacro %}
{% macro default__json_array_agg_distinct(col) -%}
    cast(to_json(list_sort(list_distinct(list({{ col }})))) as varchar)
{%- endmacro %}

{# kube-state-metrics' sanitised form of a label key computed at run time: every char outside [a-zA-Z0-9_] -> '_'
   (all matches: DuckDB's regexp_replace needs the 'g' flag, Spark's replaces all by default). #}
{% macro sanitise_label_key_expr(key_expr) -%}
    {{ return(adapter.dispatch('sanitise_label_key_expr', 'kubeledger')(key_expr)) }}
{%- endmacro %}
{% macro default__sanitise_label_key_expr(key_expr) -%}
    regexp_replace({{ key_expr }}, '[^a-zA-Z0-9_]', '_', 'g')
{%- endmacro %}

{# JSON text of the value under a fixed key (an object or array stays JSON), e.g. a Service's spec.selector. #}
{% macro json_value_text(json_col, key) -%}
    {{ return(adapter.dispatch('json_value_text', 'kubeledger')(json_col, key)) }}
{%- endmacro %}
{% macro default__json_value_text(json_col, key) -%}
    cast(json_extract({{ json_col }}, '$."{{ key | replace("'", "''") | replace('"', '') }}"') as varchar)
{%- endmacro %}

{# Select-list expression giving one row per key of a JSON object (none for NULL or {}). #}
{% macro unnest_json_keys(json_expr) -%}
    {{ return(adapter.dispatch('unnest_json_keys', 'kubeledger')(json_expr)) }}
{%- endmacro %}
{% macro default__unnest_json_keys(json_expr) -%}
    unnest(json_keys({{ json_expr }}))
{%- endmacro %}

{# Continuous (interpolated) quantile of an aggregate group, q in [0, 1]. #}
{% macro quantile_cont(expr, q) -%}
    {{ return(adapter.dispatch('quantile_cont', 'kubeledger')(expr, q)) }}
{%- endmacro %}
{% macro default__quantile_cont(expr, q) -%}
    quantile_cont({{ expr }}, {{ q }})
{%- endmacro %}
