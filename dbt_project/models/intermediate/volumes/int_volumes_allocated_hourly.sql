-- grain: one row per (cluster, hour_ts, pv, pod_uid); pod_uid = '__unmounted__' for the part no pod used
-- PV asset cost = capacity x price x active hours; pods pay PVC request x price x active hours x coef, where coef
-- splits each sub-interval of the claim's active time among the pods mounting it concurrently (METHOD A7).
with volumes as (
    select * from {{ ref('stg_metrics__volume_hours') }}
    where active_h > 0
),

mounts as (
    select * from {{ ref('stg_metrics__pod_volume_hours') }}
),

pod_intervals as (
    -- a pod's running interval in the hour, from the same raw samples as its running minutes
    select
        cluster,
        hour_ts,
        pod_uid,
        min(coalesce(run_start_s, 0)) as start_s,
        max(coalesce(run_end_s, run_start_s + run_h * 3600, run_h * 3600)) as end_s
    from {{ ref('stg_metrics__container_hours') }}
    where run_h > 0
    group by cluster, hour_ts, pod_uid
),

prices as (
    select * from {{ ref('int_volumes_priced_hourly') }}
),

media as (
    select lower(storage_class_or_type) as storage_class, media from {{ ref('storage_class_media') }}
),

priced as (
    select
        volumes.*,
        prices.provider,
        prices.price_gib_hour_usd,
        prices.price_source,
        coalesce(media.media, 'ssd') as media,
        media.media is null as is_media_unknown,
        volumes.active_h * 3600.0 as active_s
    from volumes
    join prices on prices.cluster = volumes.cluster and prices.hour_ts = volumes.hour_ts and prices.pv = volumes.pv
    left join media on media.storage_class = lower(volumes.storage_class)
),

mounted_pods as (
    select
        priced.cluster,
        priced.hour_ts,
        priced.pv,
        mounts.pod_uid,
        pod_intervals.start_s as pod_start_s,
        pod_intervals.end_s as pod_end_s
    from priced
    join mounts
        on mounts.cluster = priced.cluster and mounts.hour_ts = priced.hour_ts
        and mounts.namespace = priced.namespace and mounts.pvc = priced.pvc
    join pod_intervals
        on pod_intervals.cluster = mounts.cluster and pod_intervals.hour_ts = mounts.hour_ts
        and pod_intervals.pod_uid = mounts.pod_uid
),

claim_windows as (
    -- the claim's active span: the whole hour when active all hour; otherwise anchored at the first mount
    select
        priced.cluster,
        priced.hour_ts,
        priced.pv,
        priced.active_s,
        case when priced.active_s >= 3600 then 0.0
             else least(coalesce(min(mounted_pods.pod_start_s), 0), 3600 - priced.active_s) end as claim_start_s
    from priced
    left join mounted_pods
        on mounted_pods.cluster = priced.cluster and mounted_pods.hour_ts = priced.hour_ts
        and mounted_pods.pv = priced.pv
    group by priced.cluster, priced.hour_ts, priced.pv, priced.active_s
),

clipped_pods as (
    select
        mounted_pods.cluster,
        mounted_pods.hour_ts,
        mounted_pods.pv,
        mounted_pods.pod_uid,
        greatest(mounted_pods.pod_start_s, claim_windows.claim_start_s) as start_s,
        least(mounted_pods.pod_end_s, claim_windows.claim_start_s + claim_windows.active_s) as end_s
    from mounted_pods
    join claim_windows
        on claim_windows.cluster = mounted_pods.cluster and claim_windows.hour_ts = mounted_pods.hour_ts
        and claim_windows.pv = mounted_pods.pv
),

breakpoints as (
    select cluster, hour_ts, pv, start_s as point_s
    from clipped_pods
    where end_s > start_s
    union
    select cluster, hour_ts, pv, end_s
    from clipped_pods
    where end_s > start_s
),

segments as (
    select
        cluster,
        hour_ts,
        pv,
        point_s as seg_start_s,
        lead(point_s) over (partition by cluster, hour_ts, pv order by point_s) as seg_end_s
    from breakpoints
),

covered as (
    select
        segments.cluster,
        segments.hour_ts,
        segments.pv,
        segments.seg_start_s,
        segments.seg_end_s,
        clipped_pods.pod_uid,
        count(*) over (partition by segments.cluster, segments.hour_ts, segments.pv, segments.seg_start_s)
            as concurrent_pods
    from segments
    join clipped_pods
        on clipped_pods.cluster = segments.cluster and clipped_pods.hour_ts = segments.hour_ts
        and clipped_pods.pv = segments.pv
        and clipped_pods.start_s <= segments.seg_start_s and clipped_pods.end_s >= segments.seg_end_s
    where segments.seg_end_s is not null and segments.seg_end_s > segments.seg_start_s
),

coefficients as (
    select
        covered.cluster,
        covered.hour_ts,
        covered.pv,
        covered.pod_uid,
        sum((covered.seg_end_s - covered.seg_start_s) / claim_windows.active_s / covered.concurrent_pods) as coef
    from covered
    join claim_windows
        on claim_windows.cluster = covered.cluster and claim_windows.hour_ts = covered.hour_ts
        and claim_windows.pv = covered.pv
    group by covered.cluster, covered.hour_ts, covered.pv, covered.pod_uid
),

pod_shares as (
    select
        priced.cluster,
        priced.hour_ts,
        priced.pv,
        priced.namespace,
        priced.pvc,
        coefficients.pod_uid,
        coefficients.coef,
        coalesce(priced.pvc_request_bytes, priced.pv_capacity_bytes) * priced.active_h * coefficients.coef
            as pv_byte_hours,
        priced.price_gib_hour_usd * coalesce(priced.pvc_request_bytes, priced.pv_capacity_bytes) / 1073741824.0
            * priced.active_h * coefficients.coef as pv_cost
    from priced
    join coefficients
        on coefficients.cluster = priced.cluster and coefficients.hour_ts = priced.hour_ts
        and coefficients.pv = priced.pv
),

asset as (
    select
        priced.*,
        coalesce(priced.pv_capacity_bytes, priced.pvc_request_bytes) * priced.active_h as asset_byte_hours,
        priced.price_gib_hour_usd * coalesce(priced.pv_capacity_bytes, priced.pvc_request_bytes) / 1073741824.0
            * priced.active_h as asset_cost,
        {% if var('energy_storage') -%}
        -- CCF: SSD 1.2 / HDD 0.65 Wh per TB-hour x replication factor
        coalesce(priced.pv_capacity_bytes, priced.pvc_request_bytes) / 1.0e12 * priced.active_h
            * case when priced.media = 'hdd' then 0.65 else 1.2 end
            * case priced.provider when 'aws' then 2 when 'gcp' then 2 when 'azure' then 3 else 1 end / 1000.0
        {%- else %}cast(0 as double){% endif %} as asset_energy_kwh
    from priced
),

pod_totals as (
    select cluster, hour_ts, pv, sum(pv_cost) as pv_cost, sum(pv_byte_hours) as pv_byte_hours, sum(coef) as coef
    from pod_shares
    group by cluster, hour_ts, pv
),

final as (
    select
        pod_shares.cluster,
        pod_shares.hour_ts,
        pod_shares.pv,
        pod_shares.namespace,
        pod_shares.pvc,
        pod_shares.pod_uid,
        pod_shares.coef,
        pod_shares.pv_byte_hours,
        pod_shares.pv_cost,
        asset.asset_energy_kwh * pod_shares.coef as energy_storage_kwh,
        asset.price_source,
        asset.is_media_unknown
    from pod_shares
    join asset on asset.cluster = pod_shares.cluster and asset.hour_ts = pod_shares.hour_ts and asset.pv = pod_shares.pv
    union all
    -- what no pod paid for: unmounted time and capacity above the claim's request
    select
        asset.cluster,
        asset.hour_ts,
        asset.pv,
        asset.namespace,
        asset.pvc,
        '__unmounted__' as pod_uid,
        1 - coalesce(pod_totals.coef, 0) as coef,
        asset.asset_byte_hours - coalesce(pod_totals.pv_byte_hours, 0) as pv_byte_hours,
        asset.asset_cost - coalesce(pod_totals.pv_cost, 0) as pv_cost,
        asset.asset_energy_kwh * (1 - coalesce(pod_totals.coef, 0)) as energy_storage_kwh,
        asset.price_source,
        asset.is_media_unknown
    from asset
    left join pod_totals on pod_totals.cluster = asset.cluster and pod_totals.hour_ts = asset.hour_ts
        and pod_totals.pv = asset.pv
    where asset.asset_cost - coalesce(pod_totals.pv_cost, 0) > 1e-12
        or asset.asset_byte_hours - coalesce(pod_totals.pv_byte_hours, 0) > 1e-6
)

select * from final
