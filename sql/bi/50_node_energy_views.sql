-- Node energy and carbon per day.
create or replace view bi.node_energy_daily as
select * from marts.fct_node_energy_daily;

comment on view bi.node_energy_daily is 'Energy and CO2e per (usage_date, cluster, node): power profile, carbon zone, intensity and PUE with their sources, and flags (marts.fct_node_energy_daily).';
