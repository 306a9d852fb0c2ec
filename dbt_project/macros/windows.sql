{# The half-open rebuild window [min_ts, max_ts) and the optional cluster restriction.
   Staging models filter with these, so everything downstream works on the window only. #}
{% macro window_filter(ts_col='hour_ts', cluster_col='cluster') -%}
    1 = 1
    {%- if var('min_ts', none) %} and {{ ts_col }} >= cast({{ sql_string(var('min_ts')) }} as timestamp){% endif -%}
    {%- if var('max_ts', none) %} and {{ ts_col }} < cast({{ sql_string(var('max_ts')) }} as timestamp){% endif -%}
    {%- if cluster_col and var('cluster', none) %} and {{ cluster_col }} = {{ sql_string(var('cluster')) }}{% endif -%}
{%- endmacro %}

{# Per-cluster settings from kubeledger.yaml as a relation (cluster, provider, region, carbon_zone, pue,
   billing_account_id, billing_account_name). #}
{% macro cluster_config_relation() -%}
    {%- set clusters = var('clusters', {}) -%}
    {%- if clusters | length == 0 -%}
    (select cast(null as string) as cluster, cast(null as string) as provider, cast(null as string) as region,
            cast(null as string) as carbon_zone, cast(null as double) as pue,
            cast(null as string) as billing_account_id, cast(null as string) as billing_account_name where 1 = 0)
    {%- else -%}
    (select * from (values
    {%- for name, c in clusters.items() %}
        ({{ sql_string(name) }}, {{ sql_string(c.get('provider')) }}, {{ sql_string(c.get('region')) }},
         {{ sql_string(c.get('carbon_zone')) }}, {{ sql_number(c.get('pue')) }},
         {{ sql_string(c.get('billing_account_id')) }}, {{ sql_string(c.get('billing_account_name')) }})
         {%- if not loop.last %},{% endif %}
    {%- endfor %}
    ) as t(cluster, provider, region, carbon_zone, pue, billing_account_id, billing_account_name))
    {%- endif -%}
{%- endmacro %}

{# The days (and cluster) one build writes: usage_date in the window's days [min_ts, max_ts). The cross-mart tests
   judge only these: in an asset backfill the daemon builds the marts in several runs, so other days may hold one
   mart of a run and not yet the other (the Dagster checks are per partition window too). #}
{% macro built_days_filter(date_col='usage_date', cluster_col='cluster') -%}
    {%- set first, last = var('min_ts', none), var('max_ts', none) -%}
    1 = 1
    {%- if first %} and {{ date_col }} >= cast(cast({{ sql_string(first) }} as timestamp) as date){% endif -%}
    {%- if last %} and {{ date_col }} < cast(cast({{ sql_string(last) }} as timestamp) as date){% endif -%}
    {%- if cluster_col and var('cluster', none) %} and {{ cluster_col }} = {{ sql_string(var('cluster')) }}{% endif -%}
{%- endmacro %}
