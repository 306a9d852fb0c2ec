{% test row_rules(model, unique=none, not_null=none, accepted=none) %}
{#- A model's row rules as ONE test: a dbt node, a query and a Dagster check instead of one per rule (a node costs
    ~35 ms of dbt and Dagster per daily build on DuckDB, a query plan and a job on Spark). One row per broken rule:
    - unique: [columns] (a key) or [[columns], ...] (several keys): each combination of a key's columns found on
      more than one row (NULLs compare equal), with how many rows;
    - not_null: [columns]: each column that holds NULLs, with how many rows;
    - accepted: {column: [values]}: each column holding values outside its list, the least of them and how many
      rows hold one (NULL passes, as in dbt's accepted_values; a NULL there is not_null's to catch).
    The not-null and accepted-values rules share one scan of the model; each key is a group-by of its own. -#}
{%- set keys = [] if not unique else ([unique] if unique[0] is string else unique) %}
{%- set not_null = not_null or [] %}
{%- set accepted = accepted or {} %}
{%- if not (keys or not_null or accepted) %}
{{ exceptions.raise_compiler_error("row_rules on " ~ model ~ ": give unique, not_null or accepted") }}
{%- endif %}
{#- (rule, detail expression, count expression) of each rule the scan checks #}
{%- set scanned = [] %}
{%- for column in not_null %}
{%- do scanned.append(("not_null", "'" ~ column ~ "'", "nulls_" ~ loop.index)) %}
{%- endfor %}
{%- for column in accepted %}
{%- do scanned.append(("accepted " ~ column, "outside_value_" ~ loop.index, "outside_" ~ loop.index)) %}
{%- endfor %}
with
{%- for key in keys %}
duplicates_{{ loop.index }} as (
    select
        {% for column in key -%}
        coalesce(cast({{ column }} as string), 'NULL'){{ " || ', ' || " if not loop.last }}
        {%- endfor %} as detail,
        count(*) as rows_found
    from {{ model }}
    group by {{ key | join(', ') }}
    having count(*) > 1
){{ "," if scanned or not loop.last }}
{%- endfor %}
{%- if scanned %}
counts as (
    select
        {%- for column in not_null %}
        sum(case when {{ column }} is null then 1 else 0 end) as nulls_{{ loop.index }}{{ "," if accepted or not loop.last }}
        {%- endfor %}
        {%- for column, values in accepted.items() %}
        {%- set outside -%}
        {{ column }} is not null
            and {{ column }} not in ({% for v in values %}'{{ v | replace("'", "''") }}'{{ ", " if not loop.last }}{% endfor %})
        {%- endset %}
        sum(case when {{ outside }} then 1 else 0 end) as outside_{{ loop.index }},
        min(case when {{ outside }} then cast({{ column }} as string) end) as outside_value_{{ loop.index }}{{ "," if not loop.last }}
        {%- endfor %}
    from {{ model }}
)
{%- endif %}
{% for key in keys %}
select 'unique {{ key | join(", ") }}' as rule, detail, rows_found from duplicates_{{ loop.index }}
{{ "union all" if scanned or not loop.last }}
{%- endfor %}
{%- if scanned %}
{#- the rules' list crossed with the scan's one row: the scan is read once (a union of a branch per rule would read
    it once per branch where Spark inlines the CTE) #}
{%- set found -%}
case rules.rule_index{% for r in scanned %} when {{ loop.index }} then {{ r[2] }}{% endfor %} end
{%- endset %}
select
    rules.rule,
    case rules.rule_index{% for r in scanned %} when {{ loop.index }} then {{ r[1] }}{% endfor %} end as detail,
    {{ found }} as rows_found
from counts
cross join (
    values {% for r in scanned %}({{ loop.index }}, '{{ r[0] }}'){{ ", " if not loop.last }}{% endfor %}
) as rules (rule_index, rule)
where {{ found }} > 0
{%- endif %}
{% endtest %}
