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

sheet as (
    select provider, region, instance_type_key, hourly_usd, spot_hourly_usd, tier
    from {{ ref('int_instance_prices_resolved') }}
    where hourly_usd > 0 and spot_hourly_usd > 0
),

resource_prices as (
    select provider, cpu_usd, spot_cpu_usd, ram_usd, spot_ram_usd, gpu_usd, spot_gpu_usd
    from {{ ref('int_resource_prices_resolved') }}
),

-- each container-hour with its node's market and what the same hour costs at spot
priced as (
    select
        days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.hour_ts, h.pod_uid,
        h.container, h.run_h, h.mounts_volume, coalesce(n.is_spot, false) as is_spot,
        h.cpu_cost + h.ram_cost + h.gpu_cost as cost,
        case
            when sheet.spot_hourly_usd is not null
                then (h.cpu_cost + h.ram_cost + h.gpu_cost) * sheet.spot_hourly_usd / sheet.hourly_usd
            else h.cpu_cost * coalesce({{ safe_divide('coalesce(rp.spot_cpu_usd, rp_default.spot_cpu_usd)',
                                                      'coalesce(rp.cpu_usd, rp_default.cpu_usd)') }}, 1)
                + h.ram_cost * coalesce({{ safe_divide('coalesce(rp.spot_ram_usd, rp_default.spot_ram_usd)',
                                                       'coalesce(rp.ram_usd, rp_default.ram_usd)') }}, 1)
                + h.gpu_cost * coalesce({{ safe_divide('coalesce(rp.spot_gpu_usd, rp_default.spot_gpu_usd)',
                                                       'coalesce(rp.gpu_usd, rp_default.gpu_usd)') }}, 1)
        end as spot_cost,
        sheet.spot_hourly_usd is null as is_default_spot_price,
        coalesce(sheet.tier, 'resource_prices') as spot_price_source,
        coalesce(n.provider, '') = 'onprem' as is_onprem,
        {%- for col, code in rec_input_flags() %}
        h.{{ col }},
        {%- endfor %}
        h.is_usage_missing
    from days
    {{ rec_window_join(ref('int_workload_hours_recorded'), 'h') }}
    left join {{ ref('int_node_hours_recorded') }} as n
        on n.cluster = h.cluster and n.hour_ts = h.hour_ts and n.node = h.node
    left join sheet
        on sheet.provider = n.provider and sheet.region = n.region
        and sheet.instance_type_key = lower(n.instance_type)
    left join resource_prices as rp on rp.provider = n.provider
    left join resource_prices as rp_default on rp_default.provider = 'default'
    where h.controller_kind in ('Deployment', 'ReplicaSet')
),

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

-- the latest Kubernetes API snapshot of each cluster up to the window's end, and whether it listed PDBs
listed as (
    select
        cluster,
        snapshot_hour_ts,
        {{ json_value_text('spec', 'listed') }} like '%"PodDisruptionBudget"%' as lists_pdbs
    from {{ ref('stg_kubernetes__objects') }}
    where kind = 'ListedKinds'
),

snapshot_pods as (
    select cluster, uid as pod_uid, namespace, labels,
           coalesce({{ json_value_text('spec', 'pvcClaimNames') }}, '[]') <> '[]' as has_claim
    from {{ ref('stg_kubernetes__objects') }}
    where kind = 'Pod'
),

workload_pods as (
    select distinct
        priced.usage_date, priced.cluster, priced.namespace, priced.controller_kind, priced.controller,
        priced.pod_uid, snapshot_pods.labels, snapshot_pods.has_claim
    from priced
    join snapshot_pods on snapshot_pods.cluster = priced.cluster and snapshot_pods.pod_uid = priced.pod_uid
),

pdbs as (
    select
        pdb.cluster, pdb.namespace, pdb.name,
        {{ json_value_text('pdb.spec', 'matchLabels') }} as match_labels,
        {{ json_value_text('pdb.spec', 'matchExpressions') }} as match_expressions,
        {{ json_text('pdb.spec', 'minAvailable') }} as min_available,
        {{ json_text('pdb.spec', 'maxUnavailable') }} as max_unavailable
    from {{ ref('stg_kubernetes__objects') }} as pdb
    join listed on listed.cluster = pdb.cluster and listed.snapshot_hour_ts = pdb.snapshot_hour_ts
    where pdb.kind = 'PodDisruptionBudget'
),

-- every (PDB, pod) of a namespace; a null selector selects nothing, `{}` every pod
pairs as (
    select
        workload_pods.usage_date, workload_pods.cluster, workload_pods.namespace, workload_pods.controller_kind,
        workload_pods.controller, workload_pods.pod_uid, workload_pods.labels,
        pdbs.name as pdb, pdbs.match_labels, pdbs.match_expressions, pdbs.min_available, pdbs.max_unavailable
    from workload_pods
    join pdbs
        on pdbs.cluster = workload_pods.cluster and pdbs.namespace = workload_pods.namespace
    where pdbs.match_labels is not null and pdbs.match_labels <> 'null'
),

label_terms as (
    select pdb_key.*, {{ json_text_expr('match_labels', 'term_key') }} as term_value
    from (
        select cluster, namespace, name as pdb, match_labels, {{ unnest_json_keys('match_labels') }} as term_key
        from pdbs
        where match_labels is not null and match_labels <> 'null'
    ) as pdb_key
),

expression_terms as (
    select
        cluster, namespace, pdb,
        {{ json_text_expr('match_expressions', 'term_index') }} as term_text
    from (
        select cluster, namespace, name as pdb, match_expressions,
               {{ unnest_json_keys('match_expressions') }} as term_index
        from pdbs
        where match_expressions is not null and match_expressions <> 'null'
    ) as pdb_index
),

expressions as (
    select
        cluster, namespace, pdb,
        {{ json_text('term_text', 'key') }} as term_key,
        {{ json_text('term_text', 'operator') }} as operator,
        coalesce({{ json_value_text('term_text', 'values') }}, '[]') as term_values
    from expression_terms
),

-- a pair fails when one selector term does not hold for the pod's labels
failed as (
    select pairs.usage_date, pairs.cluster, pairs.pod_uid, pairs.pdb
    from pairs
    join label_terms
        on label_terms.cluster = pairs.cluster and label_terms.namespace = pairs.namespace
        and label_terms.pdb = pairs.pdb
    where not coalesce({{ label_value_expr('pairs.labels', 'label_terms.term_key') }} = label_terms.term_value, false)
    union all
    select pairs.usage_date, pairs.cluster, pairs.pod_uid, pairs.pdb
    from pairs
    join expressions
        on expressions.cluster = pairs.cluster and expressions.namespace = pairs.namespace
        and expressions.pdb = pairs.pdb
    where not coalesce(case expressions.operator
        when 'In' then expressions.term_values
            like '%"' || {{ label_value_expr('pairs.labels', 'expressions.term_key') }} || '"%'
        when 'NotIn' then {{ label_value_expr('pairs.labels', 'expressions.term_key') }} is null
            or not expressions.term_values
            like '%"' || {{ label_value_expr('pairs.labels', 'expressions.term_key') }} || '"%'
        when 'Exists' then {{ label_value_expr('pairs.labels', 'expressions.term_key') }} is not null
        when 'DoesNotExist' then {{ label_value_expr('pairs.labels', 'expressions.term_key') }} is null
    end, false)
),

matched as (
    select distinct
        pairs.usage_date, pairs.cluster, pairs.namespace, pairs.controller_kind, pairs.controller, pairs.pdb,
        pairs.min_available, pairs.max_unavailable
    from pairs
    left join failed
        on failed.usage_date = pairs.usage_date and failed.cluster = pairs.cluster
        and failed.pod_uid = pairs.pod_uid and failed.pdb = pairs.pdb
    where failed.pdb is null
),

-- disruptions a matching PDB allows at the workload's replicas now (a percentage of them rounds up)
budgets as (
    select
        matched.usage_date, matched.cluster, matched.namespace, matched.controller_kind, matched.controller,
        matched.pdb,
        case
            when substr(matched.max_unavailable, length(matched.max_unavailable), 1) = '%'
                then ceil(latest_hours.replicas_now
                          * cast(replace(matched.max_unavailable, '%', '') as double) / 100.0 - 1e-9)
            when matched.max_unavailable is not null then cast(matched.max_unavailable as double)
            when substr(matched.min_available, length(matched.min_available), 1) = '%'
                then latest_hours.replicas_now - ceil(latest_hours.replicas_now
                                                      * cast(replace(matched.min_available, '%', '') as double)
                                                      / 100.0 - 1e-9)
            when matched.min_available is not null
                then latest_hours.replicas_now - cast(matched.min_available as double)
            else latest_hours.replicas_now
        end as disruptions_allowed
    from matched
    join latest_hours
        on latest_hours.usage_date = matched.usage_date and latest_hours.cluster = matched.cluster
        and latest_hours.namespace = matched.namespace and latest_hours.controller_kind = matched.controller_kind
        and latest_hours.controller = matched.controller and latest_hours.recency = 1
),

guarded as (
    select
        usage_date, cluster, namespace, controller_kind, controller,
        count(*) as pdbs_matching,
        min(disruptions_allowed) as disruptions_allowed
    from budgets
    group by usage_date, cluster, namespace, controller_kind, controller
),

-- workloads with pods in the snapshot: PDBs checked when that snapshot listed them; a claim counts either way
checked as (
    select
        workload_pods.usage_date, workload_pods.cluster, workload_pods.namespace, workload_pods.controller_kind,
        workload_pods.controller,
        coalesce(bool_or(listed.lists_pdbs), false) as lists_pdbs,
        bool_or(workload_pods.has_claim) as has_claim
    from workload_pods
    left join listed on listed.cluster = workload_pods.cluster
    group by workload_pods.usage_date, workload_pods.cluster, workload_pods.namespace, workload_pods.controller_kind,
        workload_pods.controller
),

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
        controllers.workload_cost * {{ hours_per_month() }} / cluster_hours.observed_hours
            as workload_cost_usd_per_month,
        controllers.cost * {{ hours_per_month() }} / cluster_hours.observed_hours as on_demand_usd_per_month,
        controllers.spot_cost * {{ hours_per_month() }} / cluster_hours.observed_hours as spot_usd_per_month,
        (controllers.cost - controllers.spot_cost) * {{ hours_per_month() }} / cluster_hours.observed_hours
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
