-- grain: one row per (usage_date, cluster, namespace, controller_kind, controller) Deployment that could run fewer
-- replicas in a block of hours that is quiet on every day of the look-back window (e.g. nights).
-- Requests are the rightsized ones where int_container_requests_rightsized changes them (this acts after it). Per
-- hour: needed = max(ceil(summed CPU peaks x off_peak_headroom / CPU request per replica), the same for memory, 1);
-- an hour of the day is quiet when needed < replicas in that hour on every day of the window. The block: the
-- longest contiguous run of quiet hours (across midnight too), at least off_peak_min_hours, scaled to N = the
-- block's largest need. Saving = the dropped replicas' share (replicas - N) / replicas of the hour's allocation
-- cost, memory energy and CO2e (its operational memory part and embodied share: the usage energy moves to the
-- replicas that stay) at those requests; monthly = per window day x 730 / 24.
with days as (
    {{ rec_build_days() }}
),

sized as (
    select
        usage_date, cluster, namespace, controller_kind, controller, container, recommendation_id,
        recommended_cpu_request_cores, recommended_ram_request_bytes
    from {{ ref('int_container_requests_rightsized') }}
),

samples as (
    select
        days.usage_date, h.cluster, h.namespace, h.controller_kind, h.controller, h.container, h.hour_ts, h.run_h,
        h.cpu_usage_max_cores, h.ram_usage_max_bytes, h.cpu_usage_core_hours, h.ram_usage_byte_hours,
        h.cpu_core_hours, h.ram_byte_hours, h.cpu_price_usd, h.ram_price_usd, h.gpu_cost, h.energy_memory_kwh,
        h.carbon_intensity_g_per_kwh, h.pue, h.co2e_embodied_g, h.is_usage_missing,
        {%- for col, code in rec_input_flags() %}
        h.{{ col }},
        {%- endfor %}
        sized.recommendation_id as rightsized_by,
        coalesce(sized.recommended_cpu_request_cores, h.cpu_request_cores) as cpu_request_cores,
        coalesce(sized.recommended_ram_request_bytes, h.ram_request_bytes) as ram_request_bytes
    from days
    {{ rec_window_join(ref('int_workload_hours_recorded'), 'h') }}
    left join sized
        on sized.usage_date = days.usage_date and sized.cluster = h.cluster and sized.namespace = h.namespace
        and sized.controller_kind = h.controller_kind and sized.controller = h.controller
        and sized.container = h.container
    where h.controller_kind = 'Deployment'
),

reallocated as (
    -- each container hour re-allocated at those requests (allocation = max(request, usage), A2)
    select
        *,
        greatest(cpu_request_cores * run_h, cpu_usage_core_hours) as new_cpu_core_hours,
        greatest(ram_request_bytes * run_h, ram_usage_byte_hours) as new_ram_byte_hours
    from samples
),

hourly as (
    select
        usage_date, cluster, namespace, controller_kind, controller, hour_ts,
        extract(hour from hour_ts) as hour_of_day,
        -- replica-hours: the containers' running hours over the number of containers a replica has
        sum(run_h) / count(distinct container) as pod_hours,
        sum(cpu_usage_max_cores) as cpu_peak_cores,
        sum(ram_usage_max_bytes) as ram_peak_bytes,
        sum(cpu_request_cores * run_h) as cpu_request_core_hours,
        sum(ram_request_bytes * run_h) as ram_request_byte_hours,
        sum(new_cpu_core_hours * cpu_price_usd + new_ram_byte_hours / 1073741824.0 * ram_price_usd + gpu_cost)
            as cost,
        sum({{ safe_divide('energy_memory_kwh * new_ram_byte_hours', 'ram_byte_hours') }}) as energy_kwh,
        sum({{ safe_divide('energy_memory_kwh * new_ram_byte_hours', 'ram_byte_hours') }}
            * carbon_intensity_g_per_kwh * pue
            + {{ safe_divide('co2e_embodied_g * new_cpu_core_hours', 'cpu_core_hours') }}) as co2e_g,
        {{ csv_union_agg('rightsized_by') }} as rightsized_by,
        bool_or(is_usage_missing) as is_usage_missing,
        {{ rec_flags_any() }}
    from reallocated
    group by usage_date, cluster, namespace, controller_kind, controller, hour_ts
),

needs as (
    select
        *,
        cast(round(pod_hours) as integer) as replicas,
        greatest(
            ceil(cpu_peak_cores * {{ rec_param('off_peak_headroom') }} * pod_hours
                 / nullif(cpu_request_core_hours, 0) - 1e-9),
            ceil(ram_peak_bytes * {{ rec_param('off_peak_headroom') }} * pod_hours
                 / nullif(ram_request_byte_hours, 0) - 1e-9),
            1) as needed
    from hourly
),

hours_of_day as (
    select
        usage_date, cluster, namespace, controller_kind, controller, hour_of_day,
        max(needed) as needed,
        min(replicas) as replicas,
        -- quiet on every day of the window: a need below the replicas running, each day
        count(distinct case when needed < replicas then cast(hour_ts as date) end)
            >= {{ rec_window_days() }} as is_quiet
    from needs
    group by usage_date, cluster, namespace, controller_kind, controller, hour_of_day
),

controllers as (
    select
        usage_date, cluster, namespace, controller_kind, controller,
        count(distinct cast(hour_ts as date)) as days_of_data,
        count(distinct hour_ts) as hours_covered,
        min(replicas) as replicas_min,
        max(replicas) as replicas_max,
        {{ csv_union_agg('rightsized_by') }} as rightsized_by,
        {{ rec_reasons_agg([('bool_or(is_usage_missing)', 'usage_missing')]) }} as estimation_reasons
    from needs
    group by usage_date, cluster, namespace, controller_kind, controller
),

clock as (
    {% for hour in range(24) -%}
    select {{ hour }} as hour_of_day{{ ' union all ' if not loop.last }}
    {%- endfor %}
),

grid as (
    -- the 24 hours of the day of each Deployment; an hour never seen is not quiet
    select controllers.usage_date, controllers.cluster, controllers.namespace, controllers.controller_kind,
           controllers.controller, clock.hour_of_day
    from controllers
    cross join clock
),

busy_start as (
    -- the first hour of the day that is not quiet: counting the hours from it, no quiet block crosses the end
    select
        grid.usage_date, grid.cluster, grid.namespace, grid.controller_kind, grid.controller,
        min(grid.hour_of_day) as first_busy_hour
    from grid
    left join hours_of_day as q
        on q.usage_date = grid.usage_date and q.cluster = grid.cluster and q.namespace = grid.namespace
        and q.controller_kind = grid.controller_kind and q.controller = grid.controller
        and q.hour_of_day = grid.hour_of_day
    where not coalesce(q.is_quiet, false)
    group by grid.usage_date, grid.cluster, grid.namespace, grid.controller_kind, grid.controller
),

quiet as (
    select
        q.*,
        b.first_busy_hour,
        mod(q.hour_of_day - b.first_busy_hour + 24, 24) as rotated_hour
    from hours_of_day as q
    join busy_start as b
        on b.usage_date = q.usage_date and b.cluster = q.cluster and b.namespace = q.namespace
        and b.controller_kind = q.controller_kind and b.controller = q.controller
    where q.is_quiet
),

islands as (
    select
        usage_date, cluster, namespace, controller_kind, controller, first_busy_hour,
        rotated_hour - row_number() over (partition by usage_date, cluster, namespace, controller_kind, controller
                                          order by rotated_hour) as island,
        rotated_hour, needed, replicas
    from quiet
),

blocks as (
    select
        usage_date, cluster, namespace, controller_kind, controller,
        min(rotated_hour) as block_start_rotated,
        count(*) as block_hours,
        mod(max(first_busy_hour) + min(rotated_hour), 24) as start_hour,
        cast(max(needed) as integer) as scale_to,
        row_number() over (partition by usage_date, cluster, namespace, controller_kind, controller
                           order by count(*) desc, min(rotated_hour)) as pick
    from islands
    group by usage_date, cluster, namespace, controller_kind, controller, island
    having count(*) >= {{ rec_param('off_peak_min_hours') }}
),

saved as (
    select
        b.usage_date, b.cluster, b.namespace, b.controller_kind, b.controller,
        sum(greatest(n.replicas - b.scale_to, 0) / n.pod_hours * n.cost) as cost,
        sum(greatest(n.replicas - b.scale_to, 0) / n.pod_hours * n.energy_kwh) as energy_kwh,
        sum(greatest(n.replicas - b.scale_to, 0) / n.pod_hours * n.co2e_g) as co2e_g
    from blocks as b
    join busy_start as s
        on s.usage_date = b.usage_date and s.cluster = b.cluster and s.namespace = b.namespace
        and s.controller_kind = b.controller_kind and s.controller = b.controller
    join needs as n
        on n.usage_date = b.usage_date and n.cluster = b.cluster and n.namespace = b.namespace
        and n.controller_kind = b.controller_kind and n.controller = b.controller
        and mod(n.hour_of_day - s.first_busy_hour + 24, 24) >= b.block_start_rotated
        and mod(n.hour_of_day - s.first_busy_hour + 24, 24) < b.block_start_rotated + b.block_hours
    where b.pick = 1
    group by b.usage_date, b.cluster, b.namespace, b.controller_kind, b.controller
),

flagged as (
    select
        c.*,
        b.start_hour,
        mod(b.start_hour + b.block_hours, 24) as end_hour,
        b.block_hours,
        b.scale_to,
        s.cost * {{ hours_per_month() }} / 24 / c.days_of_data as saving_usd_per_month,
        s.energy_kwh * {{ hours_per_month() }} / 24 / c.days_of_data as saving_kwh_per_month,
        s.co2e_g * {{ hours_per_month() }} / 24 / c.days_of_data as saving_co2e_g_per_month
    from controllers as c
    join blocks as b
        on b.usage_date = c.usage_date and b.cluster = c.cluster and b.namespace = c.namespace
        and b.controller_kind = c.controller_kind and b.controller = c.controller and b.pick = 1
    join saved as s
        on s.usage_date = c.usage_date and s.cluster = c.cluster and s.namespace = c.namespace
        and s.controller_kind = c.controller_kind and s.controller = c.controller
    where c.replicas_min >= 2 and s.cost > 0
)

select
    usage_date,
    cluster,
    {{ rec_common_columns('off_peak_scale_down', 'namespace', 'controller_kind', 'controller',
        'cast(null as string)', "namespace || '/' || lower(controller_kind) || '/' || controller",
        "'Scale to ' || " ~ rec_int_text('scale_to') ~ " || ' replicas (now ' || " ~ rec_int_text('replicas_min')
         ~ " || ') from ' || lpad(" ~ rec_int_text('start_hour') ~ ", 2, '0') || ':00 to ' || lpad("
         ~ rec_int_text('end_hour') ~ ", 2, '0') || ':00 UTC every day (a CronJob or a KEDA cron scaler)'",
        [('scale_to_replicas', 'scale_to'), ('replicas_min', 'replicas_min'), ('replicas_max', 'replicas_max'),
         ('start_hour_utc', 'start_hour'), ('end_hour_utc', 'end_hour'), ('block_hours', 'block_hours'),
         ('headroom', rec_param('off_peak_headroom')), ('min_hours', rec_param('off_peak_min_hours')),
         ('rightsized_requests', "nullif(rightsized_by, '')"),
         ('basis', "'the dropped replicas'' share of each quiet hour''s allocation cost, memory energy and "
                   "embodied carbon at the rightsized requests; usage moves to the replicas that stay'")]) }},
    {{ rec_closing_columns() }}
from flagged
