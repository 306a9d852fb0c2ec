-- grain: one row per row of marts.fct_allocation_daily (usage_date, cluster, node, namespace, pod_uid, container):
-- the allocation-day as a FOCUS 1.2 charge row (ChargeCategory Usage, ServiceName Kubernetes), its cost columns
-- from the allocation's list cost and reconciliation adjustments, energy and carbon as x_ columns. The column
-- rules (which FOCUS column holds what, and why) are in the model's YAML; `kubeledger export focus` writes the
-- FOCUS and x_ columns of these rows to a file (usage_date and cluster are the mart's partition keys only).
{%- set adjustments = ['cpu_cost_adjustment', 'ram_cost_adjustment', 'gpu_cost_adjustment', 'pv_cost_adjustment',
                       'load_balancer_cost_adjustment'] %}
{{ config(unique_key=['usage_date', 'cluster']) }}

with allocations as (
    select * from {{ ref('fct_allocation_daily') }}
    where {{ window_filter('cast(usage_date as timestamp)', 'cluster') }}
),

nodes as (
    select usage_date, cluster, asset_name as node, provider, region, resource_key
    from {{ ref('fct_asset_daily') }}
    where asset_kind = 'node' and {{ window_filter('cast(usage_date as timestamp)', 'cluster') }}
),

-- the bill lines a cluster's node or volume was reconciled with (fct_cloud_cost_daily cluster_scope in_cluster)
bill_lines as (
    select
        usage_date, matched_cluster as cluster, resource_key, billing_account_id, billing_account_name,
        sub_account_id, sub_account_name, provider_name, invoice_issuer_name
    from {{ ref('fct_cloud_cost_daily') }}
    where cluster_scope = 'in_cluster'
        and {{ window_filter('cast(usage_date as timestamp)', 'matched_cluster') }}
),

-- a node's own billing account: the bill's line for its instance that day
node_accounts as (
    select
        usage_date, cluster, resource_key,
        max(billing_account_id) as billing_account_id,
        max(billing_account_name) as billing_account_name,
        max(sub_account_id) as sub_account_id,
        max(sub_account_name) as sub_account_name,
        max(provider_name) as provider_name,
        max(invoice_issuer_name) as invoice_issuer_name
    from bill_lines
    where resource_key is not null
    group by usage_date, cluster, resource_key
),

-- the account shared by the cluster's billed resources that day, per node provider (an AWS bill's account never
-- names a GCP node's row) and, in a cluster of one provider, over all its bill lines (volumes and load balancers
-- too); none when they are billed to several accounts
shared_lines as (
    select node_accounts.*, nodes.provider as scope
    from node_accounts
    inner join nodes
        on nodes.usage_date = node_accounts.usage_date and nodes.cluster = node_accounts.cluster
            and nodes.resource_key = node_accounts.resource_key
    union all
    select *, '*' as scope from bill_lines
),

cluster_accounts as (
    select
        usage_date, cluster, scope,
        max(billing_account_id) as billing_account_id,
        max(billing_account_name) as billing_account_name,
        case when count(distinct sub_account_id) = 1 then max(sub_account_id) end as sub_account_id,
        case when count(distinct sub_account_id) = 1 then max(sub_account_name) end as sub_account_name,
        max(provider_name) as provider_name,
        max(invoice_issuer_name) as invoice_issuer_name
    from shared_lines
    group by usage_date, cluster, scope
    having count(distinct billing_account_id) = 1
),

cluster_providers as (
    select usage_date, cluster, count(distinct provider) as providers
    from nodes
    group by usage_date, cluster
),

-- the cluster-level account of each allocation: its node provider's, else (a cluster of one provider: a row
-- without a node too) the cluster's
allocation_accounts as (
    select
        allocations.usage_date, allocations.cluster, allocations.node,
        coalesce(by_provider.billing_account_id, whole.billing_account_id) as billing_account_id,
        case when by_provider.billing_account_id is not null then by_provider.billing_account_name
            else whole.billing_account_name end as billing_account_name,
        case when by_provider.billing_account_id is not null then by_provider.sub_account_id
            else whole.sub_account_id end as sub_account_id,
        case when by_provider.billing_account_id is not null then by_provider.sub_account_name
            else whole.sub_account_name end as sub_account_name,
        case when by_provider.billing_account_id is not null then by_provider.provider_name
            else whole.provider_name end as provider_name,
        case when by_provider.billing_account_id is not null then by_provider.invoice_issuer_name
            else whole.invoice_issuer_name end as invoice_issuer_name
    from (select distinct usage_date, cluster, node from allocations) as allocations
    left join nodes
        on nodes.usage_date = allocations.usage_date and nodes.cluster = allocations.cluster
            and nodes.node = allocations.node
    left join cluster_providers
        on cluster_providers.usage_date = allocations.usage_date and cluster_providers.cluster = allocations.cluster
    left join cluster_accounts as by_provider
        on by_provider.usage_date = allocations.usage_date and by_provider.cluster = allocations.cluster
            and by_provider.scope = nodes.provider
    left join cluster_accounts as whole
        on whole.usage_date = allocations.usage_date and whole.cluster = allocations.cluster
            and whole.scope = '*' and cluster_providers.providers = 1
),

-- the cluster's billing account from kubeledger.yaml (clusters[].billing_account_id), when no bill names one
cluster_settings as (
    select cluster, billing_account_id, billing_account_name
    from {{ cluster_config_relation() }}
    where billing_account_id is not null
),

joined as (
    select
        allocations.*,
        nodes.provider as node_provider,
        nodes.region as node_region,
        case
            when node_accounts.billing_account_id is not null then 'node_bill'
            when cluster_accounts.billing_account_id is not null then 'cluster_bill'
            when cluster_settings.billing_account_id is not null then 'settings'
            else 'unknown'
        end as billing_account_source,
        coalesce(node_accounts.billing_account_id, cluster_accounts.billing_account_id,
                 cluster_settings.billing_account_id) as billing_account_id,
        case when node_accounts.billing_account_id is not null then node_accounts.billing_account_name
            when cluster_accounts.billing_account_id is not null then cluster_accounts.billing_account_name
            else cluster_settings.billing_account_name end as billing_account_name,
        case when node_accounts.billing_account_id is not null then node_accounts.sub_account_id
            else cluster_accounts.sub_account_id end as sub_account_id,
        case when node_accounts.billing_account_id is not null then node_accounts.sub_account_name
            else cluster_accounts.sub_account_name end as sub_account_name,
        coalesce(node_accounts.provider_name, cluster_accounts.provider_name) as bill_provider_name,
        coalesce(node_accounts.invoice_issuer_name, cluster_accounts.invoice_issuer_name) as bill_invoice_issuer_name,
        {{ adjustments | join(' + ') }} as cost_adjustment
    from allocations
    left join nodes
        on nodes.usage_date = allocations.usage_date and nodes.cluster = allocations.cluster
            and nodes.node = allocations.node
    left join node_accounts
        on node_accounts.usage_date = allocations.usage_date and node_accounts.cluster = allocations.cluster
            and node_accounts.resource_key = nodes.resource_key
    left join allocation_accounts as cluster_accounts
        on cluster_accounts.usage_date = allocations.usage_date and cluster_accounts.cluster = allocations.cluster
            and coalesce(cluster_accounts.node, '') = coalesce(allocations.node, '')
    left join cluster_settings on cluster_settings.cluster = allocations.cluster
),

named as (
    select
        *,
        coalesce(
            bill_provider_name,
            case node_provider
                when 'aws' then 'Amazon Web Services'
                when 'gcp' then 'Google Cloud'
                when 'azure' then 'Microsoft Azure'
            end,
            'Kubernetes'
        ) as provider_name
    from joined
)

-- FOCUS column IDs are Pascal case and its custom columns x_Pascal (the specification's naming rule), so the
-- lower-case identifier rule does not hold for the columns below
-- noqa: disable=CP02
select
    -- partition keys of the mart (not FOCUS columns; the export leaves them out)
    usage_date,
    cluster,
    -- FOCUS columns, alphabetical as the specification lists them
    total_cost + cost_adjustment as BilledCost,
    billing_account_id as BillingAccountId,
    billing_account_name as BillingAccountName,
    'USD' as BillingCurrency,
    cast({{ dbt.dateadd('month', 1, dbt.date_trunc('month', 'cast(usage_date as timestamp)')) }} as timestamp)
        as BillingPeriodEnd,
    cast({{ dbt.date_trunc('month', 'cast(usage_date as timestamp)') }} as timestamp) as BillingPeriodStart,
    'Usage' as ChargeCategory,
    cast(null as string) as ChargeClass,
    concat('Kubernetes ', allocation_kind, ' allocation ', coalesce(allocation_name, '')) as ChargeDescription,
    'Usage-Based' as ChargeFrequency,
    window_end as ChargePeriodEnd,
    window_start as ChargePeriodStart,
    total_cost as ContractedCost,
    total_cost + cost_adjustment as EffectiveCost,
    coalesce(bill_invoice_issuer_name, provider_name) as InvoiceIssuerName,
    total_cost as ListCost,
    coalesce(minutes, 0) / 60.0 as PricingQuantity,
    'Hours' as PricingUnit,
    provider_name as ProviderName,
    provider_name as PublisherName,
    node_region as RegionId,
    case when allocation_kind = 'workload' then pod_uid else allocation_name end as ResourceId,
    case allocation_kind
        when 'workload' then pod
        when 'idle' then node
        else concat(coalesce(namespace, ''), '/__unmounted__')
    end as ResourceName,
    case allocation_kind
        when 'workload' then 'Pod'
        when 'idle' then 'Idle node capacity'
        else 'Unmounted volumes'
    end as ResourceType,
    'Compute' as ServiceCategory,
    'Kubernetes' as ServiceName,
    sub_account_id as SubAccountId,
    sub_account_name as SubAccountName,
    {{ json_object_text([
        ('kubeledger.io/cluster', 'cluster'),
        ('kubeledger.io/namespace', 'namespace'),
        ('kubeledger.io/controller-kind', 'controller_kind'),
        ('kubeledger.io/controller', 'controller'),
        ('kubeledger.io/node', 'node'),
    ]) }} as Tags,
    -- custom columns (FOCUS: prefixed x_, after the FOCUS columns)
    cluster as x_ClusterName,
    node as x_NodeName,
    namespace as x_Namespace,
    container as x_ContainerName,
    allocation_kind as x_AllocationKind,
    cost_adjustment as x_CostAdjustment,
    reconciliation_status as x_ReconciliationStatus,
    billing_account_source as x_BillingAccountSource,
    energy_kwh as x_EnergyKwh,
    co2e_operational_g as x_Co2eOperationalGrams,
    co2e_embodied_g as x_Co2eEmbodiedGrams,
    co2e_total_g as x_Co2eGrams,
    is_estimated as x_IsEstimated,
    estimation_reasons as x_EstimationReasons
from named
-- noqa: enable=CP02
