{# Parameters and shared pieces of the recommendation models (models/intermediate/recommendations). #}

{# One parameter of the dbt var `recommendations`, as the var holds it: the one read of that var. Its defaults live
   in pipelines/settings_models.py RecommendationSettings only (dbt_project.yml's vars are generated from them:
   python -m pipelines.dagster_defs.dbt_project_vars; kubeledger.yaml `recommendations:` overrides); a var given
   without a key fails naming it. The dbt-only var `recommendations_overrides` replaces some keys (a dbt unit test
   gives only the keys it changes: dbt replaces a dict var whole); a key it names must be one of the var's. #}
{% macro rec_setting(name) -%}
    {%- set given = var('recommendations') -%}
    {%- set overrides = var('recommendations_overrides') -%}
    {%- if given is not mapping or name not in given -%}
        {{ exceptions.raise_compiler_error("dbt var `recommendations` has no key `" ~ name ~ "`: give every key of "
                                           ~ "RecommendationSettings (pipelines/settings_models.py)") }}
    {%- endif -%}
    {%- if overrides is not mapping -%}
        {{ exceptions.raise_compiler_error("dbt var `recommendations_overrides` is not a mapping of keys to values") }}
    {%- endif -%}
    {%- for key in overrides if key not in given -%}
        {{ exceptions.raise_compiler_error("dbt var `recommendations_overrides` names `" ~ key ~ "`, not a key of "
                                           ~ "RecommendationSettings (pipelines/settings_models.py)") }}
    {%- endfor -%}
    {{ return(overrides[name] if name in overrides else given[name]) }}
{%- endmacro %}

{# A parameter as a SQL double. #}
{% macro rec_param(name) -%}
    {{- sql_number(rec_setting(name)) -}}
{%- endmacro %}

{# The look-back window in whole days, as a Jinja integer. #}
{% macro rec_window_days() -%}
    {{ return(rec_setting('window_days') | int) }}
{%- endmacro %}

{# Input flags carried by the hourly history models: (column, reason code as in the other marts), from the one map
   (flag_reason_codes, macros/reasons.sql). #}
{% macro rec_input_flags() -%}
    {{ return(reason_flags([
        'default_price', 'default_pue', 'embodied_fallback', 'global_default_intensity', 'no_instance_price',
        'partial_intensity_coverage', 'provider_average_profile', 'provider_estimated_intensity',
        'region_default_intensity', 'unknown_instance_type', 'utilisation_capped', 'zone_default_intensity'])) }}
{%- endmacro %}

{# The flag columns of rec_input_flags, OR-ed over the group, as one reasons string. #}
{% macro rec_reasons_agg(extra=[]) -%}
    {%- set flags = [] -%}
    {%- for col, code in rec_input_flags() -%}{%- do flags.append(('bool_or(' ~ col ~ ')', code)) -%}{%- endfor -%}
    {{ reasons_string((flags + extra) | sort(attribute=1)) }}
{%- endmacro %}

{# The days being built, each with the first day of its look-back window [window_start_ts, usage_date]; only the
   newest max_days_per_build of them, so a long backfill costs at most that many look-backs. #}
{% macro rec_build_days() -%}
    {%- set keep = rec_setting('max_days_per_build') | int -%}
    select
        usage_date,
        cluster,
        {{ dbt.dateadd('day', 1 - rec_window_days(), 'cast(usage_date as timestamp)') }} as window_start_ts
    from (select distinct cast(hour_ts as date) as usage_date, cluster from {{ ref('stg_metrics__node_hours') }}) as built
    where cast(usage_date as timestamp) > {{ dbt.dateadd('day', -keep,
        '(select cast(max(cast(hour_ts as date)) as timestamp) from ' ~ ref('stg_metrics__node_hours') ~ ')') }}
{%- endmacro %}

{# high: a full window of hours and no estimated input; medium: at least half the window; else low. #}
{% macro rec_confidence(days_col, hours_col, reasons_col) -%}
    case
        when {{ hours_col }} >= 0.9 * 24 * {{ rec_param('window_days') }} and {{ reasons_col }} = '' then 'high'
        when {{ days_col }} * 2 >= {{ rec_param('window_days') }} then 'medium'
        else 'low'
    end
{%- endmacro %}

{# Text of a number rounded to whole units (for the human action sentence). #}
{% macro rec_int_text(expr) -%}
    cast(cast(round({{ expr }}) as bigint) as string)
{%- endmacro %}

{# Text of a Kubernetes quantity in whole units (millicores, Mi), rounded up as Kubernetes users size requests: the
   one rule of the action text, the API and the CSV (pipelines/serving/query/recommendations.py `k8s_whole` applies the same
   ceil with the same 1e-9 allowance, so a value that is whole up to float error is not bumped to the next unit). #}
{% macro rec_quantity_text(expr) -%}
    cast(cast(ceil({{ expr }} - 1e-9) as bigint) as string)
{%- endmacro %}

{# The columns every recommendation model ends with, in the mart's order (after the kind's own columns). #}
{% macro rec_common_columns(kind, namespace, controller_kind, controller, container, target, action, evidence,
                            days_col='days_of_data', hours_col='hours_covered', reasons_col='estimation_reasons',
                            confidence_hours_col=none) -%}
    '{{ kind }}' || ':' || cluster || '/' || {{ target }} as recommendation_id,
    '{{ kind }}' as kind,
    {{ namespace }} as namespace,
    {{ controller_kind }} as controller_kind,
    {{ controller }} as controller,
    {{ container }} as container,
    {{ target }} as target,
    {{ action }} as action,
    {{ rec_window_days() }} as window_days,
    cast({{ days_col }} as integer) as days_of_data,
    cast({{ hours_col }} as integer) as hours_covered,
    {{ json_object_text(evidence) }} as evidence,
    {{ rec_confidence(days_col, confidence_hours_col or hours_col, reasons_col) }} as confidence,
    {{ reasons_col }} <> '' as is_estimated
{%- endmacro %}

{# Body of the `cluster_hours` CTE: hours each cluster was observed in each built day's window (the monthly
   scaling's denominator: a workload that ran part of the window saves in proportion). Needs a `days` CTE. #}
{% macro rec_cluster_hours() -%}
    select days.usage_date, days.cluster, count(distinct nodes.hour_ts) as observed_hours
    from days
    {{ rec_window_join(ref('int_node_hours_recorded'), 'nodes') }}
    group by days.usage_date, days.cluster
{%- endmacro %}

{# Body of the `cluster_intensity` CTE: each cluster's energy-weighted intensity x PUE over each built day's window
   (the CO2e of a saving that has no node of its own, e.g. a volume's storage energy). Needs a `days` CTE. #}
{% macro rec_cluster_intensity() -%}
    select days.usage_date, days.cluster,
           sum(n.energy_kwh * n.carbon_intensity_g_per_kwh * n.pue) / nullif(sum(n.energy_kwh), 0) as intensity_x_pue
    from days
    {{ rec_window_join(ref('int_node_hours_recorded'), 'n') }}
    group by days.usage_date, days.cluster
{%- endmacro %}

{# The columns of a volume over each built day's window (alias `v` of int_volume_hours_recorded joined with
   rec_window_join, grouped by days.usage_date, v.cluster, v.pv): who holds it, how long it was seen, whether a
   default price priced it, and its cost and storage energy per month (per hour it existed x 730). #}
{% macro rec_volume_window_columns() -%}
        days.usage_date, v.cluster, v.pv,
        max(v.namespace) as namespace,
        max(v.pvc) as pvc,
        count(distinct cast(v.hour_ts as date)) as days_of_data,
        count(distinct v.hour_ts) as hours_covered,
        bool_or(v.is_default_price) as is_default_price,
        sum(v.pv_cost) / count(distinct v.hour_ts) * {{ hours_per_month() }} as cost_usd_per_month,
        sum(v.energy_storage_kwh) / count(distinct v.hour_ts) * {{ hours_per_month() }} as energy_kwh_per_month
{%- endmacro %}

{# A volume saving's CO2e and flags, after `left join cluster_intensity` (rec_cluster_intensity) on the volume's day
   and cluster: its storage kWh x the cluster's intensity x PUE (the global defaults when the cluster has no energy
   in the window), flagged default_price / global_default_intensity. `alias`: the CTE holding
   rec_volume_window_columns. #}
{% macro rec_volume_co2e_and_reasons(kwh_expr, alias) -%}
        {{ kwh_expr }}
            * coalesce(cluster_intensity.intensity_x_pue, {{ default_intensity() }} * {{ default_pue() }})
            as saving_co2e_g_per_month,
        {{ reasons_string([(alias ~ '.is_default_price', 'default_price'),
                           ('cluster_intensity.intensity_x_pue is null', 'global_default_intensity')]) }}
            as estimation_reasons
{%- endmacro %}

{# Post-hook of the history models: keep `history_days` days before the newest day (they grow with every build
   otherwise; raw tables have their own retention). #}
{% macro rec_history_prune() -%}
    {{- delete_days_before(this, rec_setting('history_days') | int) -}}
{%- endmacro %}

{# The columns every recommendation model ends with, after rec_common_columns: the request change (empty for kinds
   that change no request) and the monthly savings (carbon only for the carbon-shift kinds: no money or energy). #}
{% macro rec_closing_columns(changes_requests=false, saves_money=true) -%}
    {%- set columns = [] -%}
    {%- for column in ['current_cpu_request_cores', 'recommended_cpu_request_cores', 'current_ram_request_bytes',
                       'recommended_ram_request_bytes'] -%}
        {%- do columns.append(column if changes_requests else 'cast(null as double) as ' ~ column) -%}
    {%- endfor -%}
    {%- for column in ['saving_usd_per_month', 'saving_kwh_per_month'] -%}
        {%- do columns.append(column if saves_money else 'cast(0 as double) as ' ~ column) -%}
    {%- endfor -%}
    {{ (columns + ['saving_co2e_g_per_month', 'estimation_reasons']) | join(',\n    ') }}
{%- endmacro %}

{# The flag columns of rec_input_flags OR-ed over a group, keeping their names (alias: the table they come from). #}
{% macro rec_flags_any(alias=none) -%}
    {%- set prefix = alias ~ '.' if alias else '' -%}
    {%- set columns = [] -%}
    {%- for col, code in rec_input_flags() -%}
        {%- do columns.append('bool_or(' ~ prefix ~ col ~ ') as ' ~ col) -%}
    {%- endfor -%}
    {{ columns | join(',\n        ') }}
{%- endmacro %}

{# Joins an hourly history model (alias) to each built day's look-back window; needs a `days` CTE (rec_build_days). #}
{% macro rec_window_join(relation, alias) -%}
    join {{ relation }} as {{ alias }}
        on {{ alias }}.cluster = days.cluster and {{ alias }}.hour_ts >= days.window_start_ts
        and {{ alias }}.usage_date <= days.usage_date
{%- endmacro %}

{# The node label keys that, fixed by a pod's required placement (the Kubernetes API's pinnedNodeLabels), tie it to
   its zone, region or node: such a pod is never moved to another zone. The configured carbon-zone label too. #}
{% macro rec_placement_pin_keys() -%}
    {{ return(['topology.kubernetes.io/zone', 'failure-domain.beta.kubernetes.io/zone',
               'topology.kubernetes.io/region', 'failure-domain.beta.kubernetes.io/region',
               'kubernetes.io/hostname', 'metadata.name', var('carbon_zone_label')]) }}
{%- endmacro %}

{# true when the JSON list text `keys_text` (pinnedNodeLabels) names one of rec_placement_pin_keys #}
{% macro rec_pins_placement(keys_text) -%}
    coalesce(
    {%- for key in rec_placement_pin_keys() %}
        {{ keys_text }} like {{ sql_string('%"' ~ key ~ '"%') }}{{ ' or' if not loop.last }}
    {%- endfor %}
    , false)
{%- endmacro %}

{# An abandoned replica's thresholds: under abandoned_max_cpu_cores of CPU and at most
   abandoned_max_network_bytes_per_s of traffic (sent + received). The test of a controller's replica
   (abandoned_workload) and of a whole namespace (idle_namespace). #}
{% macro rec_is_abandoned(cpu_cores, network_bytes_per_s) -%}
    ({{ cpu_cores }} < {{ rec_param('abandoned_max_cpu_cores') }}
        and {{ network_bytes_per_s }} <= {{ rec_param('abandoned_max_network_bytes_per_s') }})
{%- endmacro %}

{# The thresholds of rec_is_abandoned as evidence pairs (key, SQL), in the evidence's order. #}
{% macro rec_abandoned_evidence() -%}
    {{ return([('max_cpu_cores', rec_param('abandoned_max_cpu_cores')),
               ('max_network_bytes_per_s', rec_param('abandoned_max_network_bytes_per_s'))]) }}
{%- endmacro %}

{# A window's amount as a monthly figure: `expr` accrued over `hours` observed hours, x hours_per_month() (730).
   Written once because its order is part of the numbers: multiplied, then divided. (The volumes' figures divide
   first, rec_volume_window_columns; off-peak divides by 24 then by days: their floats stay as they are.) #}
{% macro rec_per_month(expr, hours) -%}
    ({{ expr }}) * {{ hours_per_month() }} / ({{ hours }})
{%- endmacro %}

{# A retired scope's monthly savings: its window's cost, energy_kwh and co2e_g (columns of `alias`) per observed
   cluster-hour x 730; needs the `cluster_hours` CTE joined. #}
{% macro rec_monthly_savings(alias) -%}
    {{ rec_per_month(alias ~ '.cost', 'cluster_hours.observed_hours') }} as saving_usd_per_month,
        {{ rec_per_month(alias ~ '.energy_kwh', 'cluster_hours.observed_hours') }} as saving_kwh_per_month,
        {{ rec_per_month(alias ~ '.co2e_g', 'cluster_hours.observed_hours') }} as saving_co2e_g_per_month
{%- endmacro %}
