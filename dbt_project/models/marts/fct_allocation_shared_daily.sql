-- grain: as marts.fct_allocation_daily (one row per allocation row identity and day), with the configured default
-- sharing policy applied (kubeledger.yaml `sharing`): idle shared per resource, shared namespaces / labels and the
-- monthly overhead spread over the remaining rows of the same cluster and day (share scope 'cluster': re-building one
-- cluster never changes another cluster's rows; the overhead is per cluster). The algorithm is the single implementation in
-- macros/allocation_sharing.sql, also used by the allocation API with per-request options.
{%- set policy = var('sharing', {}) %}
{{ config(unique_key=['usage_date', 'cluster']) }}

with allocations as (
    select * from {{ ref('fct_allocation_daily') }}
    where {{ window_filter('cast(usage_date as timestamp)', 'cluster') }}
),

shared as (
    {{ share_allocations(
        'allocations',
        key_expr="cluster || '/' || coalesce(node, '') || '/' || coalesce(namespace, '') || '/' || pod_uid || '/' || container",
        step_col='usage_date',
        options={
            'share_idle': policy.get('share_idle', false),
            'idle_split': policy.get('idle_split', 'weighted'),
            'idle_by_node': policy.get('idle_by_node', false),
            'split_idle': 'row',
            'include_idle': true,
            'share_split': policy.get('split', 'weighted'),
            'overhead_monthly_usd': policy.get('monthly_overhead_usd', 0),
            'shared_namespaces': policy.get('shared_namespaces', []),
            'shared_labels': policy.get('shared_labels', []),
            'share_scope': 'cluster',
        }) }}
),

final as (
    select
        cast(shared.step_start as date) as usage_date,
        shared.window_start,
        shared.window_end,
        shared.cluster,
        shared.node,
        shared.namespace,
        shared.pod,
        shared.pod_uid,
        shared.container,
        shared.allocation_kind,
        shared.allocation_name,
        shared.controller_kind,
        shared.controller,
        shared.provider_id,
        shared.labels,
        shared.annotations,
        shared.namespace_labels,
        shared.namespace_annotations,
        shared.node_labels,
        shared.services,
        shared.start_ts,
        shared.end_ts,
        shared.minutes,
        shared.cpu_core_hours,
        shared.cpu_core_request_average,
        shared.cpu_core_usage_average,
        shared.cpu_core_usage_max,
        shared.cpu_cost,
        shared.cpu_cost_idle,
        shared.cpu_efficiency,
        shared.gpu_hours,
        shared.gpu_request_average,
        shared.gpu_usage_average,
        shared.gpu_cost,
        shared.gpu_cost_idle,
        shared.gpu_efficiency,
        shared.ram_byte_hours,
        shared.ram_byte_request_average,
        shared.ram_byte_usage_average,
        shared.ram_byte_usage_max,
        shared.ram_cost,
        shared.ram_cost_idle,
        shared.ram_efficiency,
        shared.pv_byte_hours,
        shared.pv_cost,
        shared.network_transfer_bytes,
        shared.network_receive_bytes,
        shared.network_cross_zone_cost,
        shared.network_cross_region_cost,
        shared.network_internet_cost,
        shared.network_cost,
        shared.load_balancer_cost,
        shared.shared_cost,
        shared.external_cost,
        shared.total_cost,
        shared.total_efficiency,
        shared.energy_kwh,
        shared.energy_cpu_kwh,
        shared.energy_memory_kwh,
        shared.energy_gpu_kwh,
        shared.energy_storage_kwh,
        shared.co2e_operational_g,
        shared.co2e_embodied_g,
        shared.co2e_total_g,
        shared.carbon_intensity_g_per_kwh,
        shared.pue,
        shared.idle_clamped,
        shared.is_estimated,
        shared.estimation_reasons,
        shared.cost_ratio
    from shared
    where shared.cluster is not null
)

select * from final
