-- grain: one row per (usage_date, cluster, namespace, controller_kind, controller) stateless workload that could run
-- on spot nodes. Eligible: a Deployment (or a bare ReplicaSet) with at least 2 replicas in every hour of the window
-- (an interruption then leaves a replica serving), no claim mounted by any of its pods (metrics or the Kubernetes
-- API), on on-demand nodes in its latest hour, not on-prem, and no PodDisruptionBudget blocking it: a PDB of the
-- latest Kubernetes API snapshot whose selector matches one of its pods (matchLabels, and matchExpressions In /
-- NotIn / Exists / DoesNotExist) and whose minAvailable / maxUnavailable leaves no disruption allowed at its
-- replicas now (the disruption controller's rule: a percentage rounds up). A cluster whose latest snapshot did not
-- list PDBs (API unreachable or disabled, or the list refused) is not checked: its rows say `pdb_not_checked`.
-- Saving = the cost of its on-demand hours (allocation cost, A2) minus the same hours priced at spot: x the price
-- sheet's spot_hourly_usd / hourly_usd of the node's instance type, else (no spot column for it) x the per-resource
-- spotCPU / CPU, spotRAM / RAM, spotGPU / GPU ratios of the provider (`default_spot_price`), per observed cluster-hour
-- x 730. Dollars only: spot capacity is the same hardware, so kWh and CO2e are 0. int_recommendations_counted
-- counts it last (stage 5), on what rightsizing leaves of the workload's cost.
with days as (
    {{ rec_build_days() }}
),

cluster_hours as (
    {{ rec_cluster_hours() }}
),

-- each container-hour of a Deployment or ReplicaSet with what the same hour costs at spot
-- (defines sheet, resource_prices, priced)
{{ rec_spot_hours_priced(ref('int_workload_hours_recorded'), ref('int_node_hours_recorded'),
                         ref('int_instance_prices_resolved'), ref('int_resource_prices_resolved')) }}

-- the workload's replicas in each hour (pod-hours), in its latest hour, and the fewest over the window
hourly as (
    select
        usage_date, cluster, namespace, controller_kind, controller, hour_ts,
        sum(run_h) / count(distinct container) as pod_hours,
        sum(case when is_spot then 0 else run_h end) / count(distinct container) as on_demand_pod_hours,
        bool_or(mounts_volume) as mounts_volume,
        bool_or(is_onprem) as is_onprem
    from priced
    group by usage_date, cluster, namespace, controller_kind, controller, hour_ts
),

latest_hours as (
    select
        usage_date, cluster, namespace, controller_kind, controller, on_demand_pod_hours,
        cast(round(pod_hours) as integer) as replicas_now,
        row_number() over (partition by usage_date, cluster, namespace, controller_kind, controller
                           order by hour_ts desc) as recency
    from hourly
    where pod_hours > 0
),

shape as (
    select
        usage_date, cluster, namespace, controller_kind, controller,
        min(cast(round(pod_hours) as integer)) as replicas_min,
        bool_or(mounts_volume) as mounts_volume,
        bool_or(is_onprem) as is_onprem
    from hourly
    where pod_hours > 0
    group by usage_date, cluster, namespace, controller_kind, controller
),

-- the (PDB, pod) pairs of a namespace, from each cluster's latest Kubernetes API snapshot
-- (defines listed, snapshot_pods, workload_pods, pdbs, pairs)
{{ rec_spot_pdb_pairs(ref('stg_kubernetes__objects')) }}

-- the pairs whose selector does not select the pod (defines label_terms, expression_terms, expressions, failed)
{{ rec_spot_pdb_selector_failures() }}

-- per workload: the PDBs that select it and the fewest disruptions they allow now, and whether its PDBs were
-- checked (defines matched, budgets, guarded, checked)
{{ rec_spot_pdb_budgets() }}

-- each container-hour with whether its workload's PDBs were checked and whether a snapshot pod has a claim
priced_checked as (
    select
        priced.*,
        coalesce(checked.lists_pdbs, false) as is_pdb_checked,
        coalesce(checked.has_claim, false) as has_claim
    from priced
    left join checked
        on checked.usage_date = priced.usage_date and checked.cluster = priced.cluster
        and checked.namespace = priced.namespace and checked.controller_kind = priced.controller_kind
        and checked.controller = priced.controller
),

controllers as (
    select
        usage_date, cluster, namespace, controller_kind, controller,
        count(distinct cast(hour_ts as date)) as days_of_data,
        count(distinct hour_ts) as hours_covered,
        sum(cost) as workload_cost,
        sum(case when is_spot then 0 else cost end) as cost,
        sum(case when is_spot then 0 else spot_cost end) as spot_cost,
        sum(case when is_spot then 0 else run_h end) as on_demand_container_hours,
        sum(run_h) as container_hours,
        max(case when is_spot then null else spot_price_source end) as spot_price_source,
        {{ rec_reasons_agg([('bool_or(is_usage_missing)', 'usage_missing'),
                            ('bool_or(not is_spot and is_default_spot_price)', 'default_spot_price'),
                            ('not bool_or(is_pdb_checked)', 'pdb_not_checked')]) }} as estimation_reasons,
        bool_or(is_pdb_checked) as pdb_checked,
        bool_or(has_claim) as has_claim
    from priced_checked
    group by usage_date, cluster, namespace, controller_kind, controller
),

flagged as (
    select
        controllers.*,
        shape.replicas_min,
        latest_hours.replicas_now,
        coalesce(guarded.pdbs_matching, 0) as pdbs_matching,
        guarded.disruptions_allowed,
        {{ rec_per_month('controllers.workload_cost', 'cluster_hours.observed_hours') }}
            as workload_cost_usd_per_month,
        {{ rec_per_month('controllers.cost', 'cluster_hours.observed_hours') }} as on_demand_usd_per_month,
        {{ rec_per_month('controllers.spot_cost', 'cluster_hours.observed_hours') }} as spot_usd_per_month,
        {{ rec_per_month('controllers.cost - controllers.spot_cost', 'cluster_hours.observed_hours') }}
            as saving_usd_per_month,
        cast(0 as double) as saving_kwh_per_month,
        cast(0 as double) as saving_co2e_g_per_month
    from controllers
    join cluster_hours
        on cluster_hours.usage_date = controllers.usage_date and cluster_hours.cluster = controllers.cluster
    join shape
        on shape.usage_date = controllers.usage_date and shape.cluster = controllers.cluster
        and shape.namespace = controllers.namespace and shape.controller_kind = controllers.controller_kind
        and shape.controller = controllers.controller
    join latest_hours
        on latest_hours.usage_date = controllers.usage_date and latest_hours.cluster = controllers.cluster
        and latest_hours.namespace = controllers.namespace
        and latest_hours.controller_kind = controllers.controller_kind
        and latest_hours.controller = controllers.controller and latest_hours.recency = 1
    left join guarded
        on guarded.usage_date = controllers.usage_date and guarded.cluster = controllers.cluster
        and guarded.namespace = controllers.namespace and guarded.controller_kind = controllers.controller_kind
        and guarded.controller = controllers.controller
    where shape.replicas_min >= 2
        and not shape.mounts_volume
        and not controllers.has_claim
        and not shape.is_onprem
        and latest_hours.on_demand_pod_hours > 0
        and coalesce(guarded.disruptions_allowed, 1) > 0
        and controllers.cost > controllers.spot_cost
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('spot_eligible', 'namespace', 'controller_kind', 'controller',
        'cast(null as string)', "namespace || '/' || lower(controller_kind) || '/' || controller",
        "'Run ' || lower(controller_kind) || ' ' || controller || ' (' || " ~ rec_int_text('replicas_now')
         ~ " || ' stateless replicas) on spot nodes: a toleration and node affinity for the spot pool'",
        [('replicas_min', 'replicas_min'), ('replicas_now', 'replicas_now'),
         ('on_demand_share_of_hours', safe_divide('on_demand_container_hours', 'container_hours')),
         ('on_demand_usd_per_month', 'on_demand_usd_per_month'), ('spot_usd_per_month', 'spot_usd_per_month'),
         ('workload_cost_usd_per_month', 'workload_cost_usd_per_month'),
         ('spot_price_source', 'spot_price_source'),
         ('pdb_checked', 'pdb_checked'), ('pdbs_matching', 'pdbs_matching'),
         ('disruptions_allowed', 'disruptions_allowed'),
         ('basis', "'spot capacity is the same hardware at a market price: dollars only, no kWh or CO2e'")]) }},
    {{ rec_closing_columns() }},
    workload_cost_usd_per_month
from flagged
