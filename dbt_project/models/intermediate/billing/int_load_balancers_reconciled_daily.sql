-- grain: one row per (usage_date, cluster, namespace, service) of a provisioned LoadBalancer. The load balancer's
-- list-priced cost of the day against the bill's effective cost of it (issue 28), matched as volumes are
-- (macros/billing.sql bill_matched): by the load balancer's name, from the Service's ingress hostname on our side
-- and the ELB ARN on the bill's; and the rate per dollar of its cost that carries the adjustment to the pods (and
-- the unmounted rows) paying for it.
with load_balancers as (
    select
        cast(hour_ts as date) as usage_date,
        cluster,
        namespace,
        service,
        sum(load_balancer_cost) as list_cost
    from {{ ref('int_load_balancers_allocated_hourly') }}
    group by cast(hour_ts as date), cluster, namespace, service
),

load_balancer_keys as (
    select
        cluster,
        cast(hour_ts as date) as usage_date,
        namespace,
        service,
        {{ resource_key('max(' ~ load_balancer_resource_id('ingress') ~ ')') }} as resource_key
    from {{ ref('stg_metrics__service_hours') }}
    where ingress is not null and active_h > 0
    group by cluster, cast(hour_ts as date), namespace, service
),

keyed as (
    select load_balancers.*, load_balancer_keys.resource_key
    from load_balancers
    left join load_balancer_keys
        on load_balancer_keys.cluster = load_balancers.cluster
        and load_balancer_keys.usage_date = load_balancers.usage_date
        and load_balancer_keys.namespace = load_balancers.namespace
        and load_balancer_keys.service = load_balancers.service
),

-- the bill's effective cost, the status and load_balancer_cost_adjustment / load_balancer_adjustment_rate
{{ bill_matched('keyed', 'load_balancer') }}
