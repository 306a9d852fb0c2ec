-- grain: as marts.fct_allocation_daily (one row per allocation row identity and day), with the configured default
-- sharing policy applied (kubeledger.yaml `sharing`): idle shared per resource, shared namespaces / labels and the
-- monthly overhead spread over the remaining rows of the same cluster and day (share scope 'cluster': re-building
-- one cluster never changes another cluster's rows; the overhead is per cluster). The algorithm is the single
-- implementation in macros/allocation_sharing.sql, also used by the allocation API with per-request options; the
-- policy -> options mapping is its sharing_policy_options, the columns are macros/allocation_columns.sql.
{%- set options = fromjson(sharing_policy_options(var('sharing'))) %}
{%- do options.update({'split_idle': 'row', 'include_idle': true, 'share_scope': 'cluster'}) %}
{{ config(unique_key=['usage_date', 'cluster']) }}

with allocations as (
    select * from {{ ref('fct_allocation_daily') }}
    where {{ window_filter('cast(usage_date as timestamp)', 'cluster') }}
),

shared as (
    {{ share_allocations(
        'allocations',
        key_expr="cluster || '/' || coalesce(node, '') || '/' || coalesce(namespace, '') || '/' || pod_uid || '/' || container",
        step_col='usage_date',
        options=options,
        columns=allocation_columns()) }}
)

select {{ allocation_column_names() | join(', ') }}
from shared
where cluster is not null
