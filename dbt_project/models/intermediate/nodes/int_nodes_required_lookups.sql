-- grain: one row per (lookup_kind, provider, lookup_key)
-- What the window's nodes need from outside sources, read by the Python extracts that run between the dbt steps:
-- the carbon zones to fetch hourly intensity for, and the (provider, Boavizta instance key) pairs to fetch
-- embodied impacts for. Derived from the enriched nodes only, so provider, region and zone rules live in one model.
with nodes as (
    select * from {{ ref('int_nodes_enriched_hourly') }}
),

carbon_zones as (
    select distinct
        'carbon_zone' as lookup_kind,
        cast(null as string) as provider,
        carbon_zone as lookup_key
    from nodes
    where carbon_zone is not null
),

boavizta_instances as (
    -- on-premises nodes have no cloud instance type Boavizta could know
    select distinct
        'boavizta_instance' as lookup_kind,
        provider,
        {{ boavizta_instance_key('provider', 'instance_type') }} as lookup_key
    from nodes
    where instance_type is not null and instance_type <> '' and provider <> 'onprem'
),

final as (
    select * from carbon_zones
    union all
    select * from boavizta_instances
)

select * from final
