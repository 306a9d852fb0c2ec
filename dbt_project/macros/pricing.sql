{#- Price precedence, defined once (METHOD A4). Every price candidate of an asset carries a tier; the first tier
    in this list wins. Two levels use it:
    - an asset's price: a per-asset row of the user's Kubecost-schema CSV > the user's instance price sheet >
      the shipped instance price seed > the per-resource prices of the cluster's provider > those of 'default';
    - each per-resource price key of a provider (what "per-resource prices" above are made of): the user's
      custom file > OpenCost's file for the provider > kubeledger's seed row for the provider (load balancers) >
      OpenCost default.json > kubeledger's seed default row > OpenCost's built-in values. -#}
{% macro price_tiers() -%}
    {{ return([
        'asset_csv',
        'instance_sheet',
        'instance_seed',
        'provider_resources',
        'default_resources',
        'custom',
        'provider_file',
        'provider_seed',
        'default_file',
        'default_seed',
        'builtin',
    ]) }}
{%- endmacro %}

{#- The tier's position in price_tiers() (1 = wins); an unknown tier ranks last. -#}
{% macro price_tier_rank(tier_col) -%}
    case {{ tier_col }}
    {%- for tier in price_tiers() %} when '{{ tier }}' then {{ loop.index }}{% endfor %} end
{%- endmacro %}

{#- Rank price candidates: 1 = the winner of each partition. then_by orders candidates within a tier. -#}
{% macro price_pick(partition_by, tier_col='tier', then_by=[]) -%}
    row_number() over (
        partition by {{ partition_by | join(', ') }}
        order by {{ price_tier_rank(tier_col) }}{% for expr in then_by %}, {{ expr }}{% endfor %}
    )
{%- endmacro %}
