{% test not_null_columns(model, columns) %}
{#- One row per column of `columns` that holds NULLs, with how many: every column checked in ONE scan of the
    model. It replaces one not_null test per column (a query, a dbt node and a Dagster check event each: ~100
    per daily build, 2-3 s each on Spark). -#}
with null_counts as (
    select
    {%- for column in columns %}
        sum(case when {{ column }} is null then 1 else 0 end) as nulls_{{ loop.index }}{{ "," if not loop.last }}
    {%- endfor %}
    from {{ model }}
)
{%- for column in columns %}
select '{{ column }}' as null_column, nulls_{{ loop.index }} as null_rows from null_counts
where nulls_{{ loop.index }} > 0
{{ "union all" if not loop.last }}
{%- endfor %}
{% endtest %}
