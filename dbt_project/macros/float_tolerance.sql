{#- Floating-point comparisons with a tolerance, for dbt unit tests and the singular tests.

    Doubles summed in a different order (DuckDB aggregates in parallel) can differ in the last bit, so no test may
    compare them bit-exact: two doubles are equal when |a - b| < max(abs_tol, rel_tol * max(|a|, |b|)), or a = b
    (same infinity; NaN = NaN on DuckDB, Postgres and Spark). NaN never matches a number (the strict `<` is false
    when the tolerance is NaN) and NULL only matches NULL. -#}

{% macro float_rel_tolerance() %}{{ return(1e-9) }}{% endmacro %}
{% macro float_abs_tolerance() %}{{ return(1e-12) }}{% endmacro %}

{#- SQL predicate: the two float expressions are equal within the tolerance (NULL when either is NULL). -#}
{% macro floats_close(a, b, rel_tol=none, abs_tol=none) -%}
    {{ return(adapter.dispatch('floats_close', 'kubeledger')(
        a, b, float_rel_tolerance() if rel_tol is none else rel_tol,
        float_abs_tolerance() if abs_tol is none else abs_tol)) }}
{%- endmacro %}
{% macro default__floats_close(a, b, rel_tol, abs_tol) -%}
    (({{ a }}) = ({{ b }})
     or abs(({{ a }}) - ({{ b }})) < greatest({{ abs_tol }}, {{ rel_tol }} * greatest(abs({{ a }}), abs({{ b }}))))
{%- endmacro %}

{#- SQL predicate for the singular tests: the two (non-NULL) float expressions differ beyond the tolerance. -#}
{% macro floats_differ(a, b, rel_tol=none, abs_tol=none) -%}
    (not {{ floats_close(a, b, rel_tol, abs_tol) }})
{%- endmacro %}


{#- ---------------------------------------------------------------------------------------------------------------
    dbt unit tests: float columns compare within the tolerance, every other column exactly.

    dbt's `unit` materialization runs get_unit_test_sql() and diffs the 'actual' rows against the 'expected' rows
    in Python (daff), value by value, so 0.5833333333333334 <> 0.5833333333333333 fails the test. This override
    (the root project's default__ wins over dbt's for the 'dbt' macro namespace) decides equality in SQL instead:

      * the float columns of the tested model are found with get_column_schema_from_query (dispatched:
        unit_test_float_columns, below; an adapter without it can override that macro);
      * every row r of either side must match within the tolerance exactly as many actual rows as expected rows
        (a multiset comparison that is exact for the exactly-compared columns and counts duplicates), and must
        match itself (a value that equals nothing, e.g. NaN where NaN <> NaN, fails the test);
      * when every row passes, the expected rows are returned as the actual rows, so dbt's diff finds nothing;
        otherwise the real actual rows are returned unchanged and dbt shows its usual diff.

    Adapters that ship their own <adapter>__get_unit_test_sql (sqlserver, fabric, teradata...) keep it: a root
    default__ would otherwise shadow it. Spark, Postgres and others use the portable SQL below.
    -------------------------------------------------------------------------------------------------------------- -#}

{% macro default__get_unit_test_sql(main_sql, expected_fixture_sql, expected_column_names) -%}
  {%- set adapter_own = dbt.get(adapter.type() ~ '__get_unit_test_sql') if dbt is mapping else none -%}
  {%- if adapter_own is not none -%}
    {{ adapter_own(main_sql, expected_fixture_sql, expected_column_names) }}
  {%- else -%}
    {{ kubeledger_tolerant_unit_test_sql(main_sql, expected_fixture_sql, expected_column_names) }}
  {%- endif -%}
{%- endmacro %}

{#- {lower-cased column name (plain and quoted): relative tolerance} for the float columns of the model's output:
    float_rel_tolerance() for doubles, 1e-6 for single precision (a float32 ulp is ~1.2e-7 relative). -#}
{% macro unit_test_float_columns(main_sql) -%}
    {{ return(adapter.dispatch('unit_test_float_columns', 'kubeledger')(main_sql)) }}
{%- endmacro %}
{% macro default__unit_test_float_columns(main_sql) -%}
    {{ return(kubeledger_float_columns_of(main_sql, ['real', 'float4'])) }}
{%- endmacro %}
{% macro duckdb__unit_test_float_columns(main_sql) -%}
    {#- DuckDB's FLOAT is REAL (4 bytes) -#}
    {{ return(kubeledger_float_columns_of(main_sql, ['real', 'float4', 'float'])) }}
{%- endmacro %}
{% macro spark__unit_test_float_columns(main_sql) -%}
    {#- Spark's FLOAT is single precision too -#}
    {{ return(kubeledger_float_columns_of(main_sql, ['real', 'float4', 'float'])) }}
{%- endmacro %}
{% macro kubeledger_float_columns_of(main_sql, single_precision_types) -%}
    {%- set tolerances = {} -%}
    {%- if execute -%}
        {%- for column in get_column_schema_from_query(main_sql) if column.is_float() -%}
            {%- set rel_tol = 1e-6 if column.dtype | lower in single_precision_types else float_rel_tolerance() -%}
            {%- do tolerances.update({column.name | lower: rel_tol, column.quoted | lower: rel_tol}) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(tolerances) }}
{%- endmacro %}

{% macro kubeledger_tolerant_unit_test_sql(main_sql, expected_fixture_sql, expected_column_names) -%}
{%- set float_tolerances = unit_test_float_columns(main_sql) -%}
{%- set side = adapter.quote("actual_or_expected") -%}
{%- set match = [] -%}
{%- for col in expected_column_names -%}
  {%- if col | lower in float_tolerances -%}
    {%- do match.append("((p." ~ col ~ " is null and o." ~ col ~ " is null) or "
                        ~ floats_close("p." ~ col, "o." ~ col, float_tolerances[col | lower]) ~ ")") -%}
  {%- else -%}
    {%- do match.append("((p." ~ col ~ " is null and o." ~ col ~ " is null) or p." ~ col ~ " = o." ~ col ~ ")") -%}
  {%- endif -%}
{%- endfor -%}
{%- if not match %}{% do match.append("1 = 1") %}{% endif -%}
{%- set columns = expected_column_names | join(", ") -%}
-- Build actual result given inputs (the CTE name is dbt's: an empty expected fixture selects from it)
with dbt_internal_unit_test_actual as (
  select
    {{ columns }}, {{ dbt.string_literal("actual") }} as {{ side }}
  from (
    {{ main_sql }}
  ) _dbt_internal_unit_test_actual
),
-- Build expected result
dbt_internal_unit_test_expected as (
  select
    {{ columns }}, {{ dbt.string_literal("expected") }} as {{ side }}
  from (
    {{ expected_fixture_sql }}
  ) _dbt_internal_unit_test_expected
),
dbt_internal_unit_test_rows as (
  select * from dbt_internal_unit_test_actual
  union all
  select * from dbt_internal_unit_test_expected
),
-- per row of either side: how many actual and expected rows it matches (floats within the tolerance)
dbt_internal_unit_test_matches as (
  select
    p.{{ side }} as probe_side,
    sum(case when o.{{ side }} = {{ dbt.string_literal("actual") }} then 1 else 0 end) as n_actual,
    sum(case when o.{{ side }} = {{ dbt.string_literal("expected") }} then 1 else 0 end) as n_expected
  from dbt_internal_unit_test_rows p
  left join dbt_internal_unit_test_rows o
    on {{ match | join("\n    and ") }}
  group by p.{{ side }}{% for col in expected_column_names %}, p.{{ col }}{% endfor %}
),
dbt_internal_unit_test_verdict as (
  select count(*) as dbt_internal_unit_test_mismatches
  from dbt_internal_unit_test_matches
  where n_actual <> n_expected
     or (probe_side = {{ dbt.string_literal("actual") }} and n_actual = 0)
     or (probe_side = {{ dbt.string_literal("expected") }} and n_expected = 0)
)
-- equal within the tolerance: report the expected rows as the actual ones, so dbt's exact diff passes
select {% for col in expected_column_names %}e.{{ col }}, {% endfor %}{{ dbt.string_literal("actual") }} as {{ side }}
from dbt_internal_unit_test_expected e
cross join dbt_internal_unit_test_verdict v
where v.dbt_internal_unit_test_mismatches = 0
union all
-- different: the real actual rows, for dbt's diff
select {% for col in expected_column_names %}a.{{ col }}, {% endfor %}a.{{ side }}
from dbt_internal_unit_test_actual a
cross join dbt_internal_unit_test_verdict v
where v.dbt_internal_unit_test_mismatches > 0
union all
select * from dbt_internal_unit_test_expected
{%- endmacro %}
