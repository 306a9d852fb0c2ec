{#- the Dagster asset check's asset (the test refs several models) #}
{{ config(meta={'dagster': {'ref': {'name': 'fct_allocation_daily'}}}) }}
-- The days the build wrote only (built_days_filter, macros/windows.sql): in a backfill other days may be mid-build.
-- The cloud bill's reconciliation (issue 28, intermediate/billing/_billing__models.yml) carries each node's
-- adjustment to its allocation rows whole: per cluster and day, Σ (cpu + ram + gpu)_cost_adjustment over the
-- allocation rows (workloads + idle) = Σ of the node assets'; Σ pv_cost_adjustment over the rows = Σ of the volume
-- assets that have a list cost to spread it over, and Σ load_balancer_cost_adjustment = Σ of such load balancer
-- assets. Within 1e-9 relative (floats_differ). Returns what does not.
{{ allocation_sums_match_assets([
    ('node', 'cpu_cost_adjustment + ram_cost_adjustment + gpu_cost_adjustment',
     "case when asset_kind = 'node' then cpu_cost_adjustment + ram_cost_adjustment + gpu_cost_adjustment else 0 end"),
    ('pv', 'pv_cost_adjustment',
     "case when asset_kind = 'volume' and pv_cost > 0 then pv_cost_adjustment else 0 end"),
    ('load_balancer', 'load_balancer_cost_adjustment',
     "case when asset_kind = 'load_balancer' and load_balancer_cost > 0 then load_balancer_cost_adjustment else 0 end"),
]) }}
