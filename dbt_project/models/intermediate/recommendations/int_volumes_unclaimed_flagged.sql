-- grain: one row per (usage_date, cluster, pv) no pod mounted during the whole look-back window
-- Unclaimed (no PVC, e.g. Released with reclaim policy Retain) or claimed but never mounted. The saving is the
-- volume's cost and storage energy per hour it existed x 730; CO2e at the cluster's energy-weighted intensity x PUE.
with days as (
    {{ rec_build_days() }}
),

cluster_intensity as (
    {{ rec_cluster_intensity() }}
),

volumes as (
    select
        {{ rec_volume_window_columns() }},
        bool_or(v.is_mounted) as was_mounted
    from days
    {{ rec_window_join(ref('int_volume_hours_recorded'), 'v') }}
    group by days.usage_date, v.cluster, v.pv
),

flagged as (
    select
        volumes.*,
        volumes.cost_usd_per_month as saving_usd_per_month,
        volumes.energy_kwh_per_month as saving_kwh_per_month,
        {{ rec_volume_co2e_and_reasons('volumes.energy_kwh_per_month', 'volumes') }}
    from volumes
    left join cluster_intensity
        on cluster_intensity.usage_date = volumes.usage_date and cluster_intensity.cluster = volumes.cluster
    where not volumes.was_mounted
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('unclaimed_volume', 'namespace', 'cast(null as string)', 'cast(null as string)',
        'cast(null as string)', "coalesce(namespace || '/' || pvc, pv)",
        "case when pvc is null then 'Delete unclaimed volume ' || pv
              else 'Delete claim ' || namespace || '/' || pvc || ' (volume ' || pv || '): no pod mounted it' end",
        [('pv', 'pv'), ('pvc', 'pvc'), ('unclaimed', 'pvc is null')]) }},
    {{ rec_closing_columns() }}
from flagged
