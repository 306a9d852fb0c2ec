-- grain: one row per (provider, instance_type_key) with a usable embodied value
with source as (
    select * from {{ source('boavizta', 'boavizta_impacts') }}
),

renamed as (
    select
        lower(provider) as provider,
        lower(instance_type) as instance_type_key,
        embedded_kg_per_hour,
        lifetime_hours,
        vcpu,
        memory_gb,
        avg_power_w,
        _source as boavizta_source
    from source
    where status = 'ok' and embedded_kg_per_hour is not null and embedded_kg_per_hour > 0
)

select * from renamed
