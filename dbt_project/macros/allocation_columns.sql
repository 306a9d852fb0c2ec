{#-
  allocation_columns.sql — THE list of the allocation row (marts.fct_allocation_daily and
  marts.fct_allocation_shared_daily), defined once. Read by:
    dbt     allocation_columns() / allocation_column_names(group): the row-kind models of
            models/intermediate/allocation (allocation_row), the two marts, macros/allocation_sharing.sql
    Python  pipelines/warehouse/allocation_columns.py parses the same YAML text (query engine, CSV fields, test fixture);
            tests/unit/test_allocation_columns.py checks the contract YAML and docs/CONTRACTS.md against it.
  Plain Jinja only in allocation_columns_yaml (Python renders it with jinja2).

  Order = the marts' column order (the contract). Per column:
    type      contract data type
    group     window | property | span | sum | average | max | efficiency | energy | intensity | ratio | flag
              | internal (carried by the row-kind models for the mart, not a mart column)
              sharing/aggregation by group: properties kept when equal on all members; sums and energy added
              (energy, CO2e and intensity weights shared with the energy coefficients); averages time-weighted;
              max kept for a single member
    derived   computed by the mart from the other columns (the row-kind models do not carry it)
    received  filled by sharing only (idle and shared cost received): 0 on every row of the unshared mart
    default   value on row kinds that do not compute the column (else 0, NULL for text, time and max)
    api       field name in the allocation API answer and CSV (kubeledger's own fields; Kubecost's are
              pipelines/serving/query/allocation.py to_allocation)
    follows   a reconciliation adjustment (issue 28): the cost column it adjusts; sharing moves it with that cost
              (an idle row's share of idle CPU cost carries the same share of its CPU adjustment). The adjustments
              are not part of total_cost (the list cost); the API adds them with reconcile=true, as Kubecost does.
-#}
{%- macro allocation_columns_yaml() -%}
- {name: usage_date, type: date, group: window}
- {name: window_start, type: timestamp, group: window, derived: true}
- {name: window_end, type: timestamp, group: window, derived: true}
- {name: cluster, type: varchar, group: property}
- {name: node, type: varchar, group: property}
- {name: namespace, type: varchar, group: property}
- {name: pod, type: varchar, group: property}
- {name: pod_uid, type: varchar, group: property}
- {name: container, type: varchar, group: property}
- {name: allocation_kind, type: varchar, group: property}
- {name: allocation_name, type: varchar, group: property}
- {name: controller_kind, type: varchar, group: property}
- {name: controller, type: varchar, group: property}
- {name: provider_id, type: varchar, group: property}
- {name: labels, type: varchar, group: property, default: "'{}'"}
- {name: annotations, type: varchar, group: property, default: "'{}'"}
- {name: namespace_labels, type: varchar, group: property, default: "'{}'"}
- {name: namespace_annotations, type: varchar, group: property, default: "'{}'"}
- {name: node_labels, type: varchar, group: property, default: "'{}'"}
- {name: services, type: varchar, group: property, default: "'[]'"}
- {name: start_ts, type: timestamp, group: span}
- {name: end_ts, type: timestamp, group: span}
- {name: minutes, type: double, group: span}
- {name: cpu_core_hours, type: double, group: sum}
- {name: cpu_core_request_average, type: double, group: average}
- {name: cpu_core_usage_average, type: double, group: average}
- {name: cpu_core_usage_max, type: double, group: max}
- {name: cpu_cost, type: double, group: sum}
- {name: cpu_cost_idle, type: double, group: sum, received: true}
- {name: cpu_efficiency, type: double, group: efficiency, derived: true}
- {name: gpu_hours, type: double, group: sum}
- {name: gpu_request_average, type: double, group: average}
- {name: gpu_usage_average, type: double, group: average}
- {name: gpu_cost, type: double, group: sum}
- {name: gpu_cost_idle, type: double, group: sum, received: true}
- {name: gpu_efficiency, type: double, group: efficiency, derived: true}
- {name: ram_byte_hours, type: double, group: sum}
- {name: ram_byte_request_average, type: double, group: average}
- {name: ram_byte_usage_average, type: double, group: average}
- {name: ram_byte_usage_max, type: double, group: max}
- {name: ram_cost, type: double, group: sum}
- {name: ram_cost_idle, type: double, group: sum, received: true}
- {name: ram_efficiency, type: double, group: efficiency, derived: true}
- {name: pv_byte_hours, type: double, group: sum}
- {name: pv_cost, type: double, group: sum}
- {name: network_transfer_bytes, type: double, group: sum, default: "null"}
- {name: network_receive_bytes, type: double, group: sum, default: "null"}
- {name: network_cross_zone_cost, type: double, group: sum}
- {name: network_cross_region_cost, type: double, group: sum}
- {name: network_internet_cost, type: double, group: sum}
- {name: network_cost, type: double, group: sum, derived: true}
- {name: load_balancer_cost, type: double, group: sum}
- {name: shared_cost, type: double, group: sum, received: true}
- {name: external_cost, type: double, group: sum, received: true}
- {name: total_cost, type: double, group: sum, derived: true}
- {name: total_efficiency, type: double, group: efficiency, derived: true}
- {name: energy_kwh, type: double, group: energy, derived: true, api: energyKwh}
- {name: energy_cpu_kwh, type: double, group: energy}
- {name: energy_memory_kwh, type: double, group: energy}
- {name: energy_gpu_kwh, type: double, group: energy}
- {name: energy_storage_kwh, type: double, group: energy}
- {name: co2e_operational_g, type: double, group: energy, api: co2eOperationalG}
- {name: co2e_embodied_g, type: double, group: energy, api: co2eEmbodiedG}
- {name: co2e_total_g, type: double, group: energy, derived: true, api: co2eTotalG}
- {name: carbon_intensity_g_per_kwh, type: double, group: intensity, derived: true}
- {name: pue, type: double, group: intensity, derived: true}
- {name: idle_clamped, type: boolean, group: flag, default: "false"}
- {name: is_estimated, type: boolean, group: flag, derived: true}
- {name: estimation_reasons, type: varchar, group: flag}
- {name: cost_ratio, type: double, group: ratio, derived: true}
- {name: cpu_cost_adjustment, type: double, group: sum, follows: cpu_cost}
- {name: ram_cost_adjustment, type: double, group: sum, follows: ram_cost}
- {name: gpu_cost_adjustment, type: double, group: sum, follows: gpu_cost}
- {name: pv_cost_adjustment, type: double, group: sum, follows: pv_cost}
- {name: load_balancer_cost_adjustment, type: double, group: sum, follows: load_balancer_cost}
- {name: reconciliation_status, type: varchar, group: property}
- {name: intensity_weight, type: double, group: internal}
- {name: pue_weight, type: double, group: internal}
- {name: intensity_plain_avg, type: double, group: internal, default: "null"}
- {name: pue_plain_avg, type: double, group: internal, default: "null"}
{%- endmacro -%}

{#- The list as a list of dicts (see above). -#}
{%- macro allocation_columns() -%}
{{ return(fromyaml(allocation_columns_yaml())) }}
{%- endmacro -%}

{#- Names of the mart's columns (internal ones left out), in contract order; only those of `group` if given. -#}
{%- macro allocation_column_names(group=none) -%}
{%- set names = [] -%}
{%- for c in allocation_columns() if c.group != 'internal' and (group is none or c.group == group) -%}
{%- set _ = names.append(c.name) -%}
{%- endfor -%}
{{ return(names) }}
{%- endmacro -%}

{#- One row of a row-kind model: every column the row-kind models carry (not derived), in list order, from
    `values` (column -> SQL expression), else `rest`.<column> when `rest` (a relation alias) is given and the column
    is not `received`, else the column's default. A name in `values` that is not such a column fails the build,
    so a typo cannot silently drop a column. -#}
{%- macro allocation_row(values, rest=none) -%}
{%- set carried = [] -%}
{%- for c in allocation_columns() if not c.get('derived') -%}{%- set _ = carried.append(c.name) -%}{%- endfor -%}
{%- for name in values if name not in carried -%}
{{ exceptions.raise_compiler_error("allocation_row: " ~ name ~ " is not a carried column of macros/allocation_columns.sql") }}
{%- endfor -%}
{%- for c in allocation_columns() if not c.get('derived') %}
        {% if c.name in values -%}
        {{ values[c.name] }}
        {%- elif rest and not c.get('received') -%}
        {{ rest }}.{{ c.name }}
        {%- else -%}
        cast({{ c.get('default', 'null' if c.type in ('varchar', 'timestamp', 'date') or c.group == 'max' else '0') }} as {{ 'string' if c.type == 'varchar' else c.type }})
        {%- endif %} as {{ c.name }}{{ ',' if not loop.last }}
{%- endfor %}
{%- endmacro -%}
