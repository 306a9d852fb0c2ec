-- Writer: pipelines/sources/boavizta.py (Boavizta API /v1/cloud/instance, or the bundled 2.5.0 table for the demo).
-- A cache keyed by (provider, instance_type): fetched once, replaced on refresh.
-- grain: one row per (provider, instance_type)
create table if not exists raw.boavizta_impacts (
    provider                varchar   not null,   -- aws | gcp | azure | scaleway | ovhcloud
    instance_type           varchar   not null,
    status                  varchar   not null,   -- 'ok' | 'not_found'
    embedded_kg_per_hour    double,               -- embedded gwp kgCO2e for duration=1 h
    lifetime_hours          double,               -- hours_life_time (52,560 in 2.5.0)
    vcpu                    double,
    memory_gb               double,
    avg_power_w             double,
    warnings                varchar,
    api_version             varchar,
    _source                 varchar   not null,   -- 'boavizta-api' | 'bundled'
    _extracted_at           timestamp not null
);
