-- grain: one row per (cluster, snapshot_hour_ts, kind, uid): every landed Kubernetes API snapshot, not only the
-- latest. Not window-filtered on purpose: a fallback for past hours picks the snapshot nearest to the hour, which
-- may be one taken after the window (e.g. a backfill of days before kubeledger snapshotted the cluster).
-- stg_kubernetes__objects is the latest of these up to the window's end.
with source as (
    select * from {{ source('kubernetes', 'k8s_objects') }}
    where 1 = 1
    {%- if var('cluster', none) %} and cluster = {{ sql_string(var('cluster')) }}{% endif %}
),

renamed as (
    select
        cluster,
        hour_ts as snapshot_hour_ts,
        kind,
        {%- for column in kubernetes_object_columns() %}
        {{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    from source
)

select * from renamed
