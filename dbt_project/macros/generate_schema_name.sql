{# Use the folder's schema as-is (raw, staging, intermediate, marts, seeds), not "<target>_<custom>". #}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}{{ target.schema }}{%- else -%}{{ custom_schema_name | trim }}{%- endif -%}
{%- endmacro %}
