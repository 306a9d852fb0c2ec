{#- The Parquet lake as the source of the Spark engine (pipelines/warehouse/lake.py writes it).

    lake_source_views(): on-run-start hook. On Spark, every source of models/staging/_sources.yml becomes a view
    <schema>.<table> over the lake's Parquet files <KUBELEDGER_LAKE>/raw/<table> (hive partitions cluster/date/hour
    for the hourly tables; `date`/`hour` are left out, `cluster` comes from the path). On DuckDB the raw tables
    live in the warehouse itself: nothing to do.
    The views name paths, not files, so they stay right while the lake grows; they are made once per Spark session
    and lake (the session conf kubeledger.lake_views holds the digest of the lake root and the sources): the second
    dbt call of a run (lookups, then the daily build) skips the 45 statements (6-12 s). -#}
{% macro lake_source_views() -%}
    {{ return(adapter.dispatch('lake_source_views', 'kubeledger')()) }}
{%- endmacro %}

{% macro default__lake_source_views() -%}
{%- endmacro %}

{% macro spark__lake_source_views() -%}
    {%- if execute -%}
        {%- set lake = env_var('KUBELEDGER_LAKE', '') | trim -%}
        {%- if not lake -%}
            {{ exceptions.raise_compiler_error("the Spark target reads the raw tables from the Parquet lake: set "
                                               ~ "KUBELEDGER_LAKE to its root (pipelines/warehouse/lake.py)") }}
        {%- endif -%}
        {%- set sources = graph.sources.values() | sort(attribute='unique_id') -%}
        {%- set digest = local_md5(lake ~ '|' ~ (sources | map(attribute='unique_id') | join(','))) -%}
        {%- if run_query('set kubeledger.lake_views').columns[1].values()[0] == digest -%}
            {{ return('') }}
        {%- endif -%}
        {%- set schemas = [] -%}
        {%- for source in sources -%}
            {%- if source.schema not in schemas -%}
                {%- do run_query('create database if not exists ' ~ source.schema) -%}
                {%- do schemas.append(source.schema) -%}
            {%- endif -%}
            {%- set files = 'parquet.`' ~ lake.rstrip('/') ~ '/raw/' ~ source.identifier ~ '`' -%}
            {%- set columns = run_query('select * from ' ~ files ~ ' limit 0').column_names -%}
            {%- do run_query('create or replace view ' ~ source.schema ~ '.' ~ source.identifier ~ ' as select '
                             ~ (columns | reject('in', ['date', 'hour']) | join(', ')) ~ ' from ' ~ files) -%}
        {%- endfor -%}
        {%- do run_query('set kubeledger.lake_views=' ~ digest) -%}
    {%- endif -%}
{%- endmacro %}
