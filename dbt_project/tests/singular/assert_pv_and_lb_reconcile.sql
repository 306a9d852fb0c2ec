{#- the Dagster asset check's asset (the test refs several models) #}
{{ config(meta={'dagster': {'ref': {'name': 'fct_allocation_daily'}}}) }}
-- The days the build wrote only (built_days_filter, macros/windows.sql): in a backfill other days may be mid-build.
-- METHOD A7/A9: persistent volumes and load balancers are fully allocated (pods + __unmounted__), never idle.
-- Per cluster and day: Σ pv_cost over all allocation rows = Σ pv_cost of the volume assets, and
-- Σ load_balancer_cost over all allocation rows = Σ load_balancer_cost of the load-balancer assets,
-- within 1e-9 relative (floats_differ, macros/float_tolerance.sql). Returns the cluster-days (and kind) that do
-- not reconcile.
{{ allocation_sums_match_assets([
    ('pv', 'coalesce(pv_cost, 0)', "case when asset_kind = 'volume' then coalesce(pv_cost, 0) else 0 end"),
    ('load_balancer', 'coalesce(load_balancer_cost, 0)',
     "case when asset_kind = 'load_balancer' then coalesce(load_balancer_cost, 0) else 0 end"),
]) }}
