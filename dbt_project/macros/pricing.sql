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

{#- The one match of a Kubecost-schema CSV row (stg_pricing__node_prices, alias `csv`) to an asset, by the row's
    InstanceIDField (METHOD A4, A7): the node, GPU and PV prices all match through it. Pass the asset's columns it
    has; a field whose column is not passed matches nothing:
    - name          metadata.name
    - provider_id   spec.providerID (the whole providerID)
    - labels        metadata.labels.<key> (the label in both forms, A13.1); for a `gpu` row also a bare label key
                    (OpenCost's GPU class fields: nvidia.com/gpu_type, gpu.nvidia.com/class)
    - storage_class spec.storageClassName
    - region        a row with a region matches that region only; a blank region matches any (not passed: the
                    row's region is not read)
    Several rows may match one asset: rank them with csv_match_order. -#}
{% macro csv_instance_match(csv, name, provider_id=none, labels=none, storage_class=none, region=none) -%}
    {%- set field = csv ~ '.instance_id_field' -%}
    {%- set id = csv ~ '.instance_id' -%}
    (
        {%- if region %}
        ({{ csv }}.region is null or {{ csv }}.region = {{ region }}) and
        {%- endif %}
        (
            ({{ field }} = 'metadata.name' and {{ id }} = {{ name }})
            {%- if provider_id %}
            or ({{ field }} = 'spec.providerID' and {{ id }} = {{ provider_id }})
            {%- endif %}
            {%- if labels %}
            or ({{ field }} like 'metadata.labels.%'
                and {{ id }} = {{ label_value_expr(labels, 'substr(' ~ field ~ ', 17)') }})
            or ({{ csv }}.asset_class = 'gpu' and {{ field }} not like 'metadata.%' and {{ field }} not like 'spec.%'
                and {{ id }} = {{ label_value_expr(labels, field) }})
            {%- endif %}
            {%- if storage_class %}
            or ({{ field }} = 'spec.storageClassName' and {{ id }} = {{ storage_class }})
            {%- endif %}
        )
    )
{%- endmacro %}

{#- ORDER BY terms ranking the CSV rows csv_instance_match matched for one asset, first = wins: with `region`, a
    row of the asset's region before a blank-region row; then by field: spec.providerID, metadata.name,
    metadata.labels.<key>, spec.storageClassName, a bare label key. -#}
{% macro csv_match_order(csv, region=none) -%}
    {%- if region %}case when {{ csv }}.region is not null then 0 else 1 end, {% endif -%}
    case
        when {{ csv }}.instance_id_field = 'spec.providerID' then 1
        when {{ csv }}.instance_id_field = 'metadata.name' then 2
        when {{ csv }}.instance_id_field like 'metadata.labels.%' then 3
        when {{ csv }}.instance_id_field = 'spec.storageClassName' then 4
        else 5
    end
{%- endmacro %}
