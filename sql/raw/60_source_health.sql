-- Writer: pipelines/warehouse/source_health.py (called by every extract asset after its source answered or failed).
-- The ledger of what each enrichment source gave a day: 'ok', or 'degraded' with the failure, what it affected and
-- what to do. `kubeledger status`, the CLI's summary and /healthz (through the serving copy) read it.
-- Replaced per (source, scope): the latest attempt at a day is the truth for that day.
-- grain: one row per (source, scope, cluster, failure)
create table if not exists raw.source_health (
    source          varchar   not null,   -- 'metrics' (Prometheus) | 'kubernetes' | 'carbon' | 'boavizta' | 'pricing' | 'billing'
    scope           varchar   not null,   -- the day (YYYY-MM-DD) the attempt was for; 'current' for price files
    cluster         varchar   not null,   -- '' when the source is not per cluster (carbon, Boavizta, prices)
    status          varchar   not null,   -- 'ok' | 'degraded'
    failure         varchar   not null,   -- '' when ok; else a kind: connection_refused, timeout, http_503, ...
    message         varchar   not null,   -- one line: what failed and what the day used instead
    hint            varchar   not null,   -- one line: what to do
    affected        varchar   not null,   -- JSON list of what the failure touched (zones, instance types, files)
    _extracted_at   timestamp not null
);
