"""The query plan: a fixed list of PromQL requests per chunk of hours, so the number of requests depends on the
number of hours only, never on the number of pods, namespaces or nodes.

- Every request is a `query_range` with `step=3600` over a chunk of <= MAX_CHUNK_HOURS consecutive hours (see
  `hour_chunks`); points land on hour ends T = h+1 (window queries: `rate[1h]`, `last_over_time[1h]`, `[R:1m]`
  subqueries) or on T - 1 s (raw-sample counts over exactly [h, h+1): `[W]` with W = 59m59s on closed-range
  backends, 1h on Prometheus 3's left-open ranges).
- Several related expressions share one request: each is tagged with a `kl_part` label and joined with `or`.
- The `presence` request also counts, per hour, the series of each optional family (base.OPTIONAL_SERIES) with
  `count(last_over_time(...))`, one `kl_metric` per family: the metric-coverage rows.
- Label names are validated and label values escaped here, so a namespace or cluster name cannot break out of
  its matcher.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from pipelines.sources.base import OPTIONAL_SERIES
from pipelines.timeutil import chunks, hours_between, runs_of_hours

MAX_CHUNK_HOURS = 6
LABEL_NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# scrape/target labels that differ between HA kube-state-metrics replicas and must not split a `max without`
_SCRAPE_LABELS = "instance, job, endpoint, service, container, prometheus, prometheus_replica, metrics_path"
# pod UID inside a cgroup path: cgroupfs uses dashes, the systemd driver underscores
_UID_RE = (
    ".*pod([0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12}).*"
)
_RE2_SPECIAL = set("\\.+*?()|[]{}^$")
_NONEMPTY_CONTAINER = 'container!=""'
_NONEMPTY_NODE = 'node!=""'
_NONEMPTY_POD = 'pod!=""'
_CONTROLLER_OWNER = 'owner_is_controller="true"'
_LB_TYPE = 'type="LoadBalancer"'
# queries are evaluated at T = h+1 - 1 s (see _plan): this offset evaluates a selector at the hour start h
_HOUR_START_OFFSET = "59m59s"


# --- escaping ----------------------------------------------------------------------------------------------

def validate_label_name(name: str) -> str:
    if not LABEL_NAME_RE.match(name):
        raise ValueError(f"{name!r} is not a Prometheus label name (must match [a-zA-Z_][a-zA-Z0-9_]*)")
    return name


def escape_label_value(v: str) -> str:
    """Escape a value for a double-quoted PromQL string (`\\`, `"` and newlines)."""
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_regex(v: str) -> str:
    """Escape RE2 metacharacters so `v` matches literally inside `=~` (then quote with escape_label_value)."""
    return "".join("\\" + c if c in _RE2_SPECIAL else c for c in v)


def equal_matcher(name: str, value: str) -> str:
    return f'{validate_label_name(name)}="{escape_label_value(value)}"'


def regex_matcher(name: str, values: Iterable[str]) -> str:
    pattern = "|".join(escape_regex(v) for v in values)
    return f'{validate_label_name(name)}=~"{escape_label_value(pattern)}"'


# --- batching ----------------------------------------------------------------------------------------------

def hour_chunks(hours: Iterable[datetime]) -> list[list[datetime]]:
    """Runs of consecutive hours (naive UTC hour starts), cut into chunks of at most MAX_CHUNK_HOURS."""
    return [c for start, end in runs_of_hours(hours) for c in chunks(hours_between(start, end), MAX_CHUNK_HOURS)]


# --- query plan --------------------------------------------------------------------------------------------

def _tagged(**parts: str) -> str:
    """Several expressions in one request: each result series carries kl_part=<name>."""
    return " or ".join(f'label_replace({expr}, "kl_part", "{name}", "", "")' for name, expr in parts.items())


def _with_uid(expr: str) -> str:
    return f'label_replace({expr}, "uid", "$1", "id", "{_UID_RE}")'


@dataclass(frozen=True)
class _Query:
    name: str
    build: Callable[[list[str]], str]  # extra matchers (namespace shard) -> PromQL
    namespaced: bool = True             # can be sharded by namespace
    at_hour_end: bool = False           # points at T = h+1 instead of h+1 - 1 s
    follow_up: bool = False             # run after the others, restricted to the pods they single out (pod=~)


def _plan(base: list[str], left_open: bool, scrape_s: float) -> list[_Query]:
    """The fixed list of requests per chunk; `base` holds the cluster matcher when configured.

    Every query is evaluated at T = hour end - 1 s over W = 59m59s (closed ranges) or 1h (left-open ranges),
    so raw windows cover exactly [h, h+1) and `[W:1m]` subqueries yield the 60 points h, h+1m, ..., h+59m.
    """
    p = _PromQL.for_backend(base, left_open, scrape_s)
    return [
        _Query("cpu", p.cpu), _Query("cpu_max", p.cpu_max, at_hour_end=True), _Query("mem", p.mem),
        _Query("resources", p.resources), _Query("running", p.running),
        _Query("per_step", p.per_step, follow_up=True),
        _Query("pod_meta", p.pod_meta), _Query("pod_labels", p.pod_labels),
        _Query("network", p.network), _Query("services", p.services), _Query("namespaces", p.namespaces),
        _Query("nodes", p.nodes, namespaced=False), _Query("presence", p.presence, namespaced=False),
        _Query("volumes", p.volumes, namespaced=False), _Query("gpu", p.gpu, namespaced=False),
    ]


@dataclass(frozen=True)
class _PromQL:
    """The plan's PromQL builders for one backend: each takes the extra matchers (a namespace shard, the
    follow-up's pod=~) and returns one request's expression."""
    base: list[str]   # the cluster matcher, when configured
    w: str            # raw window over exactly [h, h+1) at T = h+1 - 1 s
    r: str            # subquery range at T = h+1: points h+1m ... h+1, rates of intervals inside the hour
    s: str            # the scrape interval: a one-scrape lookback
    # irate needs two samples; a short window limits how long a dead cgroup (no staleness marker) lingers
    irate_w: str
    k: str = "namespace, pod, uid, container"

    @classmethod
    def for_backend(cls, base: list[str], left_open: bool, scrape_s: float) -> _PromQL:
        return cls(base, w="1h" if left_open else "59m59s", r="1h" if left_open else "59m", s=f"{scrape_s:g}s",
                   irate_w=f"{3 * scrape_s:g}s")

    # --- selectors

    def sel(self, metric: str, m: list[str], *fixed: str) -> str:
        return f"{metric}{{{', '.join([*fixed, *self.base, *m])}}}"

    def cad(self, metric: str, m: list[str]) -> str:
        return self.sel(metric, m, _NONEMPTY_CONTAINER, 'container!="POD"')

    def without_scrape(self, metric: str, m: list[str]) -> str:
        return f"max without ({_SCRAPE_LABELS}) (last_over_time({self.sel(metric, m)}[{self.w}]))"

    def running_ts(self, m: list[str]) -> tuple[str, str]:
        run = self.sel("kube_pod_container_status_running", m, _NONEMPTY_CONTAINER)
        # timestamp() of a bare selector is the raw sample's time; `and ... == 1` keeps running samples only
        return run, f"(timestamp({run}) and {run} == 1)"

    # --- containers: usage, requests, run span

    def cpu(self, m: list[str]) -> str:
        k, w = self.k, self.w
        inner = _with_uid(f"rate({self.cad('container_cpu_usage_seconds_total', m)}[{w}])")
        return f"sum by ({k}) (max by ({k}, id) ({inner}))"

    def cpu_max(self, m: list[str]) -> str:
        # one cgroup is live per container at a time: `max` across ids dedupes and never adds a dead one's rate.
        # max over (time, ids) taken per series first: the same maximum, without the per-step regex and grouping
        irate = f"irate({self.cad('container_cpu_usage_seconds_total', m)}[{self.irate_w}])"
        return f"max by ({self.k}) ({_with_uid(f'max_over_time({irate}[{self.r}:1m])')})"

    def mem(self, m: list[str]) -> str:
        # as for cpu_max: max across cgroup ids, and a one-scrape lookback instead of 5 minutes, so a restarted
        # container's old cgroup is not summed with the new one in backfilled/remote-read data
        k, w, s = self.k, self.w, self.s
        ws_sel = self.cad("container_memory_working_set_bytes", m)
        # the peak as in cpu_max (max over time and ids commute). The average of the per-step maximum does not
        # commute, but a container with one series in the hour has its series' average (same steps, same sum):
        # `avg` holds it where `series` is 1; the others are read with mem_avg(), the per-step form, by per_step
        peak = f"max by ({k}) ({_with_uid(f'max_over_time(last_over_time({ws_sel}[{s}])[{w}:1m])')})"
        per_series = _with_uid(f"avg_over_time(last_over_time({ws_sel}[{s}])[{w}:1m])")
        return _tagged(avg=f"max by ({k}) ({per_series})", series=f"count by ({k}) ({per_series})", max=peak)

    def mem_avg(self, m: list[str]) -> str:
        ws_sel = self.cad("container_memory_working_set_bytes", m)
        ws = f"max by ({self.k}) ({_with_uid(f'last_over_time({ws_sel}[{self.s}])')})"
        return f"avg_over_time(({ws})[{self.w}:1m])"

    def resources(self, m: list[str]) -> str:
        res = 'resource=~"cpu|memory|nvidia_com_gpu|nvidia.com/gpu"'
        return _tagged(**{
            kind: f"max by ({self.k}, node, resource) (avg_over_time("
                  f"{self.sel(f'kube_pod_container_resource_{kind}s', m, _NONEMPTY_CONTAINER, _NONEMPTY_NODE, res)}"
                  f"[{self.w}]))"
            for kind in ("request", "limit")
        })

    def running(self, m: list[str]) -> str:
        # The run span is min/max over the subquery steps h, h+1m, ... of the last running sample (see
        # per_step), but timestamp() inside a subquery re-reads every series per step (~30x a plain
        # subquery). The step sample's time never decreases, so where some series of a container runs at the
        # step h, the minimum is that step's (`first`, one evaluation via offset), and where every series that
        # ran at h or in the hour also runs at T, the maximum is T's (`last_now`). `needs_last` counts the
        # series for which that fails; those containers, and those with running samples but no `first`, are
        # read again by per_step, so every value equals the subquery's.
        k, w = self.k, self.w
        run, ts = self.running_ts(m)
        at_h = f"{run} offset {_HOUR_START_OFFSET}"
        return _tagged(
            count=f"max by ({k}) (sum_over_time({run}[{w}]))",
            first=f"min by ({k}) (timestamp({at_h}) and {at_h} == 1)",
            last_now=f"max by ({k}) {ts}",
            needs_last=f"count by ({k}) ((max_over_time({run}[{w}]) >= 1 or {at_h} == 1) unless {run} == 1)",
        )

    def per_step(self, m: list[str]) -> str:
        # The per-step subqueries, run for the pods (pod=~) that running/mem could not settle. A selection by
        # pod name holds every series of each container it returns, so each returned value is exact.
        # run span: the [W:scrape] subquery visits every raw sample, plus the last one before h (lookback)
        k, w, s = self.k, self.w, self.s
        _, ts = self.running_ts(m)
        return _tagged(
            first=f"min by ({k}) (min_over_time({ts}[{w}:{s}]))",
            last=f"max by ({k}) (max_over_time({ts}[{w}:{s}]))",
            mem_avg=self.mem_avg(m),
        )

    # --- pods and namespaces

    def pod_meta(self, m: list[str]) -> str:
        sel, w = self.sel, self.w
        return _tagged(
            info="max by (namespace, pod, uid, node, pod_ip, host_network, created_by_kind, created_by_name) "
                 f"(last_over_time({sel('kube_pod_info', m)}[{w}]))",
            phase=f"max by (namespace, pod, uid, phase) (last_over_time({sel('kube_pod_status_phase', m)}[{w}])) == 1",
            owner="max by (namespace, pod, uid, owner_kind, owner_name) (last_over_time("
                  f"{sel('kube_pod_owner', m, _CONTROLLER_OWNER)}[{w}]))",
            rs_owner="max by (namespace, replicaset, owner_kind, owner_name) (last_over_time("
                     f"{sel('kube_replicaset_owner', m)}[{w}]))",
            job_owner="max by (namespace, job_name, owner_kind, owner_name) (last_over_time("
                      f"{sel('kube_job_owner', m)}[{w}]))",
            mounts="max by (namespace, pod, uid, persistentvolumeclaim) (last_over_time("
                   f"{sel('kube_pod_spec_volumes_persistentvolumeclaims_info', m)}[{w}]))",
        )

    def pod_labels(self, m: list[str]) -> str:
        return _tagged(labels=self.without_scrape("kube_pod_labels", m),
                       annotations=self.without_scrape("kube_pod_annotations", m))

    def network(self, m: list[str]) -> str:
        sel, w = self.sel, self.w

        def inc(metric: str) -> str:
            # pod-level cgroup series; max across cgroup ids (pause vs pod cgroup report the same netns)
            inner = _with_uid(f"rate({sel(metric, m, _NONEMPTY_POD)}[{w}])")
            return f"sum by (namespace, pod, uid) (max by (namespace, pod, uid, interface) ({inner}))"
        return _tagged(
            tx=inc("container_network_transmit_bytes_total"),
            rx=inc("container_network_receive_bytes_total"),
            egress="sum by (namespace, pod_name, internet, same_zone, same_region) (rate("
                   f"{sel('kubecost_pod_network_egress_bytes_total', m)}[{w}]))",
        )

    def services(self, m: list[str]) -> str:
        sel, w = self.sel, self.w
        lb = f"max by (namespace, service) (last_over_time({sel('kube_service_spec_type', m, _LB_TYPE)}[{w}]))"
        return _tagged(
            lb=lb,
            ingress="max by (namespace, service, ip, hostname) (last_over_time("
                    f"{sel('kube_service_status_load_balancer_ingress', m)}[{w}]))",
            endpoints="max by (namespace, endpoint, ip) (last_over_time("
                      f"{sel('kube_endpoint_address', m)}[{w}])) and on (namespace, endpoint) "
                      f'label_replace({lb}, "endpoint", "$1", "service", "(.*)")',
        )

    def namespaces(self, m: list[str]) -> str:
        return _tagged(labels=self.without_scrape("kube_namespace_labels", m),
                       annotations=self.without_scrape("kube_namespace_annotations", m))

    # --- cluster-wide: nodes, presence, volumes, GPUs

    def nodes(self, m: list[str]) -> str:
        sel, w = self.sel, self.w
        res = 'resource=~"cpu|memory|nvidia_com_gpu|nvidia.com/gpu"'
        return _tagged(
            info=f"max by (node, provider_id) (last_over_time({sel('kube_node_info', m)}[{w}]))",
            labels=self.without_scrape("kube_node_labels", m),
            capacity=f"max by (node, resource) (max_over_time({sel('kube_node_status_capacity', m, res)}[{w}]))",
            allocatable="max by (node, resource) (max_over_time("
                        f"{sel('kube_node_status_allocatable', m, res)}[{w}]))",
        )

    def presence(self, m: list[str]) -> str:
        # raw-sample counts over exactly [h, h+1) x scrape interval = minutes present; `coverage`: series per
        # optional family in the hour (an absent family yields no point)
        sel, w = self.sel, self.w
        coverage = " or ".join(
            f'label_replace(count(last_over_time({sel(metric, m)}[{w}])), "kl_metric", "{metric}", "", "")'
            for metric in OPTIONAL_SERIES
        )
        return _tagged(
            node=f"max by (node) (count_over_time({sel('kube_node_info', m)}[{w}]))",
            pvc="max by (namespace, persistentvolumeclaim) (count_over_time("
                f"{sel('kube_persistentvolumeclaim_info', m)}[{w}]))",
            pv=f"max by (persistentvolume) (count_over_time({sel('kube_persistentvolume_info', m)}[{w}]))",
            service="max by (namespace, service) (count_over_time("
                    f"{sel('kube_service_spec_type', m, _LB_TYPE)}[{w}]))",
            coverage=coverage,
        )

    def volumes(self, m: list[str]) -> str:
        sel, w = self.sel, self.w
        return _tagged(
            pvc="max by (namespace, persistentvolumeclaim, storageclass, volumename) "
                f"(last_over_time({sel('kube_persistentvolumeclaim_info', m)}[{w}]))",
            pvc_request="max by (namespace, persistentvolumeclaim) (avg_over_time("
                        f"{sel('kube_persistentvolumeclaim_resource_requests_storage_bytes', m)}[{w}]))",
            pv="max by (persistentvolume, storageclass, csi_volume_handle, ebs_volume_id, gce_persistent_disk_name, "
               f"azure_disk_name) (last_over_time({sel('kube_persistentvolume_info', m)}[{w}]))",
            pv_capacity="max by (persistentvolume) (avg_over_time("
                        f"{sel('kube_persistentvolume_capacity_bytes', m)}[{w}]))",
            pv_claim="max by (persistentvolume, claim_namespace, name) "
                     f"(last_over_time({sel('kube_persistentvolume_claim_ref', m)}[{w}]))",
            # the kubelet's filesystem stats of each mounted claim (PV rightsizing): used bytes against the size
            used_avg="max by (namespace, persistentvolumeclaim) (avg_over_time("
                     f"{sel('kubelet_volume_stats_used_bytes', m)}[{w}]))",
            used_max="max by (namespace, persistentvolumeclaim) (max_over_time("
                     f"{sel('kubelet_volume_stats_used_bytes', m)}[{w}]))",
            stats_capacity="max by (namespace, persistentvolumeclaim) (max_over_time("
                           f"{sel('kubelet_volume_stats_capacity_bytes', m)}[{w}]))",
        )

    def gpu(self, m: list[str]) -> str:
        sel, w = self.sel, self.w
        g = ("node, Hostname, gpu, UUID, modelName, namespace, pod, container, "
             "exported_namespace, exported_pod, exported_container")
        return _tagged(
            util=f"avg by ({g}) (avg_over_time({sel('DCGM_FI_DEV_GPU_UTIL', m)}[{w}]))",
            power=f"avg by ({g}) (avg_over_time({sel('DCGM_FI_DEV_POWER_USAGE', m)}[{w}]))",
        )
