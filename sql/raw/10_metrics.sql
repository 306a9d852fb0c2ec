-- Writer: the cluster's metrics source (pipelines/sources/prometheus/ or pipelines/sources/demo.py).
-- Replaced per (cluster, hour_ts). Units: cores, bytes, seconds, minutes. NULL = not observed (never 0).

-- grain: one row per (cluster, hour_ts, pod_uid, container) that had any sample in the hour
create table if not exists raw.container_hours (
    cluster                 varchar   not null,
    hour_ts                 timestamp not null,   -- hour start, UTC
    namespace               varchar   not null,
    pod                     varchar   not null,
    pod_uid                 varchar   not null,   -- pods are keyed by uid: names repeat
    container               varchar   not null,
    node                    varchar,
    running_minutes         double,               -- minutes with kube_pod_container_status_running = 1 in [h, h+1)
    run_start_s             double,               -- seconds after hour start of the first running sample
    run_end_s               double,               -- seconds after hour start of the running end (last sample + scrape interval, <= 3600)
    cpu_usage_core_seconds  double,               -- CPU core-seconds used in the hour (rate per series, summed)
    cpu_usage_max_cores     double,               -- peak 1-minute CPU rate in the hour
    cpu_request_cores       double,               -- NULL = no request
    cpu_limit_cores         double,
    ram_usage_avg_bytes     double,               -- average working set while running
    ram_usage_max_bytes     double,
    ram_request_bytes       double,
    ram_limit_bytes         double,
    gpu_request             double,               -- requested GPUs (nvidia.com/gpu)
    gpu_usage_avg           double,               -- average GPUs busy (DCGM utilisation / 100 summed over GPUs), NULL if unknown
    _source                 varchar   not null,   -- 'prometheus' | 'demo'
    _extracted_at           timestamp not null
);

-- grain: one row per (cluster, hour_ts, pod_uid)
create table if not exists raw.pod_hours (
    cluster                     varchar   not null,
    hour_ts                     timestamp not null,
    namespace                   varchar   not null,
    pod                         varchar   not null,
    pod_uid                     varchar   not null,
    node                        varchar,
    phase                       varchar,          -- last kube_pod_status_phase seen in the hour
    owner_kind                  varchar,          -- direct controller owner (ReplicaSet, Job, StatefulSet, DaemonSet, ...)
    owner_name                  varchar,
    controller_kind             varchar,          -- resolved top controller (Deployment, CronJob, StatefulSet, DaemonSet, Job, ...), NULL for bare pods
    controller_name             varchar,
    labels                      varchar,          -- JSON object: original keys (demo, Kubernetes API) or kube-state-metrics sanitised keys (Prometheus); models read both (macros/labels.sql)
    annotations                 varchar,          -- JSON object
    network_transmit_bytes      double,           -- cAdvisor pod-level bytes sent in the hour
    network_receive_bytes       double,
    egress_cross_zone_bytes     double,           -- classified egress (Kubecost network-costs); NULL when not exported
    egress_cross_region_bytes   double,
    egress_internet_bytes       double,
    _source                     varchar   not null,
    _extracted_at               timestamp not null
);

-- grain: one row per (cluster, hour_ts, node)
create table if not exists raw.node_hours (
    cluster                 varchar   not null,
    hour_ts                 timestamp not null,
    node                    varchar   not null,
    provider_id             varchar,              -- spec.providerID, e.g. aws:///us-east-1a/i-0abc
    instance_type           varchar,              -- node.kubernetes.io/instance-type
    region                  varchar,              -- topology.kubernetes.io/region
    zone                    varchar,              -- topology.kubernetes.io/zone
    labels                  varchar,              -- JSON object: original keys (demo, Kubernetes API) or kube-state-metrics sanitised keys (Prometheus); models read both (macros/labels.sql)
    cpu_capacity_cores      double,
    ram_capacity_bytes      double,
    gpu_capacity            double,
    cpu_allocatable_cores   double,
    ram_allocatable_bytes   double,
    gpu_model               varchar,
    running_minutes         double,               -- minutes the node existed in [h, h+1), from raw samples
    _source                 varchar   not null,
    _extracted_at           timestamp not null
);

-- grain: one row per (cluster, hour_ts, namespace)
create table if not exists raw.namespace_hours (
    cluster         varchar   not null,
    hour_ts         timestamp not null,
    namespace       varchar   not null,
    labels          varchar,                      -- JSON object
    annotations     varchar,                      -- JSON object
    _source         varchar   not null,
    _extracted_at   timestamp not null
);

-- grain: one row per (cluster, hour_ts, pv); claim columns NULL for an unclaimed volume
create table if not exists raw.volume_hours (
    cluster             varchar   not null,
    hour_ts             timestamp not null,
    pv                  varchar   not null,
    namespace           varchar,                  -- claim namespace
    pvc                 varchar,                  -- claim name
    storage_class       varchar,
    pvc_request_bytes   double,
    pv_capacity_bytes   double,
    provider_volume_id  varchar,
    active_minutes      double,                   -- minutes the claim (or unclaimed PV) existed in the hour
    _source             varchar   not null,
    _extracted_at       timestamp not null
);

-- grain: one row per (cluster, hour_ts, namespace, pvc) from the kubelet's volume stats (reported while a pod on the
-- node mounts the claim): the bytes the filesystem holds against its size (PV rightsizing)
create table if not exists raw.volume_stats_hours (
    cluster             varchar   not null,
    hour_ts             timestamp not null,
    namespace           varchar   not null,
    pvc                 varchar   not null,
    used_avg_bytes      double,                   -- kubelet_volume_stats_used_bytes, average over the hour
    used_max_bytes      double,                   -- kubelet_volume_stats_used_bytes, maximum over the hour
    capacity_bytes      double,                   -- kubelet_volume_stats_capacity_bytes (the filesystem's size)
    _source             varchar   not null,
    _extracted_at       timestamp not null
);

-- grain: one row per (cluster, hour_ts, pod_uid, pvc): which pods mount which claims
create table if not exists raw.pod_volume_hours (
    cluster         varchar   not null,
    hour_ts         timestamp not null,
    namespace       varchar   not null,
    pod_uid         varchar   not null,
    pvc             varchar   not null,
    _source         varchar   not null,
    _extracted_at   timestamp not null
);

-- grain: one row per (cluster, hour_ts, namespace, service, pod_uid) for services of type LoadBalancer;
-- pod_uid NULL when the service selected no pod in the hour
create table if not exists raw.service_hours (
    cluster             varchar   not null,
    hour_ts             timestamp not null,
    namespace           varchar   not null,
    service             varchar   not null,
    service_type        varchar   not null,       -- 'LoadBalancer' (others are not landed)
    ingress             varchar,                  -- ip or hostname; NULL = not provisioned (not charged)
    active_minutes      double,
    pod_uid             varchar,
    _source             varchar   not null,
    _extracted_at       timestamp not null
);

-- grain: one row per (cluster, hour_ts, node, gpu_uuid) from dcgm-exporter
create table if not exists raw.gpu_hours (
    cluster         varchar   not null,
    hour_ts         timestamp not null,
    node            varchar   not null,
    gpu_uuid        varchar   not null,
    model_name      varchar,
    namespace       varchar,
    pod             varchar,
    container       varchar,
    power_avg_w     double,                       -- DCGM_FI_DEV_POWER_USAGE average
    util_avg        double,                       -- 0..1 (DCGM_FI_DEV_GPU_UTIL / 100)
    _source         varchar   not null,
    _extracted_at   timestamp not null
);

-- grain: one row per (cluster, hour_ts, metric) for each optional series family the metrics source checks
-- (pipelines/sources/base.py OPTIONAL_SERIES); series_count = 0: checked and absent in the hour.
-- No row = not checked (hours landed before the check existed): the models then assume nothing.
create table if not exists raw.metric_coverage_hours (
    cluster         varchar   not null,
    hour_ts         timestamp not null,
    metric          varchar   not null,           -- e.g. 'kube_endpoint_address'
    series_count    bigint    not null,           -- series with a sample in [h, h+1) (HA replicas count twice)
    _source         varchar   not null,
    _extracted_at   timestamp not null
);
