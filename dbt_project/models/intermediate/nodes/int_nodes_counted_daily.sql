-- grain: one row per (usage_date, cluster) with node samples: hours of the day covered and distinct nodes seen.
select cast(hour_ts as date) as usage_date, cluster, count(distinct hour_ts) as hours_covered,
       count(distinct node) as nodes
from {{ ref('stg_metrics__node_hours') }}
group by cast(hour_ts as date), cluster
