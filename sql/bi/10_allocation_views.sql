-- BI views published into the serving copy (schema bi) and into lake.duckdb. Documented in README "For analysts".
-- A file runs only when every marts.<table> it names exists; a view column without a COMMENT here gets the comment
-- of the same-named column of the mart it reads (pipelines/warehouse/publish.py).
--
-- Keys are the allocation API's (serving/query/aggregates.py, allocation.py), so a view row and the API agree to
-- the cent for the same day and key: idle rows are `__idle__`, unmounted volumes `__unmounted__` (never folded into
-- a namespace), a workload row without namespace/controller `__unallocated__`. No key column is ever NULL.

-- Namespace cost, energy and CO2e per day, before sharing: the API's `aggregate=namespace`.
create or replace view bi.namespace_daily as
select
    usage_date,
    cluster,
    case allocation_kind
        when 'idle' then '__idle__'
        when 'unmounted' then '__unmounted__'
        else coalesce(nullif(namespace, ''), '__unallocated__')
    end as namespace,
    sum(total_cost) as total_cost,
    sum(cpu_cost) as cpu_cost,
    sum(ram_cost) as ram_cost,
    sum(gpu_cost) as gpu_cost,
    sum(pv_cost) as pv_cost,
    sum(network_cost) as network_cost,
    sum(load_balancer_cost) as load_balancer_cost,
    sum(shared_cost) as shared_cost,
    sum(external_cost) as external_cost,
    sum(energy_kwh) as energy_kwh,
    sum(co2e_operational_g) as co2e_operational_g,
    sum(co2e_embodied_g) as co2e_embodied_g,
    sum(co2e_total_g) as co2e_total_g,
    bool_or(coalesce(is_estimated, false)) as is_estimated,
    count(*) as allocation_rows
from marts.fct_allocation_daily
group by all;

-- Controller cost per day, before sharing: the API's `aggregate=controller` (summed over namespaces) and
-- `aggregate=namespace,controller` (one row each).
create or replace view bi.controller_daily as
select
    usage_date,
    cluster,
    case allocation_kind
        when 'idle' then '__idle__'
        when 'unmounted' then '__unmounted__'
        else coalesce(nullif(namespace, ''), '__unallocated__')
    end as namespace,
    case allocation_kind
        when 'idle' then '__idle__'
        when 'unmounted' then '__unmounted__'
        else coalesce(nullif(lower(controller_kind), ''), '__unallocated__')
    end as controller_kind,
    case allocation_kind
        when 'idle' then '__idle__'
        when 'unmounted' then '__unmounted__'
        else coalesce(nullif(controller, ''), '__unallocated__')
    end as controller,
    case
        when allocation_kind = 'idle' then '__idle__'
        when allocation_kind = 'unmounted' then '__unmounted__'
        when nullif(controller, '') is null then '__unallocated__'
        when nullif(controller_kind, '') is null then controller
        else lower(controller_kind) || ':' || controller
    end as controller_key,
    sum(total_cost) as total_cost,
    sum(cpu_cost) as cpu_cost,
    sum(ram_cost) as ram_cost,
    sum(gpu_cost) as gpu_cost,
    sum(pv_cost) as pv_cost,
    sum(network_cost) as network_cost,
    sum(load_balancer_cost) as load_balancer_cost,
    sum(energy_kwh) as energy_kwh,
    sum(co2e_total_g) as co2e_total_g,
    bool_or(coalesce(is_estimated, false)) as is_estimated,
    count(*) as allocation_rows
from marts.fct_allocation_daily
group by all;

comment on view bi.namespace_daily is 'Cost, energy and CO2e per (usage_date, cluster, namespace) before sharing; equals the allocation API with aggregate=namespace (summed over clusters) for the same day. Idle is its own `__idle__` row, unmounted volumes `__unmounted__`, workload rows without a namespace `__unallocated__`; namespace is never NULL.';
comment on column bi.namespace_daily.usage_date is 'UTC day.';
comment on column bi.namespace_daily.cluster is 'Cluster name from kubeledger.yaml.';
comment on column bi.namespace_daily.namespace is 'Namespace, or `__idle__` (idle rows), `__unmounted__` (unmounted volumes, whatever their namespace), `__unallocated__` (workload without namespace): the allocation API''s namespace key. Never NULL.';
comment on column bi.namespace_daily.total_cost is 'Σ total_cost at list prices, USD (the API''s totalCost for this key with reconcile=false; a bill''s adjustments are in marts.fct_allocation_daily''s *_cost_adjustment columns).';
comment on column bi.namespace_daily.is_estimated is 'Any row of the group has an estimated value (see marts.fct_allocation_daily.estimation_reasons).';
comment on column bi.namespace_daily.allocation_rows is 'Rows of marts.fct_allocation_daily in the group.';

comment on view bi.controller_daily is 'Cost, energy and CO2e per (usage_date, cluster, namespace, controller) before sharing. controller_key is the allocation API''s controller key (`kind:name`); sum rows by controller_key to get aggregate=controller. Idle, unmounted and controller-less rows are `__idle__`, `__unmounted__`, `__unallocated__`; no key column is NULL.';
comment on column bi.controller_daily.usage_date is 'UTC day.';
comment on column bi.controller_daily.cluster is 'Cluster name from kubeledger.yaml.';
comment on column bi.controller_daily.namespace is 'Namespace key as in bi.namespace_daily (`__idle__`, `__unmounted__`, `__unallocated__`). Never NULL.';
comment on column bi.controller_daily.controller_kind is 'Lower-case controller kind, or `__unallocated__` (bare pod), `__idle__`, `__unmounted__`: the API''s controllerKind key. Never NULL.';
comment on column bi.controller_daily.controller is 'Controller name, or `__unallocated__` (bare pod), `__idle__`, `__unmounted__`. Never NULL.';
comment on column bi.controller_daily.controller_key is 'The allocation API''s controller key: `<kind>:<name>` (name alone when the kind is unknown), `__unallocated__`, `__idle__`, `__unmounted__`. Never NULL.';
comment on column bi.controller_daily.total_cost is 'Σ total_cost at list prices, USD (the API''s totalCost for this key with reconcile=false; a bill''s adjustments are in marts.fct_allocation_daily''s *_cost_adjustment columns).';
comment on column bi.controller_daily.is_estimated is 'Any row of the group has an estimated value.';
comment on column bi.controller_daily.allocation_rows is 'Rows of marts.fct_allocation_daily in the group.';
