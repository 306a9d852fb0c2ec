{#- The intermediate tables and staging views on DuckDB, replaced in one statement inside the model's transaction.

    dbt-duckdb's `table` builds `<name>__dbt_tmp`, asks duckdb_indexes(), renames the old table to a backup and the
    new one into place, commits and drops the backup: seven statements and their Jinja for each model, ~45 ms of
    dbt's own time per node against ~25 ms of SQL on the demo day (67 models a daily build). `create or replace`
    gives readers the same thing (the old relation until COMMIT, then the new one; a failed query rolls back and
    leaves the old one) in one statement. Used where nothing else is needed: no contract, no persisted docs, no
    indexes or grants (the marts keep dbt-duckdb's materializations). Spark uses dbt-spark's `table` and `view`
    (dbt_project.yml chooses by target). A relation of the other type under the name (a model that changed from
    table to view) is dropped first. -#}

{% materialization lean_table, adapter='duckdb' %}
    {{ return(lean_replace('table')) }}
{% endmaterialization %}

{% materialization lean_view, adapter='duckdb' %}
    {{ return(lean_replace('view')) }}
{% endmaterialization %}

{% macro lean_replace(kind) %}
    {%- set existing = load_cached_relation(this) -%}
    {%- set target_relation = this.incorporate(type=kind) -%}
    {{ run_hooks(pre_hooks, inside_transaction=False) }}
    {{ run_hooks(pre_hooks, inside_transaction=True) }}
    {%- if existing is not none and existing.type != kind %}
        {{ adapter.drop_relation(existing) }}
    {%- endif %}
    {% call statement('main') -%}
        create or replace {{ kind }} {{ target_relation }} as (
            {{ sql }}
        )
    {%- endcall %}
    {{ run_hooks(post_hooks, inside_transaction=True) }}
    {{ adapter.commit() }}
    {{ run_hooks(post_hooks, inside_transaction=False) }}
    {{ return({'relations': [target_relation]}) }}
{% endmacro %}
