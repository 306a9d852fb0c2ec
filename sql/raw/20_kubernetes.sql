-- Writer: pipelines/sources/kubernetes.py (official client snapshot). Replaced per (cluster, hour_ts).
-- Enriches what the metrics lack: original label keys, annotations, full owner chains, provider ids.
-- grain: one row per (cluster, hour_ts, kind, uid)
create table if not exists raw.k8s_objects (
    cluster         varchar   not null,
    hour_ts         timestamp not null,           -- hour of the snapshot
    kind            varchar   not null,           -- Node, Pod, Namespace, PersistentVolumeClaim, PersistentVolume, ReplicaSet, Deployment, Job, CronJob, Service, StatefulSet, DaemonSet
    namespace       varchar,
    name            varchar   not null,
    uid             varchar   not null,
    labels          varchar,                      -- JSON object
    annotations     varchar,                      -- JSON object
    owner_kind      varchar,                      -- controller ownerReference
    owner_name      varchar,
    owner_uid       varchar,
    spec            varchar,                      -- JSON: the few spec/status fields we read (see SOURCES.md §5)
    _extracted_at   timestamp not null
);
