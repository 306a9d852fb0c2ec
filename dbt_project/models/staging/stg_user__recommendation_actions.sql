-- grain: one row per recommendation_id
-- The decisions recorded with `kubeledger recommend --dismiss/--applied` (raw.recommendation_actions). A warehouse
-- made before the table existed has none until the CLI or a run opens it for writing: read as no decision.
{%- set actions = source('user', 'recommendation_actions') %}
{%- set present = (load_relation(actions) is not none) if execute else true %}

with source as (
    {% if present -%}
    select * from {{ actions }}
    {%- else -%}
    select
        cast(null as string) as recommendation_id,
        cast(null as string) as cluster,
        cast(null as string) as kind,
        cast(null as string) as status,
        cast(null as string) as reason,
        cast(null as date) as applied_date,
        cast(null as timestamp) as _extracted_at
    where false
    {%- endif %}
),

ranked as (
    select
        recommendation_id,
        cluster,
        kind,
        status,
        reason,
        applied_date,
        _extracted_at as recorded_at,
        row_number() over (partition by recommendation_id order by _extracted_at desc) as pick
    from source
    where status in ('dismissed', 'applied')
)

select recommendation_id, cluster, kind, status, reason, applied_date, recorded_at
from ranked
where pick = 1
