{#- The bill's key of a cloud resource (issue 28 reconciliation), ONE rule for both sides of the match: a node's
    spec.providerID, a volume's provider id, a load balancer's ingress hostname and a FOCUS ResourceId normalise to the same text, lower case.
      Azure (anything with /subscriptions/): the resource path from /subscriptions/ on, so
        azure:///subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachines/vm-1 and the bill's
        /SUBSCRIPTIONS/S/resourcegroups/g/.../virtualMachines/VM-1 meet; a scale-set instance keeps its
        .../virtualMachineScaleSets/<set>/virtualMachines/<n> path (a bill billing the whole set does not match one
        instance, so such nodes stay unmatched);
      an AWS load balancer: its name, unique per account and region, which both sides carry: the ELB ARN of the
        bill (arn:aws:elasticloadbalancing:r:a:loadbalancer/net|app|gwy/<name>/<id>; a classic ELB's
        .../loadbalancer/<name> is the last segment below) and the Service's ingress hostname
        [internal-]<name>-<dns id>.<region>.elb.amazonaws.com or <name>-<dns id>.elb.<region>.amazonaws.com
        (the first DNS label without its last '-' part and the 'internal-' prefix);
      everything else: the last path segment, so aws:///us-east-1a/i-0abc, arn:aws:ec2:us-east-1:1:instance/i-0abc
        and i-0abc give i-0abc; gce://project/zone/name and //compute.googleapis.com/projects/p/zones/z/instances/name
        give name; an EBS or CSI volume handle gives its volume id.
    NULL for NULL or empty ids. The patterns are anchored (one match at most), as macros/portable.sql regex_replace
    requires on Spark. -#}
{% macro resource_key(id_expr) -%}
    case
        when lower({{ id_expr }}) like '%/subscriptions/%'
            then {{ regex_replace(regex_replace('lower(' ~ id_expr ~ ')', '^.*/subscriptions/', '/subscriptions/'),
                                  '/+$', '') }}
        when lower({{ id_expr }}) like 'arn:%:elasticloadbalancing:%:loadbalancer/%/%/%'
            then {{ regex_replace(regex_replace('lower(' ~ id_expr ~ ')', '/[^/]*$', ''), '^.*/', '') }}
        when lower({{ id_expr }}) like '%.elb.%amazonaws.com%' and {{ id_expr }} not like '%/%'
            then nullif({{ regex_replace(regex_replace(regex_replace('lower(' ~ id_expr ~ ')', '[.].*$', ''),
                                                       '-[^-]*$', ''), '^internal-', '') }}, '')
        else nullif({{ regex_replace(regex_replace('lower(' ~ id_expr ~ ')', '/+$', ''), '^.*/', '') }}, '')
    end
{%- endmacro %}


{#- How a node's, a volume's or a load balancer's day met the bill, ONE rule for all (int_nodes_reconciled_daily,
    bill_matched below): no provider id to match on; matched a bill line; the bill covers the day but has no line for
    it; or no bill for the day at all. -#}
{% macro reconciliation_status(resource_key, bill_key, bill_day) -%}
    case
        when {{ resource_key }} is null then 'no_resource_id'
        when {{ bill_key }} is not null then 'reconciled'
        when {{ bill_day }} is not null then 'unmatched'
        else 'no_bill'
    end
{%- endmacro %}


{#- The resource id a LoadBalancer Service's ingress gives the bill (int_load_balancers_reconciled_daily): an AWS ELB
    hostname (resource_key takes the load balancer's name from it). NULL for an IP: a GCP forwarding rule or an
    Azure load balancer is billed under its resource name, which the ingress address does not carry. -#}
{% macro load_balancer_resource_id(ingress_expr) -%}
    case when lower({{ ingress_expr }}) like '%.elb.%amazonaws.com%' then {{ ingress_expr }} end
{%- endmacro %}


{#- A priced resource's days matched with the bill, ONE rule for volumes and load balancers (issue 28):
    `keyed` names a CTE with usage_date, the resource's own key columns, list_cost and resource_key. Adds the bill's
    effective cost and account, the reconciliation status, <prefix>_cost_adjustment (billed - list when reconciled,
    else 0) and <prefix>_adjustment_rate (the adjustment per dollar of list cost, which carries it to the payers; 0
    with no list cost, when the adjustment stays on the asset). Ends the model: a bill_days and a billed CTE, then
    the final select. -#}
{% macro bill_matched(keyed, prefix) -%}
bill_days as (
    select distinct usage_date from {{ ref('int_cloud_costs_keyed_daily') }}
),

billed as (
    select
        {{ keyed }}.*,
        bill.effective_cost as billed_cost,
        bill.account_id,
        {{ reconciliation_status(keyed ~ '.resource_key', 'bill.resource_key', 'bill_days.usage_date') }}
            as reconciliation_status
    from {{ keyed }}
    left join {{ ref('int_cloud_costs_keyed_daily') }} as bill
        on bill.usage_date = {{ keyed }}.usage_date and bill.resource_key = {{ keyed }}.resource_key
    left join bill_days on bill_days.usage_date = {{ keyed }}.usage_date
)

select
    *,
    case when reconciliation_status = 'reconciled' then billed_cost - list_cost else 0.0 end
        as {{ prefix }}_cost_adjustment,
    case when reconciliation_status = 'reconciled' then coalesce((billed_cost - list_cost) / nullif(list_cost, 0), 0)
        else 0.0 end as {{ prefix }}_adjustment_rate
from billed
{%- endmacro %}
