{#
  GPU power per node-hour (METHOD B9), used by int_nodes_energy_hourly.

  gpu_power_ctes(nodes) -> the CTEs gpu_metrics (DCGM readings summed per node-hour) and gpu_profile_match (the CCF
  GPU profile of each GPU node-hour) for a model whose CTE `nodes` has cluster, hour_ts, node, gpu_count, gpu_model.
  gpu_energy_j(node, metrics, profiles) -> joules of a node-hour's GPUs: the measured power when DCGM reports it,
  else the CCF min/max interpolation at the reported utilisation (50 % when unknown); 0 with energy_gpu off.
#}
{% macro gpu_power_ctes(nodes='nodes') -%}
gpu_metrics as (
    select
        cluster,
        hour_ts,
        node,
        count(*) as gpus_reporting,
        sum(power_avg_w) as gpu_power_w,
        avg(util_avg) as gpu_util,
        max(model_name) as gpu_model_reported
    from {{ ref('stg_metrics__gpu_hours') }}
    group by cluster, hour_ts, node
),

gpu_profiles as (
    select lower(gpu_model) as gpu_model, lower(ccf_name) as ccf_name, min_watts, max_watts
    from {{ ref('gpu_power_profiles') }}
),

gpu_profile_match as (
    -- DCGM reports e.g. 'Tesla T4' or 'NVIDIA A100-SXM4-40GB': the longest CCF model name inside it wins
    select * from (
        select
            {{ nodes }}.cluster,
            {{ nodes }}.hour_ts,
            {{ nodes }}.node,
            gpu_profiles.min_watts,
            gpu_profiles.max_watts,
            row_number() over (
                partition by {{ nodes }}.cluster, {{ nodes }}.hour_ts, {{ nodes }}.node
                order by length(gpu_profiles.gpu_model) desc
            ) as pick
        from {{ nodes }}
        left join gpu_metrics
            on gpu_metrics.cluster = {{ nodes }}.cluster and gpu_metrics.hour_ts = {{ nodes }}.hour_ts
            and gpu_metrics.node = {{ nodes }}.node
        join gpu_profiles
            on lower(coalesce(gpu_metrics.gpu_model_reported, {{ nodes }}.gpu_model))
            like '%' || gpu_profiles.gpu_model || '%'
        where {{ nodes }}.gpu_count > 0
    ) as ranked
    where pick = 1
)
{%- endmacro %}

{% macro gpu_energy_j(node, metrics='gpu_metrics', profiles='gpu_profiles') -%}
    {% if var('energy_gpu') -%}
    case
        when {{ node }}.gpu_count <= 0 then 0.0
        when {{ metrics }}.gpu_power_w is not null then {{ metrics }}.gpu_power_w * {{ node }}.node_run_s
        else {{ node }}.gpu_count * (coalesce({{ profiles }}.min_watts, 0)
             + (coalesce({{ profiles }}.max_watts, 0) - coalesce({{ profiles }}.min_watts, 0))
             * coalesce({{ metrics }}.gpu_util, 0.5)) * {{ node }}.node_run_s
    end
    {%- else -%}cast(0 as double){%- endif %}
{%- endmacro %}

{#- The fallbacks of the carbon chain (METHOD B4, B5), as SQL doubles: each reads its one dbt var, whose value is
    pipelines/settings_models.py EnergySettings' (dbt_project.yml equals it, tests/unit/test_dbt_defaults.py). -#}
{% macro default_intensity() -%}
    {{ sql_number(var('default_intensity_g_per_kwh')) }}
{%- endmacro %}

{% macro default_pue() -%}
    {{ sql_number(var('default_pue')) }}
{%- endmacro %}

{#- The embodied fallback (METHOD B6): 100 kg over a 4-year life (35,040 h), in g per hour. A double on every engine:
    Spark divides two decimal literals as DECIMAL rounded to 8 places (2.85388128 instead of 2.853881278538813). -#}
{% macro default_embodied_g_per_hour() -%}
    (cast(100000.0 as double) / 35040.0)
{%- endmacro %}
