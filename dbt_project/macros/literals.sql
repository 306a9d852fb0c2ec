{# Values that reach SQL through vars are escaped here; identifiers never come from vars. #}
{% macro sql_string(value) -%}
    {%- if value is none -%}cast(null as string){%- else -%}{{ string_literal_of(value) }}{%- endif -%}
{%- endmacro %}

{% macro sql_number(value) -%}
    {%- if value is none -%}cast(null as double){%- else -%}cast({{ value | float }} as double){%- endif -%}
{%- endmacro %}

{% macro sql_bool(value) -%}
    {%- if value in (true, 'true', 'True', 1, '1') -%}true{%- else -%}false{%- endif -%}
{%- endmacro %}
