-- Controller-level view with the configured sharing applied (marts.fct_allocation_shared_daily: kubeledger.yaml
-- `sharing`, pooled within each cluster-day). Keys as in 10_allocation_views.sql; a shared pool that found no
-- recipient in its cluster-day is `__shared__`.
create or replace view bi.controller_daily_shared as
select
    usage_date,
    cluster,
    case allocation_kind
        when 'idle' then '__idle__'
        when 'unmounted' then '__unmounted__'
        when 'shared' then '__shared__'
        else coalesce(nullif(namespace, ''), '__unallocated__')
    end as namespace,
    case allocation_kind
        when 'idle' then '__idle__'
        when 'unmounted' then '__unmounted__'
        when 'shared' then '__shared__'
        else coalesce(nullif(lower(controller_kind), ''), '__unallocated__')
    end as controller_kind,
    case allocation_kind
        when 'idle' then '__idle__'
        when 'unmounted' then '__unmounted__'
        when 'shared' then '__shared__'
        else coalesce(nullif(controller, ''), '__unallocated__')
    end as controller,
    case
        when allocation_kind = 'idle' then '__idle__'
        when allocation_kind = 'unmounted' then '__unmounted__'
        when allocation_kind = 'shared' then '__shared__'
        when nullif(controller, '') is null then '__unallocated__'
        when nullif(controller_kind, '') is null then controller
        else lower(controller_kind) || ':' || controller
    end as controller_key,
    sum(total_cost) as total_cost,
    sum(shared_cost) as shared_cost,
    sum(coalesce(cpu_cost_idle, 0) + coalesce(ram_cost_idle, 0) + coalesce(gpu_cost_idle, 0)) as idle_cost_received,
    sum(energy_kwh) as energy_kwh,
    sum(co2e_total_g) as co2e_total_g,
    bool_or(coalesce(is_estimated, false)) as is_estimated,
    count(*) as allocation_rows
from marts.fct_allocation_shared_daily
group by all;

comment on view bi.controller_daily_shared is 'Cost, energy and CO2e per (usage_date, cluster, namespace, controller) with the configured sharing applied within each cluster-day (marts.fct_allocation_shared_daily). Sum rows by controller_key to get the allocation API''s aggregate=controller with the same sharing options and shareScope=cluster (weighted split). No key column is NULL.';
comment on column bi.controller_daily_shared.usage_date is 'UTC day.';
comment on column bi.controller_daily_shared.cluster is 'Cluster name from kubeledger.yaml.';
comment on column bi.controller_daily_shared.namespace is 'Namespace, or `__idle__` (idle not shared), `__unmounted__`, `__shared__` (a shared pool with no recipient), `__unallocated__` (workload without namespace). Never NULL.';
comment on column bi.controller_daily_shared.controller_kind is 'Lower-case controller kind, or `__unallocated__` (bare pod), `__idle__`, `__unmounted__`, `__shared__`. Never NULL.';
comment on column bi.controller_daily_shared.controller is 'Controller name, or `__unallocated__` (bare pod), `__idle__`, `__unmounted__`, `__shared__`. Never NULL.';
comment on column bi.controller_daily_shared.controller_key is 'The allocation API''s controller key: `<kind>:<name>` (name alone when the kind is unknown), `__unallocated__`, `__idle__`, `__unmounted__`, `__shared__`. Never NULL.';
comment on column bi.controller_daily_shared.total_cost is 'Σ total_cost after sharing (idle and shared costs received included), USD.';
comment on column bi.controller_daily_shared.shared_cost is 'Σ shared cost received (shared namespaces/labels and monthly overhead), USD.';
comment on column bi.controller_daily_shared.idle_cost_received is 'Σ idle CPU + RAM + GPU cost received through idle sharing, USD (0 when share_idle is off).';
comment on column bi.controller_daily_shared.is_estimated is 'Any row of the group, or the idle/shared cost it received, is estimated.';
comment on column bi.controller_daily_shared.allocation_rows is 'Rows of marts.fct_allocation_shared_daily in the group.';
