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

{# ---------------------------------------------------------------------------------------------------------------
   Spark SQL forms (dbt-spark, Spark 4 with ANSI mode off as dbt-spark sets it; session time zone UTC and
   spark.sql.timestampType TIMESTAMP_NTZ, profiles.yml, so timestamps are naive UTC like DuckDB's). Keys are embedded
   in Spark string literals, whose escape is a backslash: quotes and backslashes are dropped from constant keys
   (Kubernetes label keys never hold them).
   --------------------------------------------------------------------------------------------------------------- #}
{% macro spark__json_text(json_col, key) -%}
    from_json({{ json_col }}, 'map<string,string>')['{{ key | replace("'", "") | replace("\\", "") }}']
{%- endmacro %}

{% macro spark__regex_replace(expr, pattern, replacement) -%}
    {#- Spark replaces every match; the patterns used are anchored (one match at most), as on DuckDB -#}
    regexp_replace({{ expr }}, '{{ pattern }}', '{{ replacement }}')
{%- endmacro %}

{% macro spark__seconds_between(start_ts, end_ts) -%}
    {#- DuckDB's date_diff('second') counts second boundaries: the difference of the whole epoch seconds -#}
    cast(unix_seconds(cast({{ end_ts }} as timestamp_ltz)) - unix_seconds(cast({{ start_ts }} as timestamp_ltz)) as double)
{%- endmacro %}

{% macro spark__add_seconds(ts, seconds_expr) -%}
    timestampadd(microsecond, cast(round(({{ seconds_expr }}) * 1000000) as bigint), {{ ts }})
{%- endmacro %}

{% macro spark__json_object_text(pairs) -%}
    {#- Built as text so it reads as DuckDB's json_object writes it: doubles in yyjson's notation (json_double_text),
        every other value as to_json writes it inside an array; NULL values kept as JSON null -#}
    concat('{', concat_ws(','
    {%- for k, expr in pairs %},
        concat('"{{ k | replace("'", "") | replace('"', '') | replace("\\", "") }}":', case when typeof({{ expr }}) = 'double'
            then coalesce({{ json_double_text('cast(' ~ expr ~ ' as double)') }}, 'null')
            else regexp_extract(to_json(array({{ expr }})), '^\\[(.*)\\]$', 1) end)
    {%- endfor %}
    ), '}')
{%- endmacro %}

{# Spark: a double as DuckDB's JSON writer (yyjson) prints it: plain notation with at least one decimal when the
   decimal exponent is in [-6, 21) (134217728.0, 0.0000015), else d.ddde<exp> (1.5e-7, 1e21). Spark's cast to
   string gives Java's form (1.34217728E8, plain between 1e-3 and 1e7): its digits are re-laid out. #}
{% macro json_double_text(expr) -%}
    {%- set s = 'cast(' ~ expr ~ ' as string)' -%}
    {%- set sci = "'^(-?)([0-9])[.]([0-9]+)E(-?[0-9]+)$'" -%}
    {%- set sign = 'regexp_extract(' ~ s ~ ', ' ~ sci ~ ', 1)' -%}
    {%- set lead = 'regexp_extract(' ~ s ~ ', ' ~ sci ~ ', 2)' -%}
    {%- set frac = "regexp_replace(regexp_extract(" ~ s ~ ", " ~ sci ~ ", 3), '0+$', '')" -%}
    {%- set e = 'cast(regexp_extract(' ~ s ~ ', ' ~ sci ~ ', 4) as int)' -%}
    {%- set digits = 'concat(' ~ lead ~ ', ' ~ frac ~ ')' -%}
    case
        when {{ s }} not like '%E%' then {{ s }}
        when {{ e }} >= 21 or {{ e }} < -6
            then concat({{ sign }}, {{ lead }}, case when {{ frac }} = '' then '' else concat('.', {{ frac }}) end,
                        'e', {{ e }})
        when {{ e }} < 0 then concat({{ sign }}, '0.', repeat('0', -{{ e }} - 1), {{ digits }})
        when length({{ digits }}) <= {{ e }} + 1 then concat({{ sign }}, rpad({{ digits }}, {{ e }} + 1, '0'), '.0')
        else concat({{ sign }}, substr({{ digits }}, 1, {{ e }} + 1), '.', substr({{ digits }}, {{ e }} + 2))
    end
{%- endmacro %}

{% macro spark__json_text_expr(json_col, key_expr) -%}
    from_json({{ json_col }}, 'map<string,string>')[replace({{ key_expr }}, '"', '')]
{%- endmacro %}

{% macro spark__json_array_agg_distinct(col) -%}
    to_json(array_sort(collect_set({{ col }})))
{%- endmacro %}

{% macro spark__sanitise_label_key_expr(key_expr) -%}
    regexp_replace({{ key_expr }}, '[^a-zA-Z0-9_]', '_')
{%- endmacro %}

{% macro spark__json_value_text(json_col, key) -%}
    get_json_object({{ json_col }}, "$['{{ key | replace("'", "") | replace('"', '') | replace("\\", "") }}']")
{%- endmacro %}

{% macro spark__unnest_json_keys(json_expr) -%}
    explode(json_object_keys({{ json_expr }}))
{%- endmacro %}

{% macro spark__quantile_cont(expr, q) -%}
    percentile({{ expr }}, {{ q }})
{%- endmacro %}

{# A SQL string literal of a Python/Jinja value (vars, keys): quote doubling on DuckDB, backslash escapes on Spark. #}
{% macro string_literal_of(value) -%}
    {{ return(adapter.dispatch('string_literal_of', 'kubeledger')(value)) }}
{%- endmacro %}
{% macro default__string_literal_of(value) -%}
    '{{ (value | string).replace("'", "''") }}'
{%- endmacro %}
{% macro spark__string_literal_of(value) -%}
    '{{ (value | string).replace("\\", "\\\\").replace("'", "\\'") }}'
{%- endmacro %}

{# Seconds since the epoch of a naive timestamp, as a double (sub-second part kept). #}
{% macro epoch_seconds(ts) -%}
    {{ return(adapter.dispatch('epoch_seconds', 'kubeledger')(ts)) }}
{%- endmacro %}
{% macro default__epoch_seconds(ts) -%}
    epoch({{ ts }})
{%- endmacro %}
{% macro spark__epoch_seconds(ts) -%}
    (unix_micros(cast({{ ts }} as timestamp_ltz)) / 1e6)
{%- endmacro %}

{# Aggregate: the non-NULL values joined with ',' in no particular order; NULL when there is none. #}
{% macro string_agg_csv(expr) -%}
    {{ return(adapter.dispatch('string_agg_csv', 'kubeledger')(expr)) }}
{%- endmacro %}
{% macro default__string_agg_csv(expr) -%}
    string_agg({{ expr }}, ',')
{%- endmacro %}
{% macro spark__string_agg_csv(expr) -%}
    case when count({{ expr }}) > 0 then concat_ws(',', collect_list({{ expr }})) end
{%- endmacro %}

{# Aggregate: the distinct non-empty items of a column of ','-joined lists, sorted and joined with ','; '' if none. #}
{% macro csv_union_agg(col) -%}
    {{ return(adapter.dispatch('csv_union_agg', 'kubeledger')(col)) }}
{%- endmacro %}
{% macro default__csv_union_agg(col) -%}
    coalesce(array_to_string(list_sort(list_distinct(list_filter(
            string_split(string_agg(DISTINCT nullif({{ col }}, ''), ','), ','),
            lambda x: x <> ''))), ','), '')
{%- endmacro %}
{% macro spark__csv_union_agg(col) -%}
    coalesce(array_join(array_sort(array_distinct(filter(
            split(concat_ws(',', collect_set(nullif({{ col }}, ''))), ','),
            x -> x <> ''))), ','), '')
{%- endmacro %}

{# An expression that fails the query with `message`. #}
{% macro raise_sql_error(message) -%}
    {{ return(adapter.dispatch('raise_sql_error', 'kubeledger')(message)) }}
{%- endmacro %}
{% macro default__raise_sql_error(message) -%}
    error({{ string_literal_of(message) }})
{%- endmacro %}
{% macro spark__raise_sql_error(message) -%}
    raise_error({{ string_literal_of(message) }})
{%- endmacro %}

{# `materialized` hint of a CTE evaluated once (DuckDB); Spark has no such hint (it reuses exchanges itself). #}
{% macro cte_materialized() -%}
    {{ return(adapter.dispatch('cte_materialized', 'kubeledger')()) }}
{%- endmacro %}
{% macro default__cte_materialized() -%}
    MATERIALIZED
{%- endmacro %}
{% macro spark__cte_materialized() -%}
{%- endmacro %}

{# Statement (hook) removing the days of a table partitioned by day that are more than keep_days before its newest
   usage_date. DuckDB deletes the rows; Spark's Parquet tables cannot delete rows, so their old (cluster,
   usage_date) partitions are dropped (run here; the hook's own SQL is then empty). #}
{% macro delete_days_before(relation, keep_days) -%}
    {{ return(adapter.dispatch('delete_days_before', 'kubeledger')(relation, keep_days)) }}
{%- endmacro %}
{% macro default__delete_days_before(relation, keep_days) -%}
    delete from {{ relation }} where usage_date < {{ dbt.dateadd('day', -keep_days, '(select max(usage_date) from ' ~ relation ~ ')') }}
{%- endmacro %}
{% macro spark__delete_days_before(relation, keep_days) -%}
    {%- if execute -%}
        {%- set old = run_query('select distinct cluster, cast(usage_date as string) as usage_date from ' ~ relation
            ~ ' where usage_date < ' ~ dbt.dateadd('day', -keep_days, '(select max(usage_date) from ' ~ relation ~ ')')) -%}
        {%- for row in old.rows -%}
            {%- do run_query('alter table ' ~ relation ~ ' drop if exists partition (cluster = '
                ~ string_literal_of(row[0]) ~ ', usage_date = ' ~ string_literal_of(row[1]) ~ ')') -%}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro %}

{# JSON text of the first key of a JSON object whose kube-state-metrics sanitised form equals `sanitised_literal` (a
   SQL string literal); NULL if none (macros/allocation_sharing.sql label_lookup; the API renders its DuckDB form). #}
{% macro json_text_of_sanitised_key(json_col, sanitised_literal) -%}
    {{ return(adapter.dispatch('json_text_of_sanitised_key', 'kubeledger')(json_col, sanitised_literal)) }}
{%- endmacro %}
{% macro default__json_text_of_sanitised_key(json_col, sanitised_literal) -%}
    json_extract_string({{ json_col }}, '$."' || replace(replace(list_filter(json_keys({{ json_col }}), lambda _k: regexp_replace(_k, '[^a-zA-Z0-9_]', '_', 'g') = {{ sanitised_literal }})[1], '\', '\\'), '"', '\"') || '"')
{%- endmacro %}
{% macro spark__json_text_of_sanitised_key(json_col, sanitised_literal) -%}
    element_at(map_values(map_filter(from_json({{ json_col }}, 'map<string,string>'),
        (_k, _v) -> regexp_replace(_k, '[^a-zA-Z0-9_]', '_') = {{ sanitised_literal }})), 1)
{%- endmacro %}

{# dbt.dateadd on Spark (overrides dbt-spark's, which goes through to_timestamp(<epoch seconds>): with
   spark.sql.timestampType TIMESTAMP_NTZ that cast gives NULL). A timestamp (date input cast to one), like DuckDB. #}
{% macro spark__dateadd(datepart, interval, from_date_or_timestamp) -%}
    timestampadd({{ datepart }}, {{ interval }}, cast({{ from_date_or_timestamp }} as timestamp))
{%- endmacro %}

{# The replace-by-day of the incremental models on DuckDB (overrides dbt-duckdb's). dbt-duckdb deletes a list-keyed
   replace with `DELETE … USING <new rows> WHERE <keys match>`: a join of every stored row of the day with every new
   row of it, n² pairs (a re-built 1,000-node day sat in that DELETE for over ten minutes). A build replaces a few
   (usage_date, cluster) keys: the stored rows are matched against those keys, once each. Same rows deleted. #}
{% macro duckdb__get_delete_insert_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) -%}
    {%- set keys = [unique_key] if unique_key is string else (unique_key or []) -%}
    {%- set dest_cols_csv = get_quoted_csv(dest_columns | map(attribute='name')) -%}
    {%- if keys %}
    delete from {{ target }} as DBT_INCREMENTAL_TARGET
    where exists (
        select 1 from (select distinct {{ keys | join(', ') }} from {{ source }}) as _replaced
        where {% for key in keys %}_replaced.{{ key }} = DBT_INCREMENTAL_TARGET.{{ key }}{{ ' and ' if not loop.last }}{% endfor %}
    )
    {%- for predicate in incremental_predicates or [] %} and {{ predicate }}{% endfor %};
    {%- endif %}
    insert into {{ target }} ({{ dest_cols_csv }})
    (select {{ dest_cols_csv }} from {{ source }})
{%- endmacro %}
