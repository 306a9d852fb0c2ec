-- Writer: pipelines/sources/carbon/ (Electricity Maps, Wattnet, or the demo curve; providers.py lists them).
-- Replaced per (provider, zone, hour_ts); a cache: re-runs do not re-fetch hours already landed.
-- grain: one row per (provider, zone, hour_ts)
create table if not exists raw.carbon_intensity_hours (
    provider                    varchar   not null,   -- 'electricitymaps' | 'wattnet' | 'demo'
    zone                        varchar   not null,   -- Electricity Maps zone code (Wattnet ids are mapped)
    hour_ts                     timestamp not null,   -- hour start, UTC
    carbon_intensity_g_per_kwh  double,               -- NULL = provider had no value (never 0)
    is_estimated                boolean,              -- provider's own isEstimated
    estimation_method           varchar,
    emission_factor_type        varchar,              -- 'lifecycle' | 'direct'
    coverage                    double,               -- share of the hour covered by provider samples (Wattnet quarters)
    _extracted_at               timestamp not null
);
