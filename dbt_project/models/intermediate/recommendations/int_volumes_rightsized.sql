-- grain: one row per (usage_date, cluster, pv) whose claim's peak use over the look-back window, with headroom, fits
-- a volume smaller by more than min_change_ratio
-- Used bytes: the kubelet's volume stats of the mounted claim (kubelet_volume_stats_used_bytes, the hour's maximum).
-- Recommended size = max(ceil(peak used x volume_headroom) in whole GiB, 1 GiB), against the size the volume is
-- priced on (PV capacity, else the claim's request). The saving is the volume's cost and storage energy per hour it
-- existed x 730 x (1 - recommended / size); CO2e at the cluster's energy-weighted intensity x PUE, as for
-- unclaimed_volume. Confidence counts the hours with stats only.
{%- set gib = '1073741824.0' %}

with days as (
    {{ rec_build_days() }}
),

cluster_intensity as (
    {{ rec_cluster_intensity() }}
),

volumes as (
    select
        {{ rec_volume_window_columns() }},
        count(distinct case when v.used_max_bytes is not null then v.hour_ts end) as hours_with_stats,
        max(v.capacity_bytes) as capacity_bytes,
        max(v.used_max_bytes) as peak_used_bytes,
        max(v.filesystem_bytes) as filesystem_bytes
    from days
    {{ rec_window_join(ref('int_volume_hours_recorded'), 'v') }}
    where v.pvc is not null
    group by days.usage_date, v.cluster, v.pv
),

sized as (
    select
        volumes.*,
        greatest(ceil(volumes.peak_used_bytes * {{ rec_param('volume_headroom') }} / {{ gib }} - 1e-9), 1) * {{ gib }}
            as recommended_bytes
    from volumes
    where volumes.peak_used_bytes is not null and volumes.capacity_bytes > 0
),

flagged as (
    select
        sized.*,
        sized.cost_usd_per_month * (1 - sized.recommended_bytes / sized.capacity_bytes) as saving_usd_per_month,
        sized.energy_kwh_per_month * (1 - sized.recommended_bytes / sized.capacity_bytes) as saving_kwh_per_month,
        {{ rec_volume_co2e_and_reasons(
            'sized.energy_kwh_per_month * (1 - sized.recommended_bytes / sized.capacity_bytes)', 'sized') }}
    from sized
    left join cluster_intensity
        on cluster_intensity.usage_date = sized.usage_date and cluster_intensity.cluster = sized.cluster
    where sized.recommended_bytes < sized.capacity_bytes * (1 - {{ rec_param('min_change_ratio') }})
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('volume_rightsizing', 'namespace', 'cast(null as string)', 'cast(null as string)',
        'cast(null as string)', "namespace || '/' || pvc",
        "'Shrink claim ' || namespace || '/' || pvc || ' (volume ' || pv || ') from ' || "
            ~ rec_quantity_text('capacity_bytes / ' ~ gib) ~ " || ' GiB to ' || "
            ~ rec_quantity_text('recommended_bytes / ' ~ gib) ~ " || ' GiB: at most ' || "
            ~ rec_quantity_text('peak_used_bytes / ' ~ gib)
            ~ " || ' GiB used in the window (a new volume and a copy: most CSI drivers grow a volume but cannot "
            ~ "shrink it)'",
        [('pv', 'pv'), ('pvc', 'pvc'), ('capacity_bytes', 'capacity_bytes'),
         ('filesystem_bytes', 'filesystem_bytes'), ('peak_used_bytes', 'peak_used_bytes'),
         ('recommended_bytes', 'recommended_bytes'), ('volume_headroom', rec_param('volume_headroom')),
         ('hours_with_stats', 'hours_with_stats')],
        confidence_hours_col='hours_with_stats') }},
    {{ rec_closing_columns() }}
from flagged
