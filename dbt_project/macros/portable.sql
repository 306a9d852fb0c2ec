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

{# JSON object of the listed keys that exist in a JSON object column (node label include-list). #}
{% macro json_pick(json_col, keys) -%}
    {{ return(adapter.dispatch('json_pick', 'kubeledger')(json_col, keys)) }}
{%- endmacro %}
{% macro default__json_pick(json_col, keys) -%}
    cast(json_object(
    {%- for k in keys %}
        '{{ k }}', json_extract_string({{ json_col }}, '$."{{ k }}"'){% if not loop.last %},{% endif %}
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
