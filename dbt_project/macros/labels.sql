{#
  Kubernetes label lookups that work whatever form the label map holds (METHOD B3, issue "labels in both forms").

  kube-state-metrics exports labels with sanitised keys (every character outside [a-zA-Z0-9_] becomes '_':
  `eks.amazonaws.com/capacityType` -> `label_eks_amazonaws_com_capacityType`; the extractor lands them without the
  `label_` prefix), while the Kubernetes API snapshot and the demo keep the original key. Every label the models
  read by key goes through label_value, so a rule written with the original key matches both forms.

  sanitised_label_key(key)          the kube-state-metrics form of a label key (without the `label_` prefix)
  label_value(json_cols, key)       the label's value from the first map (a column or a list of columns, in
                                    precedence order) that has it, original key before sanitised key; NULL if none
#}

{% macro sanitised_label_key(key) -%}
    {{ return(modules.re.sub('[^a-zA-Z0-9_]', '_', key | string)) }}
{%- endmacro %}

{% macro label_value(json_cols, key) -%}
    {%- set cols = [json_cols] if json_cols is string else json_cols -%}
    {%- set keys = [key] if sanitised_label_key(key) == key else [key, sanitised_label_key(key)] -%}
    {%- set lookups = [] -%}
    {%- for col in cols -%}
        {%- for k in keys -%}
            {%- do lookups.append(json_text(col, k)) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- if lookups | length == 1 -%}{{ lookups[0] }}{%- else -%}coalesce({{ lookups | join(', ') }}){%- endif -%}
{%- endmacro %}

{# JSON object text {key: value} of the listed keys, each looked up with label_value (node label include-list). #}
{% macro label_pick(json_cols, keys) -%}
    {%- set pairs = [] -%}
    {%- for k in keys -%}
        {%- do pairs.append((k, label_value(json_cols, k))) -%}
    {%- endfor -%}
    {{ json_object_text(pairs) }}
{%- endmacro %}

{# The node labels that mark spot / preemptible capacity, as (original key, value meaning spot), lower case. One
   list for every provider: EKS managed node groups, Karpenter, GKE spot and preemptible VMs, AKS spot pools, and
   the kops/cluster-autoscaler convention. #}
{% macro spot_node_labels() -%}
    {{ return([
        ('eks.amazonaws.com/capacityType', 'spot'),
        ('karpenter.sh/capacity-type', 'spot'),
        ('cloud.google.com/gke-spot', 'true'),
        ('cloud.google.com/gke-preemptible', 'true'),
        ('kubernetes.azure.com/scalesetpriority', 'spot'),
        ('node.kubernetes.io/lifecycle', 'spot'),
    ]) }}
{%- endmacro %}

{# label_value for a key known only at run time (a column or expression, e.g. a price file's label field). #}
{% macro label_value_expr(json_cols, key_expr) -%}
    {%- set cols = [json_cols] if json_cols is string else json_cols -%}
    {%- set lookups = [] -%}
    {%- for col in cols -%}
        {%- do lookups.append(json_text_expr(col, key_expr)) -%}
        {%- do lookups.append(json_text_expr(col, sanitise_label_key_expr(key_expr))) -%}
    {%- endfor -%}
    coalesce({{ lookups | join(', ') }})
{%- endmacro %}
