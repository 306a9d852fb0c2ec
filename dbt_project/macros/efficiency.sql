{# OpenCost efficiency (METHOD A14): usage / request when requested; 0 with no request and no usage or no cost;
   1.0 with usage but no request. #}
{% macro efficiency(usage_avg, request_avg, cost) -%}
    case
        when coalesce({{ request_avg }}, 0) > 0 then coalesce({{ usage_avg }}, 0) / {{ request_avg }}
        when coalesce({{ usage_avg }}, 0) = 0 or coalesce({{ cost }}, 0) = 0 then 0.0
        else 1.0
    end
{%- endmacro %}
