-- The landing schema. One writer per source; every table carries `_extracted_at`.
-- Hourly tables carry `cluster` and `hour_ts` (hour start, UTC, naive TIMESTAMP) and are
-- replaced per (cluster, hour_ts) inside one transaction (pipelines/warehouse/landing.py).
create schema if not exists raw;
