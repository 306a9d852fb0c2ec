-- grain: one row per (usage_date, cluster, namespace, controller_kind, controller) batch workload (Job, CronJob)
-- whose runs would emit at least min_saving_co2e_g_per_month less in a greener hour.
-- Per day of the window: the workload ran L hours (its running time, rounded) in its main carbon zone; the
-- lowest-intensity contiguous L-hour window of that zone on that day (from the landed hourly intensities of the
-- nodes there) would emit (its energy x PUE) x (the window's mean intensity). Saving = actual operational
-- CO2e - that; energy and embodied carbon do not change. Monthly = mean daily saving x 730 / 24; the typical
-- start = the most frequent best start hour.
with days as (
    {{ rec_build_days() }}
),

zone_hours as (
    select carbon_zone, hour_ts, avg(carbon_intensity_g_per_kwh) as intensity
    from {{ ref('int_node_hours_recorded') }}
    where carbon_zone is not null
    group by carbon_zone, hour_ts
),

runs_hourly as (
    select cluster, namespace, controller_kind, controller, usage_date as run_date, hour_ts, carbon_zone,
           max(run_h) as run_h, sum(energy_kwh * pue) as energy_pue_kwh, sum(co2e_operational_g) as co2e_g,
           {{ rec_flags_any() }}
    from {{ ref('int_workload_hours_recorded') }}
    where controller_kind in ('Job', 'CronJob') and run_h > 0
    group by cluster, namespace, controller_kind, controller, usage_date, hour_ts, carbon_zone
),

zone_rank as (
    select cluster, namespace, controller_kind, controller, run_date, carbon_zone,
           row_number() over (partition by cluster, namespace, controller_kind, controller, run_date
                              order by sum(energy_pue_kwh) desc, carbon_zone) as pick
    from runs_hourly
    group by cluster, namespace, controller_kind, controller, run_date, carbon_zone
),

runs_daily as (
    select
        r.cluster, r.namespace, r.controller_kind, r.controller, r.run_date, zone_rank.carbon_zone,
        -- L: the day's running time in whole hours (parallel pods counted once), at least 1
        cast(greatest(round(sum(r.run_h)), 1) as integer) as hours_run,
        sum(r.energy_pue_kwh) as energy_pue_kwh,
        sum(r.co2e_g) as co2e_g,
        {{ rec_flags_any('r') }}
    from runs_hourly as r
    join zone_rank
        on zone_rank.cluster = r.cluster and zone_rank.namespace = r.namespace
        and zone_rank.controller_kind = r.controller_kind and zone_rank.controller = r.controller
        and zone_rank.run_date = r.run_date and zone_rank.pick = 1
    group by r.cluster, r.namespace, r.controller_kind, r.controller, r.run_date, zone_rank.carbon_zone
),

windows as (
    -- every L-hour window of the day in that zone with an intensity in each of its hours
    select
        runs_daily.cluster, runs_daily.namespace, runs_daily.controller_kind, runs_daily.controller,
        runs_daily.run_date, starts.hour_ts as start_ts, avg(inside.intensity) as mean_intensity
    from runs_daily
    join zone_hours as starts
        on starts.carbon_zone = runs_daily.carbon_zone and cast(starts.hour_ts as date) = runs_daily.run_date
    join zone_hours as inside
        on inside.carbon_zone = starts.carbon_zone and inside.hour_ts >= starts.hour_ts
        and inside.hour_ts < {{ dbt.dateadd('hour', 'runs_daily.hours_run', 'starts.hour_ts') }}
        and cast(inside.hour_ts as date) = runs_daily.run_date
    group by runs_daily.cluster, runs_daily.namespace, runs_daily.controller_kind, runs_daily.controller,
             runs_daily.run_date, starts.hour_ts, runs_daily.hours_run
    having count(*) = runs_daily.hours_run
),

best as (
    select *, row_number() over (partition by cluster, namespace, controller_kind, controller, run_date
                                 order by mean_intensity, start_ts) as pick
    from windows
),

shifted_daily as (
    select
        runs_daily.*,
        best.mean_intensity as best_mean_intensity,
        best.start_ts as best_start_ts,
        runs_daily.co2e_g - runs_daily.energy_pue_kwh * best.mean_intensity as saving_co2e_g
    from runs_daily
    join best
        on best.cluster = runs_daily.cluster and best.namespace = runs_daily.namespace
        and best.controller_kind = runs_daily.controller_kind and best.controller = runs_daily.controller
        and best.run_date = runs_daily.run_date and best.pick = 1
),

in_window as (
    select days.usage_date, s.*, {{ seconds_between('cast(s.run_date as timestamp)', 's.best_start_ts') }} / 3600
        as best_start_hour
    from days
    join shifted_daily as s
        on
            s.cluster = days.cluster
            and s.run_date >= cast(days.window_start_ts as date)
            and s.run_date <= days.usage_date
),

start_mode as (
    select usage_date, cluster, namespace, controller_kind, controller, best_start_hour,
           row_number() over (partition by usage_date, cluster, namespace, controller_kind, controller
                              order by count(*) desc, best_start_hour) as pick
    from in_window
    group by usage_date, cluster, namespace, controller_kind, controller, best_start_hour
),

summed as (
    select
        w.usage_date, w.cluster, w.namespace, w.controller_kind, w.controller,
        max(w.carbon_zone) as carbon_zone,
        count(*) as days_of_data,
        sum(w.hours_run) as hours_covered,
        avg(w.hours_run) as hours_per_day,
        {{ rec_per_month('avg(w.saving_co2e_g)', 24) }} as saving_co2e_g_per_month,
        sum(w.co2e_g) / nullif(sum(w.energy_pue_kwh), 0) as actual_mean_intensity,
        sum(w.energy_pue_kwh * w.best_mean_intensity) / nullif(sum(w.energy_pue_kwh), 0) as best_mean_intensity,
        cast(max(start_mode.best_start_hour) as integer) as typical_best_start_hour,
        {{ rec_reasons_agg() }} as estimation_reasons
    from in_window as w
    join start_mode
        on start_mode.usage_date = w.usage_date and start_mode.cluster = w.cluster
        and start_mode.namespace = w.namespace and start_mode.controller_kind = w.controller_kind
        and start_mode.controller = w.controller and start_mode.pick = 1
    group by w.usage_date, w.cluster, w.namespace, w.controller_kind, w.controller
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('carbon_shift_time', 'namespace', 'controller_kind', 'controller',
        'cast(null as string)', "namespace || '/' || lower(controller_kind) || '/' || controller",
        "'Run it at ' || lpad(" ~ rec_int_text('typical_best_start_hour') ~ ", 2, '0') || ':00 UTC in '
         || carbon_zone || ', the lowest-carbon ' || " ~ rec_int_text('hours_per_day') ~ " || '-hour window of the day'",
        [('carbon_zone', 'carbon_zone'), ('typical_best_start_hour', 'typical_best_start_hour'),
         ('hours_per_day', 'hours_per_day'), ('actual_mean_intensity_g_per_kwh', 'actual_mean_intensity'),
         ('best_mean_intensity_g_per_kwh', 'best_mean_intensity'),
         ('basis', "'estimate: the same energy in the greenest contiguous window of the same length, same zone and day'")],
        confidence_hours_col='days_of_data * 24') }},
    {{ rec_closing_columns(saves_money=false) }}
from summed
where saving_co2e_g_per_month >= {{ rec_param('min_saving_co2e_g_per_month') }}
