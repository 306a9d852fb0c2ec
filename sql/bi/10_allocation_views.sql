-- BI views published into the serving copy (schema bi). Documented in README "For analysts".

-- Namespace cost, energy and CO2e per day, idle shown as its own row.
create or replace view bi.namespace_daily as
select
    usage_date,
    cluster,
    coalesce(namespace, '__idle__') as namespace,
    sum(total_cost) as total_cost,
    sum(cpu_cost) as cpu_cost,
    sum(ram_cost) as ram_cost,
    sum(gpu_cost) as gpu_cost,
    sum(pv_cost) as pv_cost,
    sum(network_cost) as network_cost,
    sum(load_balancer_cost) as load_balancer_cost,
    sum(energy_kwh) as energy_kwh,
    sum(co2e_total_g) as co2e_total_g,
    bool_or(is_estimated) as is_estimated
from marts.fct_allocation_daily
group by 1, 2, 3;

-- Controller-level view with the configured sharing applied.
create or replace view bi.controller_daily_shared as
select
    usage_date,
    cluster,
    namespace,
    coalesce(controller_kind, '__unallocated__') as controller_kind,
    coalesce(controller, '__unallocated__') as controller,
    sum(total_cost) as total_cost,
    sum(shared_cost) as shared_cost,
    sum(cpu_cost_idle + ram_cost_idle + gpu_cost_idle) as idle_cost_received,
    sum(energy_kwh) as energy_kwh,
    sum(co2e_total_g) as co2e_total_g
from marts.fct_allocation_shared_daily
group by 1, 2, 3, 4, 5;

-- Cluster totals with idle percentage and data coverage.
create or replace view bi.cluster_daily as
select * from marts.fct_cluster_daily;
