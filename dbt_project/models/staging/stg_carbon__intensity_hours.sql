-- grain: one row per (zone, hour_ts) of the configured provider
with source as (
    select * from {{ source('carbon', 'carbon_intensity_hours') }}
    where provider = {{ sql_string(var('carbon_provider')) }}
      and {{ window_filter('hour_ts', none) }}
),

renamed as (
    select
        provider as intensity_provider,
        zone,
        hour_ts,
        carbon_intensity_g_per_kwh,
        coalesce(is_estimated, false) as is_provider_estimated,
        estimation_method,
        emission_factor_type,
        coalesce(coverage, 1.0) as coverage
    from source
    where carbon_intensity_g_per_kwh is not null
)

select * from renamed
