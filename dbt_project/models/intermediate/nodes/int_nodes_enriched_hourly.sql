-- grain: one row per (cluster, hour_ts, node)
-- Provider from spec.providerID (never label heuristics), region from labels or the zone, spot from labels,
-- carbon zone from the override label, the cluster setting or the region map. Every label is read through
-- label_value: the hour's metric labels (original or kube-state-metrics' sanitised keys) before the Kubernetes
-- API snapshot's labels.
with nodes as (
    select * from {{ ref('stg_metrics__node_hours') }}
),

k8s_nodes as (
    -- the Kubernetes API snapshot fills what the metrics lack (provider id, labels)
    select cluster, name as node, {{ json_text('spec', 'providerID') }} as provider_id, labels
    from {{ ref('stg_kubernetes__objects') }}
    where kind = 'Node'
),

cluster_config as (
    select * from {{ cluster_config_relation() }}
),

zones as (
    select
        lower(provider) as provider,
        lower(region) as region,
        nullif(electricitymaps_zone, '') as electricitymaps_zone
    from {{ ref('region_carbon_zones') }}
),

nodes_filled as (
    select
        nodes.cluster,
        nodes.hour_ts,
        nodes.node,
        coalesce(nullif(nodes.provider_id, ''), nullif(k8s_nodes.provider_id, '')) as provider_id,
        nodes.instance_type,
        nodes.region,
        nodes.zone,
        case when nodes.labels = '{}' and k8s_nodes.labels is not null then k8s_nodes.labels else nodes.labels end
            as labels,
        k8s_nodes.labels as snapshot_labels,
        nodes.cpu_capacity_cores,
        nodes.ram_capacity_bytes,
        nodes.gpu_capacity,
        nodes.cpu_allocatable_cores,
        nodes.ram_allocatable_bytes,
        nodes.gpu_model,
        nodes.node_run_h
    from nodes
    left join k8s_nodes on k8s_nodes.cluster = nodes.cluster and k8s_nodes.node = nodes.node
),

with_provider as (
    select
        nodes.*,
        case
            when nodes.provider_id like 'aws://%' then 'aws'
            when nodes.provider_id like 'gce://%' then 'gcp'
            when nodes.provider_id like 'azure://%' then 'azure'
            when nodes.provider_id like 'alicloud://%' or nodes.provider_id like 'alibaba://%' then 'alibaba'
            when nodes.provider_id like 'oci://%' or nodes.provider_id like 'ocid1.%' then 'oracle'
            when nodes.provider_id like 'scaleway://%' then 'scaleway'
            when nodes.provider_id like 'openstack://%' and cluster_config.provider = 'ovhcloud' then 'ovhcloud'
            else coalesce(cluster_config.provider, 'onprem')
        end as provider,
        cluster_config.region as cluster_region,
        cluster_config.carbon_zone as cluster_carbon_zone,
        cluster_config.pue as cluster_pue,
        coalesce(
            nullif(nodes.instance_type, ''),
            {{ label_value(['nodes.labels', 'nodes.snapshot_labels'], 'node.kubernetes.io/instance-type') }},
            {{ label_value(['nodes.labels', 'nodes.snapshot_labels'], 'beta.kubernetes.io/instance-type') }}
        ) as instance_type_resolved,
        coalesce(
            nullif(nodes.zone, ''),
            {{ label_value(['nodes.labels', 'nodes.snapshot_labels'], 'topology.kubernetes.io/zone') }},
            {{ label_value(['nodes.labels', 'nodes.snapshot_labels'], 'failure-domain.beta.kubernetes.io/zone') }}
        ) as zone_resolved,
        nullif({{ label_value(['nodes.labels', 'nodes.snapshot_labels'], var('carbon_zone_label')) }}, '')
            as label_carbon_zone
    from nodes_filled as nodes
    left join cluster_config on nodes.cluster = cluster_config.cluster
),

with_region as (
    select
        *,
        lower(coalesce(
            nullif(region, ''),
            {{ label_value(['labels', 'snapshot_labels'], 'topology.kubernetes.io/region') }},
            {{ label_value(['labels', 'snapshot_labels'], 'failure-domain.beta.kubernetes.io/region') }},
            -- us-east-1a -> us-east-1, europe-west9-a -> europe-west9, westeurope-1 -> westeurope (AKS zone 0 = none)
            case
                when zone_resolved is null or zone_resolved in ('0', '') then null
                when provider = 'aws' then {{ regex_replace('zone_resolved', '[a-z]$', '') }}
                when provider = 'gcp' then {{ regex_replace('zone_resolved', '-[a-z]$', '') }}
                when provider = 'azure' then {{ regex_replace('zone_resolved', '-[0-9]+$', '') }}
            end,
            cluster_region
        )) as region_resolved,
        (
            false
            {%- for key, value in spot_node_labels() %}
            or lower(coalesce({{ label_value(['labels', 'snapshot_labels'], key) }}, '')) = '{{ value }}'
            {%- endfor %}
        ) as is_spot
    from with_provider
),

final as (
    select
        with_region.cluster,
        with_region.hour_ts,
        with_region.node,
        with_region.provider_id,
        with_region.provider,
        with_region.instance_type_resolved as instance_type,
        with_region.region_resolved as region,
        with_region.zone_resolved as availability_zone,
        with_region.labels,
        {{ label_pick(['with_region.labels', 'with_region.snapshot_labels'], [
            'node.kubernetes.io/instance-type', 'eks.amazonaws.com/nodegroup', 'cloud.google.com/gke-nodepool',
            'kubernetes.azure.com/agentpool', 'karpenter.sh/nodepool']) }} as node_labels,
        with_region.is_spot,
        coalesce(with_region.cpu_capacity_cores, 1.0) as vcpus,
        with_region.cpu_capacity_cores is null as is_vcpu_unknown,
        coalesce(with_region.ram_capacity_bytes, 0) as ram_capacity_bytes,
        with_region.ram_capacity_bytes is null as is_ram_unknown,
        with_region.gpu_capacity as gpu_count,
        with_region.gpu_model,
        with_region.cpu_allocatable_cores,
        with_region.ram_allocatable_bytes,
        with_region.node_run_h,
        with_region.cluster_pue,
        coalesce(with_region.label_carbon_zone, with_region.cluster_carbon_zone, zones.electricitymaps_zone)
            as carbon_zone,
        case
            when with_region.label_carbon_zone is not null then 'node_label'
            when with_region.cluster_carbon_zone is not null then 'cluster_config'
            when zones.electricitymaps_zone is not null then 'region_map'
            else 'none'
        end as carbon_zone_source
    from with_region
    left join zones
        on with_region.provider = zones.provider
        and with_region.region_resolved = zones.region
)

select * from final
