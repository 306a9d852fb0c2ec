-- Writer: pipelines/recommend_actions.py (`kubeledger recommend --dismiss/--applied/--undismiss`), one transaction.
-- User state, not landed from a source: what people decided about recommendations. dbt reads it
-- (stg_user__recommendation_actions): a dismissed recommendation is left out of the day's counted total, an applied
-- one gets its realised saving (fct_recommendation_outcome_daily). The latest decision per id is the row.
-- grain: one row per recommendation_id
create table if not exists raw.recommendation_actions (
    recommendation_id varchar   not null,   -- as in marts.fct_recommendation_daily (kind:cluster/target)
    cluster           varchar   not null,   -- the recommendation's cluster (copied from the mart when recorded)
    kind              varchar   not null,   -- the recommendation's kind (copied from the mart when recorded)
    status            varchar   not null,   -- 'dismissed' | 'applied'
    reason            varchar,              -- why it was dismissed (required then); NULL when applied
    applied_date      date,                 -- the UTC day the change went live (applied only)
    _extracted_at     timestamp not null    -- when the decision was recorded (UTC)
);
