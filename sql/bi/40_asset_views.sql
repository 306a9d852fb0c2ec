-- Asset costs per day: nodes, volumes, load balancers, overhead.
create or replace view bi.asset_daily as
select * from marts.fct_asset_daily;

comment on view bi.asset_daily is 'Asset costs per (usage_date, cluster, asset_kind, asset_name): nodes, volumes, load balancers and overhead, cost by resource, hours and price source (marts.fct_asset_daily). Σ total_cost of asset_kind <> ''overhead'' = bi.cluster_daily.asset_cost.';
