{#- The bill's key of a cloud resource (issue 28 reconciliation), ONE rule for both sides of the match: a node's
    spec.providerID, a volume's provider id and a FOCUS ResourceId normalise to the same text, lower case.
      Azure (anything with /subscriptions/): the resource path from /subscriptions/ on, so
        azure:///subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachines/vm-1 and the bill's
        /SUBSCRIPTIONS/S/resourcegroups/g/.../virtualMachines/VM-1 meet; a scale-set instance keeps its
        .../virtualMachineScaleSets/<set>/virtualMachines/<n> path (a bill billing the whole set does not match one
        instance, so such nodes stay unmatched);
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
        else nullif({{ regex_replace(regex_replace('lower(' ~ id_expr ~ ')', '/+$', ''), '^.*/', '') }}, '')
    end
{%- endmacro %}


{#- How a node's or a volume's day met the bill, ONE rule for both (int_nodes_reconciled_daily,
    int_volumes_reconciled_daily): no provider id to match on; matched a bill line; the bill covers the day but has
    no line for it; or no bill for the day at all. -#}
{% macro reconciliation_status(resource_key, bill_key, bill_day) -%}
    case
        when {{ resource_key }} is null then 'no_resource_id'
        when {{ bill_key }} is not null then 'reconciled'
        when {{ bill_day }} is not null then 'unmatched'
        else 'no_bill'
    end
{%- endmacro %}
