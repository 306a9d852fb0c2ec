{#- dbt's `unit` materialization on Spark, with the tested model's rows computed once.

    dbt's own (global_project macros/materializations/tests/unit.sql) plans the model three times (a temp view of
    its empty query for the column types, get_column_schema_from_query for the float columns, the comparison) and
    the comparison (kubeledger_tolerant_unit_test_sql, float_tolerance.sql) reads the actual rows five times: DuckDB
    materialises a CTE read more than once, Spark inlines every CTE, so it analysed, optimised and ran the model
    seven times a test. Here the model's rows are written once to a table beside the model (a Parquet table, dropped
    at the end, also before the build in case a killed run left it), whose column types are the query's, and the
    comparison reads that table: ut_rec_hpa_is_the_alternative_of_sizing 22 s -> 8.5 s on a warm JVM
    (BENCHMARKS.md, session 46). What is compared is unchanged: the same rows, types and tolerance. -#}
{%- materialization unit, adapter='spark' -%}

  {% set relations = [] %}
  {% set sql_header = config.get('sql_header') if flags.REQUIRE_SQL_HEADER_IN_TEST_CONFIGS else none %}

  {% set expected_rows = config.get('expected_rows') %}
  {% set expected_sql = config.get('expected_sql') %}

  {#- the unit test's own name in the table's: two tests of one model may run at once (dbt threads) -#}
  {%- set actual_relation = this.incorporate(
        path={"identifier": this.identifier ~ '__ut_' ~ local_md5(model.unique_id)[:12]}, type='table') -%}
  {% do adapter.create_schema(actual_relation) %}  {#- the model's schema: the unit tests may run before any build #}
  {% do adapter.drop_relation(actual_relation) %}
  {% call statement('actual_rows') -%}
    {% if sql_header %}{{ sql_header }}{% endif %}
    create table {{ actual_relation }} using parquet as
    {{ sql }}
  {%- endcall %}

  {%- set columns_in_relation = adapter.get_columns_in_relation(actual_relation) -%}
  {%- set tested_expected_column_names = expected_rows[0].keys() if (expected_rows | length) > 0
        else columns_in_relation | map(attribute='name') | list -%}
  {%- set column_name_to_data_types = {} -%}
  {%- set column_name_to_quoted = {} -%}
  {%- for column in columns_in_relation -%}
  {%-   do column_name_to_data_types.update({column.name | lower: column.data_type}) -%}
  {%-   do column_name_to_quoted.update({column.name | lower: column.quoted}) -%}
  {%- endfor -%}

  {%- set expected_column_names_quoted = [] -%}
  {%- for column_name in tested_expected_column_names -%}
  {%-   do expected_column_names_quoted.append(column_name_to_quoted[column_name | lower]) -%}
  {%- endfor -%}

  {% if not expected_sql %}
  {%   set expected_sql = get_expected_sql(expected_rows, column_name_to_data_types, column_name_to_quoted) %}
  {% endif %}
  {% set unit_test_sql = get_unit_test_sql('select * from ' ~ actual_relation, expected_sql,
                                           expected_column_names_quoted) %}

  {% call statement('main', fetch_result=True) -%}
    {{ unit_test_sql }}
  {%- endcall %}

  {% do adapter.drop_relation(actual_relation) %}

  {{ return({'relations': relations}) }}

{%- endmaterialization -%}
