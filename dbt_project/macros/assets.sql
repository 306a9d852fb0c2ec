{# fct_asset_daily unions nodes, volumes, load balancers and overhead: every branch carries all cost columns,
   its own ones as given (column -> SQL expression), the others 0. #}
{%- macro asset_costs(given) -%}
    {%- for column in ['cpu_cost', 'ram_cost', 'gpu_cost', 'pv_cost', 'load_balancer_cost', 'overhead_cost'] -%}
        {{ given.get(column, 'cast(0 as double)') }} as {{ column }},{{ '\n        ' if not loop.last }}
    {%- endfor %}
{%- endmacro -%}

{# The asset attributes only nodes have, empty for the other branches. #}
{%- macro no_instance() -%}
    cast(null as string) as provider,
        cast(null as string) as instance_type,
        cast(null as string) as region,
        false as is_spot,
{%- endmacro %}
