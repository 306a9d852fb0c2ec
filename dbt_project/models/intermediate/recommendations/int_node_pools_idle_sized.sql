-- grain: one row per (usage_date, cluster, instance_type, availability_zone) node pool with removable nodes
-- Bin-packing bound: the pool needs at least n = max(ceil(p95 requested CPU x headroom / CPU allocatable per node),
-- ceil(p95 requested memory x headroom / memory allocatable per node), 1) nodes, the p95 taken over the window's
-- hours of the pool's summed requests. This is the fractional (volume) lower bound: real packing can need more,
-- which the headroom absorbs. Removable = the most nodes seen at once - n. A removed node saves its cost, the
-- energy model's fixed term (idle watts x vCPUs; the usage term moves with the pods) and its embodied carbon.
with days as (
    {{ rec_build_days() }}
),

pool_hours as (
    select
        days.usage_date, n.cluster, n.instance_type, n.availability_zone, n.hour_ts,
        count(distinct case when n.node_run_h > 0 then n.node end) as nodes,
        sum(n.node_run_h) as node_hours,
        sum(n.cpu_request_core_hours) as cpu_requested,
        sum(n.ram_request_byte_hours) as ram_requested,
        sum(n.cpu_allocatable_cores * n.node_run_h) as cpu_allocatable_hours,
        sum(n.ram_allocatable_bytes * n.node_run_h) as ram_allocatable_hours,
        sum(n.node_cost) as cost,
        sum(n.fixed_cpu_kwh) as fixed_kwh,
        sum(n.fixed_cpu_kwh * n.carbon_intensity_g_per_kwh * n.pue) as fixed_co2e_g,
        sum(n.co2e_embodied_g) as embodied_g,
        {{ rec_flags_any('n') }}
    from days
    {{ rec_window_join(ref('int_node_hours_recorded'), 'n') }}
    where n.instance_type is not null
    group by days.usage_date, n.cluster, n.instance_type, n.availability_zone, n.hour_ts
),

pools as (
    select
        usage_date, cluster, instance_type, availability_zone,
        count(distinct cast(hour_ts as date)) as days_of_data,
        count(distinct hour_ts) as hours_covered,
        max(nodes) as nodes_max,
        {{ quantile_cont('cpu_requested', 0.95) }} as cpu_requested_p95,
        {{ quantile_cont('ram_requested', 0.95) }} as ram_requested_p95,
        sum(cpu_allocatable_hours) / sum(node_hours) as cpu_allocatable_per_node,
        sum(ram_allocatable_hours) / sum(node_hours) as ram_allocatable_per_node,
        1 - sum(cpu_requested) / nullif(sum(cpu_allocatable_hours), 0) as idle_cpu_share,
        1 - sum(ram_requested) / nullif(sum(ram_allocatable_hours), 0) as idle_ram_share,
        sum(cost) / sum(node_hours) as cost_per_node_hour,
        sum(fixed_kwh) / sum(node_hours) as fixed_kwh_per_node_hour,
        sum(fixed_co2e_g + embodied_g) / sum(node_hours) as co2e_g_per_node_hour,
        {{ rec_reasons_agg() }} as estimation_reasons
    from pool_hours
    where node_hours > 0
    group by usage_date, cluster, instance_type, availability_zone
),

sized as (
    select
        *,
        greatest(
            ceil(cpu_requested_p95 * {{ rec_param('node_headroom') }} / nullif(cpu_allocatable_per_node, 0)),
            ceil(ram_requested_p95 * {{ rec_param('node_headroom') }} / nullif(ram_allocatable_per_node, 0)),
            1) as nodes_needed
    from pools
),

removable as (
    select
        *,
        nodes_max - nodes_needed as nodes_removable,
        (nodes_max - nodes_needed) * cost_per_node_hour * {{ hours_per_month() }} as saving_usd_per_month,
        (nodes_max - nodes_needed) * fixed_kwh_per_node_hour * {{ hours_per_month() }} as saving_kwh_per_month,
        (nodes_max - nodes_needed) * co2e_g_per_node_hour * {{ hours_per_month() }} as saving_co2e_g_per_month
    from sized
    where nodes_max > nodes_needed
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('idle_node_pool', 'cast(null as string)', 'cast(null as string)',
        'cast(null as string)', 'cast(null as string)',
        "instance_type || '@' || coalesce(availability_zone, 'no-zone')",
        "'Remove ' || " ~ rec_int_text('nodes_removable') ~ " || ' of ' || " ~ rec_int_text('nodes_max')
         ~ " || ' ' || instance_type || ' nodes in ' || coalesce(availability_zone, 'no zone')
         || ': the p95 of requests fits on ' || " ~ rec_int_text('nodes_needed') ~ " || ' with headroom'",
        [('nodes_max', 'nodes_max'), ('nodes_needed', 'nodes_needed'), ('nodes_removable', 'nodes_removable'),
         ('cpu_requested_p95_cores', 'cpu_requested_p95'), ('ram_requested_p95_bytes', 'ram_requested_p95'),
         ('cpu_allocatable_per_node', 'cpu_allocatable_per_node'),
         ('ram_allocatable_per_node', 'ram_allocatable_per_node'), ('idle_cpu_share', 'idle_cpu_share'),
         ('idle_ram_share', 'idle_ram_share'), ('headroom', rec_param('node_headroom'))]) }},
    {{ rec_closing_columns() }}
from removable
