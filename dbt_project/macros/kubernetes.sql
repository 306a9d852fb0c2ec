{# The columns of a Kubernetes API object snapshot after its keys (cluster, snapshot_hour_ts, kind), in order:
   stg_kubernetes__object_snapshots selects them from the source, stg_kubernetes__objects keeps them. #}
{% macro kubernetes_object_columns() -%}
    {{ return(['namespace', 'name', 'uid', 'labels', 'annotations', 'owner_kind', 'owner_name', 'owner_uid', 'spec']) }}
{%- endmacro %}

{# Body of the `pod_container_counts` CTE: how many containers ran in each pod-hour, what per_container divides by.
   From the table, not a CTE of the model: a CTE read twice is materialised whole (every column of every
   container-hour held in memory; 12.2 -> 7.1 s at 1,000 nodes, and it spilled at 5,000). #}
{% macro pod_container_counts() -%}
    select cluster, hour_ts, pod_uid, count(*) as containers_in_pod
    from {{ ref('int_containers_allocated_hourly') }}
    group by cluster, hour_ts, pod_uid
{%- endmacro %}

{# A pod-level quantity (its volumes', load balancers' or network's) split evenly over the pod's containers: one
   container's share. Needs the pod_container_counts CTE joined on the container's cluster, hour_ts and pod_uid. #}
{% macro per_container(expr) -%}
    ({{ expr }}) / pod_container_counts.containers_in_pod
{%- endmacro %}
