{{ config(meta={'dagster': {'ref': {'name': 'fct_recommendation_daily'}}}) }}
-- The counting of the recommendations (int_recommendations_counted, docs/METHOD.md "Counting savings once"), on the
-- days the build wrote. Returns the failing rows:
--   * a negative counted or risk-fix amount;
--   * a superseded or dismissed (`kubeledger recommend --dismiss`) row that still counts;
--   * a row neither superseded nor a node pool nor spot pricing whose counted minus risk-fix amounts is not its
--     standalone saving (within the float tolerance): splitting by sign loses or invents nothing;
--   * a node pool or a spot_eligible row (counted on what the earlier stages leave) counting more than its
--     standalone saving.
{%- set quantities = ['usd', 'kwh', 'co2e_g'] %}
with recs as (
    select * from {{ ref('fct_recommendation_daily') }}
    where {{ built_days_filter() }}
)

{% for q in quantities %}
select usage_date, cluster, recommendation_id, 'negative {{ q }}' as failure
from recs
where counted_{{ q }}_per_month < 0 or risk_fix_{{ q }}_per_month < 0
union all
select usage_date, cluster, recommendation_id, 'superseded but counted {{ q }}' as failure
from recs
where superseded_by is not null and (counted_{{ q }}_per_month <> 0 or risk_fix_{{ q }}_per_month <> 0)
union all
select usage_date, cluster, recommendation_id, 'dismissed but counted {{ q }}' as failure
from recs
where status = 'dismissed' and (counted_{{ q }}_per_month <> 0 or risk_fix_{{ q }}_per_month <> 0)
union all
select usage_date, cluster, recommendation_id, 'parts do not add up to the saving ({{ q }})' as failure
from recs
where superseded_by is null and kind not in ('idle_node_pool', 'spot_eligible')
    and coalesce(status, 'open') <> 'dismissed'
    and {{ floats_differ('counted_' ~ q ~ '_per_month - risk_fix_' ~ q ~ '_per_month',
                         'greatest(saving_' ~ q ~ '_per_month, 0) + least(saving_' ~ q ~ '_per_month, 0)'
                         ~ (' * case when kind = \'container_rightsizing\' then 1 else 0 end'), abs_tol=1e-9) }}
union all
select usage_date, cluster, recommendation_id, 'pool or spot counts more than it saves ({{ q }})' as failure
from recs
where kind in ('idle_node_pool', 'spot_eligible')
    and counted_{{ q }}_per_month > greatest(saving_{{ q }}_per_month, 0) + 1e-9
{% if not loop.last %}union all{% endif %}
{% endfor %}
