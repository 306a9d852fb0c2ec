{# The columns of a Kubernetes API object snapshot after its keys (cluster, snapshot_hour_ts, kind), in order:
   stg_kubernetes__object_snapshots selects them from the source, stg_kubernetes__objects keeps them. #}
{% macro kubernetes_object_columns() -%}
    {{ return(['namespace', 'name', 'uid', 'labels', 'annotations', 'owner_kind', 'owner_name', 'owner_uid', 'spec']) }}
{%- endmacro %}
