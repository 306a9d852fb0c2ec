{# The parts of models/intermediate/recommendations/int_workloads_spot_priced.sql, one macro per concern: the
   container-hours priced at spot, and the PodDisruptionBudgets that guard a workload. Each renders a run of CTEs of
   that model's WITH list, in its order, each followed by a comma; its comment says which CTEs it reads (defined
   earlier in the model) and which it defines. Descriptions: _recommendations__macros.yml. #}

{# Each container-hour of a Deployment or ReplicaSet in the look-back window, with its node's market and what the
   same hour costs at spot: x the price sheet's spot_hourly_usd / hourly_usd of the node's instance type, else x
   the provider's spotCPU / CPU, spotRAM / RAM, spotGPU / GPU ratios (no ratio: x 1).
   Reads: days. Defines: sheet, resource_prices, priced. #}
{% macro rec_spot_hours_priced(workload_hours, node_hours, instance_prices, resource_prices) -%}
sheet as (
    select provider, region, instance_type_key, hourly_usd, spot_hourly_usd, tier
    from {{ instance_prices }}
    where hourly_usd > 0 and spot_hourly_usd > 0
),

resource_prices as (
    select provider, cpu_usd, spot_cpu_usd, ram_usd, spot_ram_usd, gpu_usd, spot_gpu_usd
    from {{ resource_prices }}
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
    {{ rec_window_join(workload_hours, 'h') }}
    left join {{ node_hours }} as n
        on n.cluster = h.cluster and n.hour_ts = h.hour_ts and n.node = h.node
    left join sheet
        on sheet.provider = n.provider and sheet.region = n.region
        and sheet.instance_type_key = lower(n.instance_type)
    left join resource_prices as rp on rp.provider = n.provider
    left join resource_prices as rp_default on rp_default.provider = 'default'
    where h.controller_kind in ('Deployment', 'ReplicaSet')
),
{%- endmacro %}

{# The workloads' pods in each cluster's latest Kubernetes API snapshot (with whether they mount a claim), the
   PodDisruptionBudgets of that snapshot when it listed PDBs, and every (PDB, pod) pair of a namespace whose PDB
   has a selector.
   Reads: priced. Defines: listed, snapshot_pods, workload_pods, pdbs, pairs. #}
{% macro rec_spot_pdb_pairs(kubernetes_objects) -%}
-- the latest Kubernetes API snapshot of each cluster up to the window's end, and whether it listed PDBs
listed as (
    select
        cluster,
        snapshot_hour_ts,
        {{ json_value_text('spec', 'listed') }} like '%"PodDisruptionBudget"%' as lists_pdbs
    from {{ kubernetes_objects }}
    where kind = 'ListedKinds'
),

snapshot_pods as (
    select cluster, uid as pod_uid, namespace, labels,
           coalesce({{ json_value_text('spec', 'pvcClaimNames') }}, '[]') <> '[]' as has_claim
    from {{ kubernetes_objects }}
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
    from {{ kubernetes_objects }} as pdb
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
{%- endmacro %}

{# The (PDB, pod) pairs whose selector does not select the pod: one term fails, a matchLabels key/value or a
   matchExpressions term (In, NotIn, Exists, DoesNotExist) against the pod's labels.
   Reads: pdbs, pairs. Defines: label_terms, expression_terms, expressions, failed. #}
{% macro rec_spot_pdb_selector_failures() -%}
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
{%- endmacro %}

{# Per workload: the PDBs that select one of its pods and the fewest disruptions they allow at its replicas now
   (the disruption controller's rule: a percentage of the replicas rounds up), and whether its cluster's snapshot
   listed PDBs at all and a snapshot pod of it mounts a claim.
   Reads: pairs, failed, latest_hours, workload_pods, listed. Defines: matched, budgets, guarded, checked. #}
{% macro rec_spot_pdb_budgets() -%}
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
{%- endmacro %}
