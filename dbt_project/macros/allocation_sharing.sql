{#-
  allocation_sharing.sql — METHOD A11-A14: idle sharing, shared costs, aggregation, set-level averages.

  ONE implementation, rendered twice: by dbt (marts.fct_allocation_shared_daily) and by the Python query engine
  (pipelines/serving/engine.py, plain jinja2). Therefore: plain Jinja only — no ref/config/adapter/var/exceptions
  inside. Invalid options render a SQL `error(...)`, so a bad option fails the query with a readable message.

  share_allocations(relation_sql, key_expr=none, step_col=none, options={})

    relation_sql  SQL text usable after FROM: a table name, a dbt Relation, or a parenthesised subquery. Columns:
                  those of marts.fct_allocation_daily (docs/CONTRACTS.md) and, unless key_expr is given,
                    agg_key          varchar    post-aggregation key of the row (idle rows: overridden, see split_idle)
                    step_start/_end  timestamp  the output step [start, end) the row belongs to
                    is_shared_row    boolean    the row matches a share rule (namespace / label)
                    is_filtered_out  boolean    the row is removed by the request filter (still counts in shares)
    key_expr      dbt convenience: a SQL expression for agg_key. With it the macro derives step_start/step_end from
                  step_col (a DATE column, one-day steps; default usage_date), is_shared_row from
                  options.shared_namespaces / options.shared_labels ("key:value"), and is_filtered_out = FALSE.
    options       dict (all optional):
                    share_idle            bool   false   distribute idle to rows (A11)
                    idle_split            str    weighted | even
                    idle_by_node          bool   false   idle key = cluster/node instead of cluster
                    split_idle            false | true | 'row'
                                                 false: one `__idle__` key; true: `<cluster>/__idle__`
                                                 (`<node>/__idle__` with idle_by_node); 'row': keep the row's agg_key
                    include_idle          bool   true    output the idle that was not shared
                    share_split           str    weighted | even   (shared namespaces/labels/overhead, A12)
                    overhead_monthly_usd  float  0       $/month ÷ 730 × step hours, added to the shared pool
                                                 (to each scope's pool: per cluster with share_scope 'cluster')
                    share_scope           str    all | cluster   where shared rows and overhead are spread (A12):
                                                 'all' pools them per step over the whole set (OpenCost's
                                                 AggregateBy semantics, upstream goldens 4a-4d); 'cluster' pools
                                                 and spreads them within each (step, cluster) — the marts' rule,
                                                 so one cluster's rows never depend on another cluster's.
                                                 Idle is always shared per cluster (or per node).
                    shared_namespaces, shared_labels     only with key_expr (see above)
                    rows_col              str    none    a column holding how many rows each input row stands for
                                                 (the query engine pre-aggregates per key; properties that differ
                                                 within a pre-aggregated row must then be NULL)

  Output: one row per (step_start, agg_key): step_start, step_end, agg_key, every column of fct_allocation_daily
  (usage_date = step day, window_* = step), sums of the additive columns, `shared_cost` received,
  `*_cost_idle` received (cpu_cost/ram_cost/gpu_cost stay pre-idle; total_cost includes the idle), energy and CO2e
  shared with the same coefficients as cost, time-weighted averages and set-level efficiencies (A14), properties
  kept only when equal on all member rows, is_estimated OR-ed and estimation_reasons unioned (including those of
  the idle and shared rows a key received from). Keys `__idle__`/`__shared__` (pool with no recipient) may appear;
  `__filtered__` never does. Conservation: with no filter, Σ total_cost = Σ input total_cost + overhead per step,
  Σ co2e_total_g = Σ input co2e_total_g (minus idle rows dropped by include_idle=false).

  dbt example (marts.fct_allocation_shared_daily):
    {{ share_allocations(ref('fct_allocation_daily'),
         key_expr="concat_ws('/', cluster, coalesce(node, ''), coalesce(namespace, ''), pod_uid, container)",
         step_col='usage_date',
         options={'share_idle': var('share_idle', false), 'split_idle': 'row', ...}) }}
-#}

{%- macro _sa_sql_str(value) -%}
'{{ (value | string) | replace("'", "''") }}'
{%- endmacro -%}

{%- macro _sa_json_path(key) -%}
{{ _sa_sql_str('$."' ~ ((key | string) | replace('\\', '\\\\') | replace('"', '\\"')) ~ '"') }}
{%- endmacro -%}

{%- macro _sa_label(cols, key) -%}
{#- A label's value: the pod's map before the namespace's, each by the original key, then by kube-state-metrics'
    sanitised key (chars outside [a-zA-Z0-9_] -> '_'), as macros/labels.sql label_value does for the models. -#}
{%- set k = key | string -%}
{%- set sk = k | replace('.', '_') | replace('-', '_') | replace('/', '_') -%}
{%- set keys = [k] if sk == k else [k, sk] -%}
{%- set lookups = [] -%}
{%- for col in cols -%}{%- for kk in keys -%}
{%- set _ = lookups.append('json_extract_string(' ~ col ~ ', ' ~ _sa_json_path(kk) ~ ')') -%}
{%- endfor -%}{%- endfor -%}
coalesce({{ lookups | join(', ') }})
{%- endmacro -%}

{%- macro _sa_select(ov, base) -%}
{#- One contribution row in the shared union layout; `ov` overrides columns, `base` says whether the row is a
    member of its key (properties, averages) or only a received amount (shared pool). -#}
{%- set props = ['cluster', 'node', 'namespace', 'pod', 'pod_uid', 'container', 'allocation_kind',
    'allocation_name', 'controller_kind', 'controller', 'provider_id', 'labels', 'annotations',
    'namespace_labels', 'namespace_annotations', 'node_labels', 'services'] -%}
{%- set nums = ['minutes', 'cpu_core_hours', 'cpu_core_request_average', 'cpu_core_usage_average',
    'cpu_core_usage_max', 'cpu_cost', 'cpu_cost_idle', 'gpu_hours', 'gpu_request_average',
    'gpu_usage_average', 'gpu_cost', 'gpu_cost_idle', 'ram_byte_hours', 'ram_byte_request_average',
    'ram_byte_usage_average', 'ram_byte_usage_max', 'ram_cost', 'ram_cost_idle', 'pv_byte_hours', 'pv_cost',
    'network_transfer_bytes', 'network_receive_bytes', 'network_cross_zone_cost', 'network_cross_region_cost',
    'network_internet_cost', 'network_cost', 'load_balancer_cost', 'shared_cost', 'external_cost',
    'total_cost', 'energy_kwh', 'energy_cpu_kwh', 'energy_memory_kwh', 'energy_gpu_kwh', 'energy_storage_kwh',
    'co2e_operational_g', 'co2e_embodied_g', 'co2e_total_g', '_ci_e', '_pue_e'] -%}
step_start, step_end, {{ ov.get('agg_key', 'agg_key') }} AS agg_key, {{ 'TRUE' if base else 'FALSE' }} AS _base,
{%- for c in props %}
{{ ov.get(c, c if base else 'CAST(NULL AS VARCHAR)') }} AS {{ c }},
{%- endfor %}
{{ ov.get('start_ts', 'start_ts' if base else 'CAST(NULL AS TIMESTAMP)') }} AS start_ts,
{{ ov.get('end_ts', 'end_ts' if base else 'CAST(NULL AS TIMESTAMP)') }} AS end_ts,
{%- for c in nums %}
CAST({{ ov.get(c, ('coalesce(' ~ c ~ ', 0)') if base else '0') }} AS DOUBLE) AS {{ c }},
{%- endfor %}
{{ ov.get('idle_clamped', 'coalesce(idle_clamped, FALSE)' if base else 'FALSE') }} AS idle_clamped,
{{ ov.get('is_estimated', 'coalesce(is_estimated, FALSE)' if base else 'FALSE') }} AS is_estimated,
{{ ov.get('estimation_reasons', "coalesce(estimation_reasons, '')" if base else "''") }} AS estimation_reasons,
{{ ov.get('_n', '_n' if base else '0') }} AS _n
{%- endmacro -%}

{%- macro share_allocations(relation_sql, key_expr=none, step_col=none, options={}) -%}
{%- set o = options or {} -%}
{%- set _SA_PROPS = ['cluster', 'node', 'namespace', 'pod', 'pod_uid', 'container', 'allocation_kind',
    'allocation_name', 'controller_kind', 'controller', 'provider_id', 'labels', 'annotations',
    'namespace_labels', 'namespace_annotations', 'node_labels', 'services'] -%}
{%- set share_idle = o.get('share_idle', false) in [true, 'true', 1] -%}
{%- set idle_split = o.get('idle_split', 'weighted') -%}
{%- set idle_by_node = o.get('idle_by_node', false) in [true, 'true', 1] -%}
{%- set split_idle = o.get('split_idle', false) -%}
{%- set include_idle = o.get('include_idle', true) in [true, 'true', 1] -%}
{%- set share_split = o.get('share_split', 'weighted') -%}
{%- set overhead = (o.get('overhead_monthly_usd', 0) or 0) | float -%}
{%- set share_scope = o.get('share_scope', 'all') or 'all' -%}
{%- set scope_expr = "coalesce(cluster, '')" if share_scope == 'cluster' else "''" -%}
{%- set energy_cols = ['energy_kwh', 'energy_cpu_kwh', 'energy_memory_kwh', 'energy_gpu_kwh',
    'energy_storage_kwh', 'co2e_operational_g', 'co2e_embodied_g', 'co2e_total_g', '_ci_e', '_pue_e'] -%}
{%- if idle_split not in ['weighted', 'even'] or share_split not in ['weighted', 'even']
      or split_idle not in [true, false, 'true', 'false', 'row'] or overhead < 0
      or share_scope not in ['all', 'cluster'] -%}
SELECT error('share_allocations: invalid options; idle_split/share_split: weighted|even, split_idle: true|false|row, overhead_monthly_usd >= 0, share_scope: all|cluster') AS agg_key
{%- else -%}
{%- set split_idle = 'row' if split_idle == 'row' else (split_idle in [true, 'true']) -%}
WITH _sa_in AS MATERIALIZED (
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
             OR {{ _sa_label(['_r.labels', '_r.namespace_labels'], kv[0]) }}
                = {{ _sa_sql_str(kv[1] if kv | length > 1 else '') }}
           {%- endfor %}) AS is_shared_row,
           FALSE AS is_filtered_out
    FROM {{ relation_sql }} AS _r
{%- else %}
    SELECT * FROM {{ relation_sql }}
{%- endif %}
),
_sa_src AS MATERIALIZED (
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
_sa_steps AS MATERIALIZED (
    -- one row per (step, share scope): the overhead it adds and its input total (cost_ratio's denominator)
    SELECT step_start, step_end, _scope,
        CAST({{ overhead }} AS DOUBLE) / 730.0 * (epoch(step_end) - epoch(step_start)) / 3600.0 AS overhead_cost,
        sum(coalesce(total_cost, 0)) AS input_total
    FROM _sa_src GROUP BY step_start, step_end, _scope
),
_sa_w AS MATERIALIZED (
    -- Idle weights (A11): per resource, from pre-idle costs of the rest AND the shared rows; even = 1 per row.
    SELECT *,
        {%- if idle_split == 'even' %}
        _n AS _wc, _n AS _wm, _n AS _wg, _n AS _we
        {%- else %}
        _c AS _wc, _m AS _wm, _g AS _wg, _c + _m + _g AS _we
        {%- endif %}
    FROM _sa_src WHERE _role IN ('rest', 'shared')
),
_sa_idle_den AS MATERIALIZED (
    SELECT step_start, _ikey,
        sum(_wc) AS wc, sum(_wm) AS wm, sum(_wg) AS wg, sum(_we) AS we, sum(_n) AS n,
        -- kept part: shared rows are never filtered (they are shared whatever the filter)
        sum(_wc) FILTER (WHERE _role = 'shared' OR NOT _filtered) AS kc,
        sum(_wm) FILTER (WHERE _role = 'shared' OR NOT _filtered) AS km,
        sum(_wg) FILTER (WHERE _role = 'shared' OR NOT _filtered) AS kg,
        sum(_we) FILTER (WHERE _role = 'shared' OR NOT _filtered) AS ke,
        sum(_n) FILTER (WHERE _role = 'shared' OR NOT _filtered) AS kn
    FROM _sa_w GROUP BY step_start, _ikey
),
_sa_idle_amt AS MATERIALIZED (
    SELECT step_start, _ikey, sum(_c) AS ic, sum(_m) AS im, sum(_g) AS ig,
        {%- for c in energy_cols %}
        sum(coalesce({{ c }}, 0)) AS i_{{ c }},
        {%- endfor %}
        bool_or(coalesce(is_estimated, FALSE)) AS i_est,
        string_agg(nullif(estimation_reasons, ''), ',') AS i_reasons
    FROM _sa_src WHERE _role = 'idle' GROUP BY step_start, _ikey
),
_sa_idle_factor AS MATERIALIZED (
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
_sa_recv AS MATERIALIZED (
    -- Rest and shared rows with the idle they receive (A12 step 5).
    SELECT w.*,
    {%- if share_idle %}
        CASE WHEN d.wc > 0 THEN coalesce(i.ic, 0) * w._wc / d.wc ELSE 0 END AS _rc,
        CASE WHEN d.wm > 0 THEN coalesce(i.im, 0) * w._wm / d.wm ELSE 0 END AS _rm,
        CASE WHEN d.wg > 0 THEN coalesce(i.ig, 0) * w._wg / d.wg ELSE 0 END AS _rg,
        {%- for c in energy_cols %}
        CASE WHEN d.we > 0 THEN coalesce(i.i_{{ c }}, 0) * w._we / d.we ELSE 0 END AS _r{{ c }},
        {%- endfor %}
        coalesce(i.i_est, FALSE) AND d.we > 0 AS _r_est,
        CASE WHEN d.we > 0 THEN i.i_reasons END AS _r_reasons
    {%- else %}
        0.0 AS _rc, 0.0 AS _rm, 0.0 AS _rg,
        {%- for c in energy_cols %}
        0.0 AS _r{{ c }},
        {%- endfor %}
        FALSE AS _r_est, CAST(NULL AS VARCHAR) AS _r_reasons
    {%- endif %}
    FROM _sa_w w
    JOIN _sa_idle_den d USING (step_start, _ikey)
    LEFT JOIN _sa_idle_amt i USING (step_start, _ikey)
),
_sa_pool AS MATERIALIZED (
    -- Shared pool per step and scope: shared rows incl. their idle, plus overhead added after the idle
    -- coefficients (A12 3).
    SELECT s.step_start, s.step_end, s._scope,
        s.overhead_cost + coalesce(sum(coalesce(r.total_cost, 0) + r._rc + r._rm + r._rg), 0) AS p_cost,
        {%- for c in energy_cols %}
        coalesce(sum(coalesce(r.{{ c }}, 0) + r._r{{ c }}), 0) AS p_{{ c }},
        {%- endfor %}
        coalesce(bool_or(coalesce(r.is_estimated, FALSE) OR r._r_est), FALSE) AS p_est,
        string_agg(concat_ws(',', nullif(r.estimation_reasons, ''), r._r_reasons), ',') AS p_reasons
    FROM _sa_steps s LEFT JOIN (SELECT * FROM _sa_recv WHERE _role = 'shared') r USING (step_start, _scope)
    GROUP BY s.step_start, s.step_end, s._scope, s.overhead_cost
),
_sa_keyw AS MATERIALIZED (
    SELECT step_start, _scope, agg_key, _filtered, sum(_pre_total) AS w
    FROM _sa_src WHERE _role = 'rest' GROUP BY step_start, _scope, agg_key, _filtered
),
_sa_keyden AS MATERIALIZED (
    -- Filtered rows keep their weight (under `__filtered__`, never output) so a filter never changes a share.
    SELECT step_start, _scope, sum(w) AS wsum, count(DISTINCT agg_key) AS nkeys
    FROM _sa_keyw GROUP BY step_start, _scope
),
_sa_coef AS MATERIALIZED (
    SELECT k.step_start, k._scope, k.agg_key,
        {%- if share_split == 'even' %}
        1.0 / max(d.nkeys) AS coef
        {%- else %}
        CASE WHEN max(d.wsum) > 0 THEN sum(k.w) / max(d.wsum) ELSE 1.0 / max(d.nkeys) END AS coef
        {%- endif %}
    FROM _sa_keyw k JOIN _sa_keyden d USING (step_start, _scope)
    WHERE NOT k._filtered
    GROUP BY k.step_start, k._scope, k.agg_key
),
_sa_parts AS MATERIALIZED (
    SELECT {{ _sa_select({
        'cpu_cost_idle': 'coalesce(cpu_cost_idle, 0) + _rc',
        'ram_cost_idle': 'coalesce(ram_cost_idle, 0) + _rm',
        'gpu_cost_idle': 'coalesce(gpu_cost_idle, 0) + _rg',
        'total_cost': 'coalesce(total_cost, 0) + _rc + _rm + _rg',
        'energy_kwh': 'coalesce(energy_kwh, 0) + _renergy_kwh',
        'energy_cpu_kwh': 'coalesce(energy_cpu_kwh, 0) + _renergy_cpu_kwh',
        'energy_memory_kwh': 'coalesce(energy_memory_kwh, 0) + _renergy_memory_kwh',
        'energy_gpu_kwh': 'coalesce(energy_gpu_kwh, 0) + _renergy_gpu_kwh',
        'energy_storage_kwh': 'coalesce(energy_storage_kwh, 0) + _renergy_storage_kwh',
        'co2e_operational_g': 'coalesce(co2e_operational_g, 0) + _rco2e_operational_g',
        'co2e_embodied_g': 'coalesce(co2e_embodied_g, 0) + _rco2e_embodied_g',
        'co2e_total_g': 'coalesce(co2e_total_g, 0) + _rco2e_total_g',
        '_ci_e': '_ci_e + _r_ci_e',
        '_pue_e': '_pue_e + _r_pue_e',
        'is_estimated': 'coalesce(is_estimated, FALSE) OR _r_est',
        'estimation_reasons': "concat_ws(',', nullif(estimation_reasons, ''), _r_reasons)",
    }, true) }}
    FROM _sa_recv WHERE _role = 'rest' AND NOT _filtered
    UNION ALL
    SELECT {{ _sa_select({}, true) }}
    FROM _sa_src WHERE _role = 'unmounted' AND NOT _filtered
{%- if include_idle %}
    UNION ALL
    SELECT {{ _sa_select({
        'agg_key': ("agg_key" if split_idle == 'row' else (
            ("coalesce(node, cluster) || '/__idle__'" if idle_by_node else "cluster || '/__idle__'")
            if split_idle else "'__idle__'")),
        'cpu_core_hours': 'coalesce(cpu_core_hours, 0) * fc',
        'cpu_cost': 'coalesce(cpu_cost, 0) * fc',
        'ram_byte_hours': 'coalesce(ram_byte_hours, 0) * fm',
        'ram_cost': 'coalesce(ram_cost, 0) * fm',
        'gpu_hours': 'coalesce(gpu_hours, 0) * fg',
        'gpu_cost': 'coalesce(gpu_cost, 0) * fg',
        'total_cost': 'coalesce(total_cost, 0) - _c * (1 - fc) - _m * (1 - fm) - _g * (1 - fg)',
        'energy_kwh': 'coalesce(energy_kwh, 0) * fe',
        'energy_cpu_kwh': 'coalesce(energy_cpu_kwh, 0) * fe',
        'energy_memory_kwh': 'coalesce(energy_memory_kwh, 0) * fe',
        'energy_gpu_kwh': 'coalesce(energy_gpu_kwh, 0) * fe',
        'energy_storage_kwh': 'coalesce(energy_storage_kwh, 0) * fe',
        'co2e_operational_g': 'coalesce(co2e_operational_g, 0) * fe',
        'co2e_embodied_g': 'coalesce(co2e_embodied_g, 0) * fe',
        'co2e_total_g': 'coalesce(co2e_total_g, 0) * fe',
        '_ci_e': '_ci_e * fe',
        '_pue_e': '_pue_e * fe',
    }, true) }}
    FROM _sa_src JOIN _sa_idle_factor USING (step_start, _ikey)
    WHERE _role = 'idle'
    {%- if share_idle %}
      -- fully shared idle disappears (A12 step 8); what could not be shared stays
      AND (fc > 0 OR fm > 0 OR fg > 0 OR fe > 0)
    {%- endif %}
{%- endif %}
    UNION ALL
    SELECT {{ _sa_select({
        'agg_key': 'c.agg_key',
        'shared_cost': 'p.p_cost * c.coef',
        'total_cost': 'p.p_cost * c.coef',
        'energy_kwh': 'p.p_energy_kwh * c.coef',
        'energy_cpu_kwh': 'p.p_energy_cpu_kwh * c.coef',
        'energy_memory_kwh': 'p.p_energy_memory_kwh * c.coef',
        'energy_gpu_kwh': 'p.p_energy_gpu_kwh * c.coef',
        'energy_storage_kwh': 'p.p_energy_storage_kwh * c.coef',
        'co2e_operational_g': 'p.p_co2e_operational_g * c.coef',
        'co2e_embodied_g': 'p.p_co2e_embodied_g * c.coef',
        'co2e_total_g': 'p.p_co2e_total_g * c.coef',
        '_ci_e': 'p.p__ci_e * c.coef',
        '_pue_e': 'p.p__pue_e * c.coef',
        'is_estimated': 'p.p_est AND c.coef > 0',
        'estimation_reasons': "CASE WHEN c.coef > 0 THEN coalesce(p.p_reasons, '') ELSE '' END",
    }, false) }}
    FROM _sa_coef c JOIN _sa_pool p USING (step_start, _scope)
    UNION ALL
    -- A pool with no recipient at all in its step (and scope) stays visible, so totals are conserved.
    SELECT {{ _sa_select({
        'agg_key': ("coalesce(nullif(_scope, '') || '/', '') || '__shared__'" if share_scope == 'cluster'
                    else "'__shared__'"),
        'cluster': ("nullif(_scope, '')" if share_scope == 'cluster' else 'CAST(NULL AS VARCHAR)'),
        'allocation_kind': "'shared'",
        'shared_cost': 'p_cost',
        'total_cost': 'p_cost',
        'energy_kwh': 'p_energy_kwh',
        'energy_cpu_kwh': 'p_energy_cpu_kwh',
        'energy_memory_kwh': 'p_energy_memory_kwh',
        'energy_gpu_kwh': 'p_energy_gpu_kwh',
        'energy_storage_kwh': 'p_energy_storage_kwh',
        'co2e_operational_g': 'p_co2e_operational_g',
        'co2e_embodied_g': 'p_co2e_embodied_g',
        'co2e_total_g': 'p_co2e_total_g',
        '_ci_e': 'p__ci_e',
        '_pue_e': 'p__pue_e',
        'is_estimated': 'p_est',
        'estimation_reasons': "coalesce(p_reasons, '')",
    }, false) }}
    FROM _sa_pool
    WHERE (p_cost <> 0 OR p_co2e_total_g <> 0 OR p_energy_kwh <> 0)
      AND NOT EXISTS (SELECT 1 FROM _sa_keyden d WHERE d.step_start = _sa_pool.step_start AND d._scope = _sa_pool._scope)
),
_sa_agg AS MATERIALIZED (
    SELECT step_start, step_end, agg_key,
    {%- for c in _SA_PROPS %}
        -- one value on every member: all non-NULL and min = max (no DISTINCT aggregate: those run as separate
        -- hash tables joined back, which dominated query time)
        CASE WHEN count(*) FILTER (WHERE _base) > 0
              AND count({{ c }}) FILTER (WHERE _base) = count(*) FILTER (WHERE _base)
              AND min({{ c }}) FILTER (WHERE _base) = max({{ c }}) FILTER (WHERE _base)
             THEN min({{ c }}) FILTER (WHERE _base) END AS {{ c }},
    {%- endfor %}
        min(start_ts) FILTER (WHERE _base) AS start_ts,
        max(end_ts) FILTER (WHERE _base) AS end_ts,
        sum(_n) FILTER (WHERE _base) AS _members,
        max(minutes) FILTER (WHERE _base) AS _max_minutes,
    {%- for c in ['cpu_core_hours', 'cpu_cost', 'cpu_cost_idle', 'gpu_hours', 'gpu_cost', 'gpu_cost_idle',
        'ram_byte_hours', 'ram_cost', 'ram_cost_idle', 'pv_byte_hours', 'pv_cost', 'network_transfer_bytes',
        'network_receive_bytes', 'network_cross_zone_cost', 'network_cross_region_cost', 'network_internet_cost',
        'network_cost', 'load_balancer_cost', 'shared_cost', 'external_cost', 'total_cost'] + energy_cols %}
        sum({{ c }}) AS {{ c }},
    {%- endfor %}
    {%- for c in ['cpu_core_request_average', 'cpu_core_usage_average', 'gpu_request_average',
        'gpu_usage_average', 'ram_byte_request_average', 'ram_byte_usage_average'] %}
        sum({{ c }} * minutes) FILTER (WHERE _base) AS _tw_{{ c }},
        sum({{ c }} * minutes) FILTER (WHERE _base AND coalesce(allocation_kind, '') <> 'idle') AS _eff_{{ c }},
    {%- endfor %}
        max(cpu_core_usage_max) FILTER (WHERE _base) AS _cpu_max,
        max(ram_byte_usage_max) FILTER (WHERE _base) AS _ram_max,
        coalesce(bool_or(idle_clamped) FILTER (WHERE _base), FALSE) AS idle_clamped,
        coalesce(bool_or(is_estimated), FALSE) AS is_estimated,
        coalesce(array_to_string(list_sort(list_distinct(list_filter(
            string_split(string_agg(DISTINCT nullif(estimation_reasons, ''), ','), ','),
            lambda x: x <> ''))), ','), '') AS estimation_reasons
    FROM _sa_parts
    GROUP BY step_start, step_end, agg_key
),
_sa_out AS MATERIALIZED (
    SELECT a.*,
        -- A14: averages over the members' span (two side-by-side containers add up; consecutive days do not)
        coalesce((epoch(a.end_ts) - epoch(a.start_ts)) / 60.0, a._max_minutes, 0) AS _span,
        a.cpu_cost + a.cpu_cost_idle AS _cpu_tot,
        a.ram_cost + a.ram_cost_idle AS _ram_tot,
        a.gpu_cost + a.gpu_cost_idle AS _gpu_tot
    FROM _sa_agg a
),
_sa_eff AS MATERIALIZED (
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
SELECT
    e.step_start, e.step_end, e.agg_key,
    CAST(e.step_start AS DATE) AS usage_date,
    e.step_start AS window_start, e.step_end AS window_end,
    e.cluster, e.node, e.namespace, e.pod, e.pod_uid, e.container, e.allocation_kind,
    coalesce(e.allocation_name, e.agg_key) AS allocation_name,
    e.controller_kind, e.controller, e.provider_id, e.labels, e.annotations, e.namespace_labels,
    e.namespace_annotations, e.node_labels, e.services, e.start_ts, e.end_ts,
    e._span AS minutes,
    e.cpu_core_hours,
    e._tw_cpu_core_request_average / nullif(e._span, 0) AS cpu_core_request_average,
    e._tw_cpu_core_usage_average / nullif(e._span, 0) AS cpu_core_usage_average,
    CASE WHEN e._members = 1 THEN e._cpu_max END AS cpu_core_usage_max,
    e.cpu_cost, e.cpu_cost_idle, e._cpu_eff AS cpu_efficiency,
    e.gpu_hours,
    e._tw_gpu_request_average / nullif(e._span, 0) AS gpu_request_average,
    e._tw_gpu_usage_average / nullif(e._span, 0) AS gpu_usage_average,
    e.gpu_cost, e.gpu_cost_idle, e._gpu_eff AS gpu_efficiency,
    e.ram_byte_hours,
    e._tw_ram_byte_request_average / nullif(e._span, 0) AS ram_byte_request_average,
    e._tw_ram_byte_usage_average / nullif(e._span, 0) AS ram_byte_usage_average,
    CASE WHEN e._members = 1 THEN e._ram_max END AS ram_byte_usage_max,
    e.ram_cost, e.ram_cost_idle, e._ram_eff AS ram_efficiency,
    e.pv_byte_hours, e.pv_cost,
    e.network_transfer_bytes, e.network_receive_bytes, e.network_cross_zone_cost, e.network_cross_region_cost,
    e.network_internet_cost, e.network_cost, e.load_balancer_cost, e.shared_cost, e.external_cost, e.total_cost,
    CASE WHEN e._cpu_tot + e._ram_tot > 0
         THEN (e._cpu_eff * e._cpu_tot + e._ram_eff * e._ram_tot) / (e._cpu_tot + e._ram_tot)
         ELSE 0.0 END AS total_efficiency,
    -- share of its scope's total (its cluster's with share_scope 'cluster'), else of the whole set's
    e.total_cost / nullif(coalesce(s.input_total + s.overhead_cost, t.set_total), 0) AS cost_ratio,
    e.energy_kwh, e.energy_cpu_kwh, e.energy_memory_kwh, e.energy_gpu_kwh, e.energy_storage_kwh,
    e.co2e_operational_g, e.co2e_embodied_g, e.co2e_total_g,
    e._ci_e / nullif(e.energy_kwh, 0) AS carbon_intensity_g_per_kwh,
    e._pue_e / nullif(e.energy_kwh, 0) AS pue,
    e.idle_clamped, e.is_estimated, e.estimation_reasons
FROM _sa_eff e
JOIN (SELECT step_start, sum(input_total + overhead_cost) AS set_total FROM _sa_steps GROUP BY step_start) t
    ON t.step_start = e.step_start
LEFT JOIN _sa_steps s
    ON s.step_start = e.step_start AND s._scope = {{ "coalesce(e.cluster, '')" if share_scope == 'cluster' else "''" }}
{%- endif %}
{%- endmacro -%}
