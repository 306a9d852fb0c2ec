{#-
  allocation_sharing.sql — METHOD A11-A14: idle sharing, shared costs, aggregation, set-level averages.

  ONE implementation, rendered twice: by dbt (marts.fct_allocation_shared_daily) and by the Python query engine
  (pipelines/serving/query/allocation.py, plain jinja2). Therefore: plain Jinja only — no ref/config/adapter/var/exceptions
  inside. Invalid options render a SQL `error(...)`, so a bad option fails the query with a readable message.

  share_allocations(relation_sql, key_expr=none, step_col=none, options={}, columns=[])

    relation_sql  SQL text usable after FROM: a table name, a dbt Relation, or a parenthesised subquery. Columns:
                  those of marts.fct_allocation_daily (docs/CONTRACTS.md) and, unless key_expr is given,
                    agg_key          varchar    post-aggregation key of the row (idle rows: overridden, see split_idle)
                    step_start/_end  timestamp  the output step [start, end) the row belongs to
                    is_shared_row    boolean    the row matches a share rule (namespace / label)
                    is_filtered_out  boolean    the row is removed by the request filter (still counts in shares)
    key_expr      dbt convenience: a SQL expression for agg_key. With it the macro derives step_start/step_end from
                  step_col (a DATE column, one-day steps; default usage_date), is_shared_row from
                  options.shared_namespaces / options.shared_labels ("key:value"), and is_filtered_out = FALSE.
    columns       the allocation row: macros/allocation_columns.sql (dbt: allocation_columns(); the engine passes
                  the same list parsed in Python). Each column is shared/aggregated by its group.
    options       dict (all optional):
                    share_idle            bool   false   distribute idle to rows (A11)
                    idle_split            str    weighted | even
                    idle_by_node          bool   false   idle key = cluster/node instead of cluster
                    split_idle            false | true | 'row'
                                                 false: one `__idle__` key; true: `<cluster>/__idle__`
                                                 (`<node>/__idle__` with idle_by_node); 'row': keep the row's agg_key
                    include_idle          bool   true    output the idle that was not shared
                    share_split           str    weighted | even   (shared namespaces/labels/overhead, A12)
                    overhead_monthly_usd  float  0       $/month ÷ hours_per_month() × step hours, added to the
                                                 shared pool
                                                 (to each scope's pool: per cluster with share_scope 'cluster')
                    share_scope           str    all | cluster   where shared rows and overhead are spread (A12):
                                                 'all' pools them per step over the whole set (OpenCost's
                                                 AggregateBy semantics, upstream goldens 4a-4d); 'cluster' pools
                                                 and spreads them within each (step, cluster) — the marts' rule,
                                                 so one cluster's rows never depend on another cluster's.
                                                 Idle is always shared per cluster (or per node).
                    shared_namespaces, shared_labels     only with key_expr (see above)
                    shared_rows           bool   true    false: the caller knows no row is shared (is_shared_row never
                                                 true); with no overhead the shared pool and its spreading are
                                                 left out (they would add only +0 to each key)
                    rows_col              str    none    a column holding how many rows each input row stands for
                                                 (the query engine pre-aggregates per key; properties that differ
                                                 within a pre-aggregated row must then be NULL)

  Output: one row per (step_start, agg_key): step_start, step_end, agg_key, every column of fct_allocation_daily
  (usage_date = step day, window_* = step), sums of the additive columns, `shared_cost` received,
  `*_cost_idle` received (cpu_cost/ram_cost/gpu_cost stay pre-idle; total_cost includes the idle), energy and CO2e
  shared with the same coefficients as cost, the bill's adjustments (`follows` columns) with the cost they adjust,
  time-weighted averages and set-level efficiencies (A14), properties kept only when equal on all member rows,
  is_estimated OR-ed and estimation_reasons unioned (including those of the idle and shared rows a key received
  from). Keys `__idle__`/`__shared__` (pool with no recipient) may appear;
  `__filtered__` never does. Conservation: with no filter, Σ total_cost = Σ input total_cost + overhead per step,
  Σ co2e_total_g = Σ input co2e_total_g (minus idle rows dropped by include_idle=false).

  dbt example (marts.fct_allocation_shared_daily):
    {{ share_allocations(ref('fct_allocation_daily'),
         key_expr="concat_ws('/', cluster, coalesce(node, ''), coalesce(namespace, ''), pod_uid, container)",
         step_col='usage_date', columns=allocation_columns(),
         options=fromjson(sharing_policy_options(var('sharing')))) }}
-#}

{%- macro hours_per_month() -%}
{#- Hours in a month (365 x 24 / 12, as Kubecost and OpenCost scale): the month of a monthly amount here
    (overhead_monthly_usd), of the engine's shareCost breakdown and of every recommendation's monthly figure. -#}
730
{%- endmacro -%}

{%- macro sharing_policy_options(policy) -%}
{#- The configured sharing policy (kubeledger.yaml `sharing`, dbt var `sharing`) as share_allocations options, as
    JSON: marts.fct_allocation_shared_daily applies it, the allocation API and CLI take their defaults from it. The
    policy carries every key of pipelines/settings_models.py SharingSettings, the defaults' one home (dbt_project.yml's
    var equals them, tests/unit/test_dbt_defaults.py): no default here. -#}
{{ {
    'share_idle': policy['share_idle'],
    'idle_split': policy['idle_split'],
    'idle_by_node': policy['idle_by_node'],
    'share_split': policy['split'],
    'overhead_monthly_usd': policy['monthly_overhead_usd'],
    'shared_namespaces': policy['shared_namespaces'],
    'shared_labels': policy['shared_labels'],
} | tojson }}
{%- endmacro -%}

{#- The few engine-specific pieces of this file are the macros of macros/portable.sql (dispatched per adapter);
    the API renders this file with plain Jinja, standing in portable.sql's DuckDB forms for the dispatch
    (pipelines/warehouse/sharing_macros.py). -#}
{%- macro _sa_sql_str(value) -%}
'{{ (value | string) | replace("'", "''") }}'
{%- endmacro -%}

{%- macro label_lookup(cols, key) -%}
{#- A label's (or annotation's) value: the pod's map before the namespace's; in each, the original key, then any
    stored key whose kube-state-metrics sanitised form (chars outside [a-zA-Z0-9_] -> '_') equals the requested
    key's, so `app.kubernetes.io/name` and `app_kubernetes_io_name` find each other whichever form was stored.
    The one lookup for the shared-label rule here and the API's label aggregates, filters and shareLabels
    (pipelines/warehouse/sharing_macros.py label_value_sql renders it), so they never classify a label differently. A key of letters and
    digits only sanitises to itself: the stored-key scan is skipped. Keys are validated by the callers
    ([A-Za-z0-9._/-]); they are embedded as escaped literals. -#}
{%- set k = key | string -%}
{%- set sk = k | replace('.', '_') | replace('-', '_') | replace('/', '_') -%}
{%- set lookups = [] -%}
{%- for col in cols -%}
{%- set _ = lookups.append(json_text(col, k)) -%}
{%- if sk != k or '_' in k -%}{%- set _ = lookups.append(json_text_of_sanitised_key(col, _sa_sql_str(sk))) -%}{%- endif -%}
{%- endfor -%}
coalesce({{ lookups | join(', ') }})
{%- endmacro -%}

{%- macro _sa_select(ov, base, columns) -%}
{#- One contribution row in the shared union layout; `ov` overrides columns, `base` says whether the row is a
    member of its key (properties, averages) or only a received amount (shared pool). -#}
step_start, step_end, {{ ov.get('agg_key', 'agg_key') }} AS agg_key, {{ 'TRUE' if base else 'FALSE' }} AS _base,
{%- for c in (columns | selectattr('group', 'in', ['property']) | map(attribute='name') | list) %}
{{ ov.get(c, c if base else 'CAST(NULL AS STRING)') }} AS {{ c }},
{%- endfor %}
{{ ov.get('start_ts', 'start_ts' if base else 'CAST(NULL AS TIMESTAMP)') }} AS start_ts,
{{ ov.get('end_ts', 'end_ts' if base else 'CAST(NULL AS TIMESTAMP)') }} AS end_ts,
{%- for c in ['minutes'] + (columns | selectattr('group', 'in', ['sum', 'average', 'max', 'energy']) | map(attribute='name') | list) + ['_ci_e', '_pue_e'] %}
CAST({{ ov.get(c, ('coalesce(' ~ c ~ ', 0)') if base else '0') }} AS DOUBLE) AS {{ c }},
{%- endfor %}
{{ ov.get('idle_clamped', 'coalesce(idle_clamped, FALSE)' if base else 'FALSE') }} AS idle_clamped,
{{ ov.get('is_estimated', 'coalesce(is_estimated, FALSE)' if base else 'FALSE') }} AS is_estimated,
{{ ov.get('estimation_reasons', "coalesce(estimation_reasons, '')" if base else "''") }} AS estimation_reasons,
{{ ov.get('_n', '_n' if base else '0') }} AS _n
{%- endmacro -%}


{%- macro share_allocations(relation_sql, key_expr=none, step_col=none, options={}, columns=[]) -%}
{%- set o = options or {} -%}
{%- set _SA_PROPS = (columns | selectattr('group', 'in', ['property']) | map(attribute='name') | list) -%}
{%- set averages = (columns | selectattr('group', 'in', ['average']) | map(attribute='name') | list) -%}
{%- set maxima = (columns | selectattr('group', 'in', ['max']) | map(attribute='name') | list) -%}
{%- set share_idle = o.get('share_idle', false) in [true, 'true', 1] -%}
{%- set idle_split = o.get('idle_split', 'weighted') -%}
{%- set idle_by_node = o.get('idle_by_node', false) in [true, 'true', 1] -%}
{%- set split_idle = o.get('split_idle', false) -%}
{%- set include_idle = o.get('include_idle', true) in [true, 'true', 1] -%}
{%- set share_split = o.get('share_split', 'weighted') -%}
{%- set overhead = (o.get('overhead_monthly_usd', 0) or 0) | float -%}
{%- set share_scope = o.get('share_scope', 'all') or 'all' -%}
{%- set scope_expr = "coalesce(cluster, '')" if share_scope == 'cluster' else "''" -%}
{#- energy, CO2e and the intensity/PUE weights travel with idle and shared cost by the same coefficients -#}
{%- set energy_cols = (columns | selectattr('group', 'in', ['energy']) | map(attribute='name') | list) + ['_ci_e', '_pue_e'] -%}
{#- the columns that travel with idle and shared cost: energy by the idle energy weight (e), and each reconciliation
    adjustment (a column with `follows`, issue 28) with the cost it adjusts (c, m, g: a row receiving a share of the
    idle CPU cost receives that share of the idle CPU adjustment) -#}
{%- set travel = {} -%}
{%- for c in energy_cols -%}{%- set _ = travel.update({c: 'e'}) -%}{%- endfor -%}
{%- for c in columns if c.get('follows') -%}
{%- set _ = travel.update({c.name: {'cpu_cost': 'c', 'ram_cost': 'm', 'gpu_cost': 'g'}.get(c.follows, 'e')}) -%}
{%- endfor -%}
{%- set travel_cols = travel.keys() | list -%}
{#- a travelling column's value on its own row (the weights are never NULL) -#}
{%- set own = {} -%}
{%- for c in travel_cols -%}
{%- set _ = own.update({c: c if c.startswith('_') else 'coalesce(' ~ c ~ ', 0)'}) -%}
{%- endfor -%}
{%- set recv_ov = {
    'cpu_cost_idle': 'coalesce(cpu_cost_idle, 0) + _rc',
    'ram_cost_idle': 'coalesce(ram_cost_idle, 0) + _rm',
    'gpu_cost_idle': 'coalesce(gpu_cost_idle, 0) + _rg',
    'total_cost': 'coalesce(total_cost, 0) + _rc + _rm + _rg',
    'is_estimated': 'coalesce(is_estimated, FALSE) OR _r_est',
    'estimation_reasons': "concat_ws(',', nullif(estimation_reasons, ''), _r_reasons)",
} -%}
{%- set idle_ov = {
    'cpu_core_hours': 'coalesce(cpu_core_hours, 0) * fc',
    'cpu_cost': 'coalesce(cpu_cost, 0) * fc',
    'ram_byte_hours': 'coalesce(ram_byte_hours, 0) * fm',
    'ram_cost': 'coalesce(ram_cost, 0) * fm',
    'gpu_hours': 'coalesce(gpu_hours, 0) * fg',
    'gpu_cost': 'coalesce(gpu_cost, 0) * fg',
    'total_cost': 'coalesce(total_cost, 0) - _c * (1 - fc) - _m * (1 - fm) - _g * (1 - fg)',
} -%}
{%- set coef_ov = {
    'agg_key': 'c.agg_key',
    'shared_cost': 'p.p_cost * c.coef',
    'total_cost': 'p.p_cost * c.coef',
    'is_estimated': 'p.p_est AND c.coef > 0',
    'estimation_reasons': "CASE WHEN c.coef > 0 THEN coalesce(p.p_reasons, '') ELSE '' END",
} -%}
{%- set pool_ov = {
    'agg_key': ("coalesce(nullif(_scope, '') || '/', '') || '__shared__'" if share_scope == 'cluster'
                else "'__shared__'"),
    'cluster': ("nullif(_scope, '')" if share_scope == 'cluster' else 'CAST(NULL AS STRING)'),
    'allocation_kind': "'shared'",
    'shared_cost': 'p_cost',
    'total_cost': 'p_cost',
    'is_estimated': 'p_est',
    'estimation_reasons': "coalesce(p_reasons, '')",
} -%}
{%- for c in travel_cols -%}
{%- set _ = recv_ov.update({c: own[c] ~ ' + _r' ~ c}) -%}
{%- set _ = idle_ov.update({c: own[c] ~ ' * f' ~ travel[c]}) -%}
{%- set _ = coef_ov.update({c: 'p.p_' ~ c ~ ' * c.coef'}) -%}
{%- set _ = pool_ov.update({c: 'p_' ~ c}) -%}
{%- endfor -%}
{%- if idle_split not in ['weighted', 'even'] or share_split not in ['weighted', 'even']
      or split_idle not in [true, false, 'true', 'false', 'row'] or overhead < 0
      or share_scope not in ['all', 'cluster'] -%}
SELECT {{ raise_sql_error('share_allocations: invalid options; idle_split/share_split: weighted|even, split_idle: true|false|row, overhead_monthly_usd >= 0, share_scope: all|cluster') }} AS agg_key
{%- else -%}
{%- set split_idle = 'row' if split_idle == 'row' else (split_idle in [true, 'true']) -%}
{#- no shared row and no overhead: every pool is 0, so its spreading adds only zero amounts (the engine's common
    requests: ~15 % less SQL to plan and run) -#}
{%- set pool = overhead > 0 or o.get('shared_rows', true) not in [false, 'false', 0] -%}
WITH _sa_in AS {{ cte_materialized() }} (
{%- if key_expr %}
    SELECT _r.*, ({{ key_expr }}) AS agg_key,
           CAST(_r.{{ step_col or 'usage_date' }} AS TIMESTAMP) AS step_start,
           CAST(_r.{{ step_col or 'usage_date' }} AS TIMESTAMP) + INTERVAL 1 DAY AS step_end,
           (FALSE
           {%- for ns in o.get('shared_namespaces', []) or [] %}
             OR _r.namespace = {{ _sa_sql_str(ns) }}
           {%- endfor %}
           {%- for lv in o.get('shared_labels', []) or [] %}
             {%- set kv = (lv | string).split(':', 1) %}
             OR {{ label_lookup(['_r.labels', '_r.namespace_labels'], kv[0]) }}
                = {{ _sa_sql_str(kv[1] if kv | length > 1 else '') }}
           {%- endfor %}) AS is_shared_row,
           FALSE AS is_filtered_out
    FROM {{ relation_sql }} AS _r
{%- else %}
    SELECT * FROM {{ relation_sql }}
{%- endif %}
),
_sa_src AS {{ cte_materialized() }} (
    -- Partition rows (A12 step 1); pre-idle weights ignore idle/shared already received.
    SELECT *,
        CASE WHEN allocation_kind = 'idle' THEN 'idle'
             WHEN allocation_kind = 'unmounted' THEN 'unmounted'
             WHEN coalesce(is_shared_row, FALSE) THEN 'shared'
             ELSE 'rest' END AS _role,
        {% if idle_by_node %}cluster || '/' || coalesce(node, ''){% else %}cluster{% endif %} AS _ikey,
        {{ scope_expr }} AS _scope,
        coalesce(cpu_cost, 0) AS _c, coalesce(ram_cost, 0) AS _m, coalesce(gpu_cost, 0) AS _g,
        coalesce(total_cost, 0) - coalesce(cpu_cost_idle, 0) - coalesce(ram_cost_idle, 0)
            - coalesce(gpu_cost_idle, 0) - coalesce(shared_cost, 0) AS _pre_total,
        coalesce(is_filtered_out, FALSE) AS _filtered,
        coalesce(carbon_intensity_g_per_kwh, 0) * coalesce(energy_kwh, 0) AS _ci_e,
        coalesce(pue, 0) * coalesce(energy_kwh, 0) AS _pue_e,
        -- rows this input row stands for (the query engine pre-aggregates rows per key; dbt passes rows as-is)
        CAST({{ o.get('rows_col') or '1' }} AS DOUBLE) AS _n
    FROM _sa_in
),
_sa_steps AS {{ cte_materialized() }} (
    -- one row per (step, share scope): the overhead it adds and its input total (cost_ratio's denominator)
    SELECT step_start, step_end, _scope,
        CAST({{ overhead }} AS DOUBLE) / {{ hours_per_month() }}.0 * ({{ epoch_seconds('step_end') }} - {{ epoch_seconds('step_start') }}) / 3600.0 AS overhead_cost,
        sum(coalesce(total_cost, 0)) AS input_total
    FROM _sa_src GROUP BY step_start, step_end, _scope
),
_sa_w AS {{ cte_materialized() }} (
    -- Idle weights (A11): per resource, from pre-idle costs of the rest AND the shared rows; even = 1 per row.
    SELECT *,
        {%- if idle_split == 'even' %}
        _n AS _wc, _n AS _wm, _n AS _wg, _n AS _we
        {%- else %}
        _c AS _wc, _m AS _wm, _g AS _wg, _c + _m + _g AS _we
        {%- endif %}
    FROM _sa_src WHERE _role IN ('rest', 'shared')
),
_sa_idle_den AS {{ cte_materialized() }} (
    SELECT step_start, _ikey,
        sum(_wc) AS wc, sum(_wm) AS wm, sum(_wg) AS wg, sum(_we) AS we, sum(_n) AS n,
        -- kept part: shared rows are never filtered (they are shared whatever the filter)
        sum(CASE WHEN _role = 'shared' OR NOT _filtered THEN _wc END) AS kc,
        sum(CASE WHEN _role = 'shared' OR NOT _filtered THEN _wm END) AS km,
        sum(CASE WHEN _role = 'shared' OR NOT _filtered THEN _wg END) AS kg,
        sum(CASE WHEN _role = 'shared' OR NOT _filtered THEN _we END) AS ke,
        sum(CASE WHEN _role = 'shared' OR NOT _filtered THEN _n END) AS kn
    FROM _sa_w GROUP BY step_start, _ikey
),
_sa_idle_amt AS {{ cte_materialized() }} (
    SELECT step_start, _ikey, sum(_c) AS ic, sum(_m) AS im, sum(_g) AS ig,
        {%- for c in travel_cols %}
        sum(coalesce({{ c }}, 0)) AS i_{{ c }},
        {%- endfor %}
        bool_or(coalesce(is_estimated, FALSE)) AS i_est,
        {{ string_agg_csv("nullif(estimation_reasons, '')") }} AS i_reasons
    FROM _sa_src WHERE _role = 'idle' GROUP BY step_start, _ikey
),
_sa_idle_factor AS {{ cte_materialized() }} (
    -- Fraction of each idle amount that stays on the idle row: undistributable idle when sharing; without
    -- sharing, the part matching the rows the filter keeps (1 when nothing is filtered).
    SELECT a.step_start, a._ikey,
    {%- for r, w, k in [('c', 'wc', 'kc'), ('m', 'wm', 'km'), ('g', 'wg', 'kg'), ('e', 'we', 'ke')] %}
        {%- if share_idle %}
        CASE WHEN coalesce(d.{{ w }}, 0) > 0 THEN 0.0 ELSE 1.0 END AS f{{ r }}
        {%- else %}
        CASE WHEN coalesce(d.{{ w }}, 0) > 0 THEN coalesce(d.{{ k }}, 0) / d.{{ w }}
             WHEN coalesce(d.n, 0) > 0 THEN CAST(d.kn AS DOUBLE) / d.n ELSE 1.0 END AS f{{ r }}
        {%- endif %}{{ ',' if not loop.last }}
    {%- endfor %}
    FROM _sa_idle_amt a LEFT JOIN _sa_idle_den d USING (step_start, _ikey)
),
_sa_recv AS {{ cte_materialized() }} (
    -- Rest and shared rows with the idle they receive (A12 step 5).
    SELECT w.*,
    {%- if share_idle %}
        CASE WHEN d.wc > 0 THEN coalesce(i.ic, 0) * w._wc / d.wc ELSE 0 END AS _rc,
        CASE WHEN d.wm > 0 THEN coalesce(i.im, 0) * w._wm / d.wm ELSE 0 END AS _rm,
        CASE WHEN d.wg > 0 THEN coalesce(i.ig, 0) * w._wg / d.wg ELSE 0 END AS _rg,
        {%- for c in travel_cols %}
        CASE WHEN d.w{{ travel[c] }} > 0 THEN coalesce(i.i_{{ c }}, 0) * w._w{{ travel[c] }} / d.w{{ travel[c] }}
             ELSE 0 END AS _r{{ c }},
        {%- endfor %}
        coalesce(i.i_est, FALSE) AND d.we > 0 AS _r_est,
        CASE WHEN d.we > 0 THEN i.i_reasons END AS _r_reasons
    {%- else %}
        0.0 AS _rc, 0.0 AS _rm, 0.0 AS _rg,
        {%- for c in travel_cols %}
        0.0 AS _r{{ c }},
        {%- endfor %}
        FALSE AS _r_est, CAST(NULL AS STRING) AS _r_reasons
    {%- endif %}
    FROM _sa_w w
    JOIN _sa_idle_den d USING (step_start, _ikey)
    LEFT JOIN _sa_idle_amt i USING (step_start, _ikey)
),
{%- if pool %}
_sa_pool AS {{ cte_materialized() }} (
    -- Shared pool per step and scope: shared rows incl. their idle, plus overhead added after the idle
    -- coefficients (A12 3).
    SELECT s.step_start, s.step_end, s._scope,
        s.overhead_cost + coalesce(sum(coalesce(r.total_cost, 0) + r._rc + r._rm + r._rg), 0) AS p_cost,
        {%- for c in travel_cols %}
        coalesce(sum(coalesce(r.{{ c }}, 0) + r._r{{ c }}), 0) AS p_{{ c }},
        {%- endfor %}
        coalesce(bool_or(coalesce(r.is_estimated, FALSE) OR r._r_est), FALSE) AS p_est,
        {{ string_agg_csv("concat_ws(',', nullif(r.estimation_reasons, ''), r._r_reasons)") }} AS p_reasons
    FROM _sa_steps s LEFT JOIN (SELECT * FROM _sa_recv WHERE _role = 'shared') r USING (step_start, _scope)
    GROUP BY s.step_start, s.step_end, s._scope, s.overhead_cost
),
_sa_keyw AS {{ cte_materialized() }} (
    SELECT step_start, _scope, agg_key, _filtered, sum(_pre_total) AS w
    FROM _sa_src WHERE _role = 'rest' GROUP BY step_start, _scope, agg_key, _filtered
),
_sa_keyden AS {{ cte_materialized() }} (
    -- Filtered rows keep their weight (under `__filtered__`, never output) so a filter never changes a share.
    SELECT step_start, _scope, sum(w) AS wsum, count(DISTINCT agg_key) AS nkeys
    FROM _sa_keyw GROUP BY step_start, _scope
),
_sa_coef AS {{ cte_materialized() }} (
    SELECT k.step_start, k._scope, k.agg_key,
        {%- if share_split == 'even' %}
        -- a double on both engines (Spark types 1.0 / count as a 22-place DECIMAL)
        cast(1 AS double) / max(d.nkeys) AS coef
        {%- else %}
        CASE WHEN max(d.wsum) > 0 THEN sum(k.w) / max(d.wsum) ELSE cast(1 AS double) / max(d.nkeys) END AS coef
        {%- endif %}
    FROM _sa_keyw k JOIN _sa_keyden d USING (step_start, _scope)
    WHERE NOT k._filtered
    GROUP BY k.step_start, k._scope, k.agg_key
),
{%- endif %}
_sa_parts AS {{ cte_materialized() }} (
    SELECT {{ _sa_select(recv_ov, true, columns) }}
    FROM _sa_recv WHERE _role = 'rest' AND NOT _filtered
    UNION ALL
    SELECT {{ _sa_select({}, true, columns) }}
    FROM _sa_src WHERE _role = 'unmounted' AND NOT _filtered
{%- if include_idle %}
    UNION ALL
    {%- set _ = idle_ov.update({'agg_key': ("agg_key" if split_idle == 'row' else (
            ("coalesce(node, cluster) || '/__idle__'" if idle_by_node else "cluster || '/__idle__'")
            if split_idle else "'__idle__'"))}) %}
    SELECT {{ _sa_select(idle_ov, true, columns) }}
    FROM _sa_src JOIN _sa_idle_factor USING (step_start, _ikey)
    WHERE _role = 'idle'
    {%- if share_idle %}
      -- fully shared idle disappears (A12 step 8); what could not be shared stays
      AND (fc > 0 OR fm > 0 OR fg > 0 OR fe > 0)
    {%- endif %}
{%- endif %}
{%- if pool %}
    UNION ALL
    SELECT {{ _sa_select(coef_ov, false, columns) }}
    FROM _sa_coef c JOIN _sa_pool p USING (step_start, _scope)
    UNION ALL
    -- A pool with no recipient at all in its step (and scope) stays visible, so totals are conserved.
    SELECT {{ _sa_select(pool_ov, false, columns) }}
    FROM _sa_pool
    WHERE (p_cost <> 0 OR p_co2e_total_g <> 0 OR p_energy_kwh <> 0)
      AND NOT EXISTS (SELECT 1 FROM _sa_keyden d WHERE d.step_start = _sa_pool.step_start AND d._scope = _sa_pool._scope)
{%- endif %}
),
_sa_agg AS {{ cte_materialized() }} (
    -- members only: `agg(CASE WHEN _base THEN x END)`, not `agg(x) FILTER (WHERE _base)` (the same value, as
    -- aggregates skip NULLs; DuckDB ran this wide aggregate about 3x slower with FILTER clauses)
    SELECT step_start, step_end, agg_key,
    {%- for c in _SA_PROPS %}
        -- one value on every member: all non-NULL and min = max (no DISTINCT aggregate: those run as separate
        -- hash tables joined back, which dominated query time)
        CASE WHEN count(CASE WHEN _base THEN 1 END) > 0
              AND count(CASE WHEN _base THEN {{ c }} END) = count(CASE WHEN _base THEN 1 END)
              AND min(CASE WHEN _base THEN {{ c }} END) = max(CASE WHEN _base THEN {{ c }} END)
             THEN min(CASE WHEN _base THEN {{ c }} END) END AS {{ c }},
    {%- endfor %}
        min(CASE WHEN _base THEN start_ts END) AS start_ts,
        max(CASE WHEN _base THEN end_ts END) AS end_ts,
        sum(CASE WHEN _base THEN _n END) AS _members,
        max(CASE WHEN _base THEN minutes END) AS _max_minutes,
    {%- for c in (columns | selectattr('group', 'in', ['sum']) | map(attribute='name') | list) + energy_cols %}
        sum({{ c }}) AS {{ c }},
    {%- endfor %}
    {%- for c in averages %}
        sum(CASE WHEN _base THEN {{ c }} * minutes END) AS _tw_{{ c }},
        sum(CASE WHEN _base AND coalesce(allocation_kind, '') <> 'idle' THEN {{ c }} * minutes END) AS _eff_{{ c }},
    {%- endfor %}
    {%- for c in maxima %}
        max(CASE WHEN _base THEN {{ c }} END) AS _max_{{ c }},
    {%- endfor %}
        coalesce(bool_or(CASE WHEN _base THEN idle_clamped END), FALSE) AS idle_clamped,
        coalesce(bool_or(is_estimated), FALSE) AS is_estimated,
        {{ csv_union_agg('estimation_reasons') }} AS estimation_reasons
    FROM _sa_parts
    GROUP BY step_start, step_end, agg_key
),
_sa_out AS {{ cte_materialized() }} (
    SELECT a.*,
        -- A14: averages over the members' span (two side-by-side containers add up; consecutive days do not)
        coalesce(({{ epoch_seconds('a.end_ts') }} - {{ epoch_seconds('a.start_ts') }}) / 60.0, a._max_minutes, 0) AS _span,
        a.cpu_cost + a.cpu_cost_idle AS _cpu_tot,
        a.ram_cost + a.ram_cost_idle AS _ram_tot,
        a.gpu_cost + a.gpu_cost_idle AS _gpu_tot
    FROM _sa_agg a
),
_sa_eff AS {{ cte_materialized() }} (
    SELECT o.*,
        CASE WHEN coalesce(_eff_cpu_core_request_average, 0) > 0
                 THEN coalesce(_eff_cpu_core_usage_average, 0) / _eff_cpu_core_request_average
             WHEN coalesce(_eff_cpu_core_usage_average, 0) = 0 OR _cpu_tot = 0 THEN 0.0 ELSE 1.0 END AS _cpu_eff,
        CASE WHEN coalesce(_eff_ram_byte_request_average, 0) > 0
                 THEN coalesce(_eff_ram_byte_usage_average, 0) / _eff_ram_byte_request_average
             WHEN coalesce(_eff_ram_byte_usage_average, 0) = 0 OR _ram_tot = 0 THEN 0.0 ELSE 1.0 END AS _ram_eff,
        CASE WHEN coalesce(_eff_gpu_request_average, 0) > 0 AND coalesce(_eff_gpu_usage_average, 0) > 0
                 THEN _eff_gpu_usage_average / _eff_gpu_request_average
             WHEN coalesce(_eff_gpu_usage_average, 0) = 0 OR _gpu_tot = 0 THEN 0.0 ELSE 1.0 END AS _gpu_eff
    FROM _sa_out o
)
{#- the output row: every column of the list by its group; the set-level formulas by name (cost_ratio: share of
    its scope's total, its cluster's with share_scope 'cluster', else of the whole set's) -#}
{%- set formula = {
    'usage_date': 'CAST(e.step_start AS DATE)',
    'window_start': 'e.step_start',
    'window_end': 'e.step_end',
    'allocation_name': 'coalesce(e.allocation_name, e.agg_key)',
    'minutes': 'e._span',
    'cpu_efficiency': 'e._cpu_eff',
    'gpu_efficiency': 'e._gpu_eff',
    'ram_efficiency': 'e._ram_eff',
    'total_efficiency': 'CASE WHEN e._cpu_tot + e._ram_tot > 0
         THEN (e._cpu_eff * e._cpu_tot + e._ram_eff * e._ram_tot) / (e._cpu_tot + e._ram_tot)
         ELSE 0.0 END',
    'cost_ratio': 'e.total_cost / nullif(coalesce(s.input_total + s.overhead_cost, t.set_total), 0)',
    'carbon_intensity_g_per_kwh': 'e._ci_e / nullif(e.energy_kwh, 0)',
    'pue': 'e._pue_e / nullif(e.energy_kwh, 0)',
} -%}
SELECT
    e.step_start, e.step_end, e.agg_key,
{%- for c in columns if c.group != 'internal' %}
    {% if c.name in formula -%}
    {{ formula[c.name] }}
    {%- elif c.group == 'average' -%}
    e._tw_{{ c.name }} / nullif(e._span, 0)
    {%- elif c.group == 'max' -%}
    CASE WHEN e._members = 1 THEN e._max_{{ c.name }} END
    {%- else -%}
    e.{{ c.name }}
    {%- endif %} AS {{ c.name }}{{ ',' if not loop.last }}
{%- endfor %}
FROM _sa_eff e
JOIN (SELECT step_start, sum(input_total + overhead_cost) AS set_total FROM _sa_steps GROUP BY step_start) t
    ON t.step_start = e.step_start
LEFT JOIN _sa_steps s
    ON s.step_start = e.step_start AND s._scope = {{ "coalesce(e.cluster, '')" if share_scope == 'cluster' else "''" }}
{%- endif %}
{%- endmacro -%}
