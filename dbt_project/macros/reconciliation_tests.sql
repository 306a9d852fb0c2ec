{#- The cross-mart sums the blocking singular tests compare (tests/singular/). #}

{% macro allocation_sums_match_assets(measures) -%}
{#- measures: [(name, allocation expression, asset expression)], each summed per cluster and day over
    fct_allocation_daily and fct_asset_daily on the days the build wrote (built_days_filter); returns
    (kind, usage_date, cluster, allocated, asset, difference) where the two sums differ beyond floats_differ. -#}
with allocation as (
    select
        usage_date,
        cluster,
        {%- for name, allocated, _ in measures %}
        sum({{ allocated }}) as {{ name }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ ref('fct_allocation_daily') }}
    where {{ built_days_filter() }}
    group by usage_date, cluster
),

assets as (
    select
        usage_date,
        cluster,
        {%- for name, _, asset in measures %}
        sum({{ asset }}) as {{ name }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ ref('fct_asset_daily') }}
    where {{ built_days_filter() }}
    group by usage_date, cluster
),

compared as (
    select
        coalesce(allocation.usage_date, assets.usage_date) as usage_date,
        coalesce(allocation.cluster, assets.cluster) as cluster,
        {%- for name, _, _ in measures %}
        coalesce(allocation.{{ name }}, 0) as allocated_{{ name }},
        coalesce(assets.{{ name }}, 0) as asset_{{ name }}{{ ',' if not loop.last }}
        {%- endfor %}
    from allocation
    full outer join assets
        on assets.usage_date = allocation.usage_date and assets.cluster = allocation.cluster
)

{% for name, _, _ in measures -%}
select
    '{{ name }}' as kind, usage_date, cluster, allocated_{{ name }} as allocated, asset_{{ name }} as asset,
    allocated_{{ name }} - asset_{{ name }} as difference
from compared
where {{ floats_differ('allocated_' ~ name, 'asset_' ~ name) }}
{% if not loop.last %}
union all
{% endif %}
{%- endfor %}
{%- endmacro %}
