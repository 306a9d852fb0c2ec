-- Cluster totals with idle percentage and data coverage, plus the allocation total the other views add up to.
create or replace view bi.cluster_daily as
select
    *,
    workload_cost + idle_cost + unmounted_cost as allocation_total_cost
from marts.fct_cluster_daily;

comment on view bi.cluster_daily is 'Cluster totals per (usage_date, cluster) (marts.fct_cluster_daily). workload_cost, idle_cost and unmounted_cost are the allocation API''s aggregate=cluster keys `<cluster>`, `__idle__` and `__unmounted__`; allocation_total_cost is their sum (= Σ bi.namespace_daily). total_cost is asset-based and differs from it when idle was clamped (idle_clamped) or overhead is configured.';
comment on column bi.cluster_daily.allocation_total_cost is 'workload_cost + idle_cost + unmounted_cost, USD: Σ total_cost of the cluster-day''s allocation rows, = Σ bi.namespace_daily.total_cost.';
