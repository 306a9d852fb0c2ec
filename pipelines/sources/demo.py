"""A deterministic synthetic cluster that lands the same raw tables as the Prometheus extractor.

Every value is a pure function of (demo seed, cluster name, hour): the cluster's shape (nodes, controllers,
pod slots, requests) comes from a topology seeded by (seed, cluster) and cached; pod identities come from a
periodic schedule per slot (rollouts, CronJob runs, daily windows), hashed by (slot, period index); usage noise
comes from a Generator seeded by (seed, cluster, hour). So an hour generated alone equals the same hour
generated inside any batch, and backfills over any date need no setup.

Units follow sql/raw/10_metrics.sql: cores, bytes, seconds, minutes. NULL (NaN/None) = not observed.

Modules: demo_shapes (fixed shapes, stable hashing), demo_topology (the cached topology: nodes, namespaces,
claims, services), demo_workloads (its controllers, pod slots and schedules), demo_scenario (the opt-in
`scenario: recommendations` workloads), demo_fit (the scheduler's and kubelet's limits) and this one (the frames
of an hour, one builder per table, and the public API).
"""

from __future__ import annotations

import calendar
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from pipelines.settings import ClusterSettings
from pipelines.sources import demo_scenario
from pipelines.sources.base import COVERAGE_TABLE, OPTIONAL_SERIES, ExtractResult, hour_floor
from pipelines.sources.demo_fit import fit_usage
from pipelines.sources.demo_shapes import (
    _KIND_CTRL,
    _KIND_OWNER,
    BARE,
    CARBON_DEFAULT_LEVEL,
    CARBON_GAP,
    CARBON_LEVELS,
    CRON,
    DAY_S,
    DEPLOY,
    DS,
    INSTANCE_TYPES,  # noqa: F401 - re-exported (tests, docs)
    JOB,
    SOURCE,
    STS,
    _alpha,
    _seed,
    _uuids,
    _vhash,
)
from pipelines.sources.demo_topology import _node_table, _Topology, _topology, _topology_for  # noqa: F401

# --- per hour -------------------------------------------------------------------------------------------


def _epoch(h: datetime) -> int:
    if h.tzinfo is not None:
        h = h.astimezone(UTC).replace(tzinfo=None)
    return int(calendar.timegm(hour_floor(h).timetuple()))


def _naive(h: datetime) -> datetime:
    if h.tzinfo is not None:
        h = h.astimezone(UTC).replace(tzinfo=None)
    return hour_floor(h)


def _minutes(start: np.ndarray, end: np.ndarray, hour: int) -> tuple[np.ndarray, np.ndarray]:
    """Minute-grid samples (1-minute scrape at :00) of [start, end) inside the hour: first and end minute."""
    first = np.clip(-((hour - start) // 60), 0, 60)  # ceil((start - hour) / 60)
    last = np.clip(-((hour - end) // 60), 0, 60)
    return first, last


def _diurnal(hour_of_day: float) -> float:
    # busiest around 14:00 UTC (EU afternoon, US morning), quietest around 02:00
    return 0.725 + 0.275 * math.cos(2 * math.pi * (hour_of_day - 14) / 24)


@dataclass
class _HourPods:
    """The pod instances that overlap one hour: one entry per pod, ordered by (slot, period index, segment)."""
    hour: int                # epoch seconds of the hour start
    seg_i: np.ndarray        # schedule segment of each pod
    k: np.ndarray            # period index of the segment
    start: np.ndarray        # epoch seconds the pod starts / ends
    end: np.ndarray
    first: np.ndarray        # first and end minute of the pod inside the hour (`_minutes`)
    last: np.ndarray
    slot: np.ndarray
    pending: np.ndarray
    rm: np.ndarray           # running minutes (0 while Pending)
    node_i: np.ndarray       # node row of each pod
    ctrl_i: np.ndarray       # controller row of each pod
    kind: np.ndarray         # controller kind (DEPLOY, DS, ...)
    ns: np.ndarray
    uid: np.ndarray
    pod: list[str] = field(default_factory=list)
    owner: list[str | None] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    @property
    def running(self) -> np.ndarray:
        return ~self.pending & (self.rm > 0)


def _frames_for_hour(cluster: ClusterSettings, topo: _Topology, h: datetime,
                     stamp: bool = True) -> dict[str, pd.DataFrame]:
    H = _epoch(h)
    hod = (H % DAY_S) // 3600
    # One generator per hour: the builders below draw from it in a fixed order (pods, containers, GPU), which
    # is part of the output, so they must be called in this order.
    rng = np.random.default_rng(_seed("hour", cluster.demo.seed, cluster.name, H))
    node_hours, node_rm, node_on = _node_hours(topo, H)
    pods = _pod_instances(topo, H)
    own = _own_rng_pods(topo, pods)
    if own.any():  # the scenario's bursty Deployment: a generator and an hourly shape of its own (demo_scenario)
        pods, mine = _take(pods, ~own), _take(pods, own)
    pod_hours, egress = _pod_hours(topo, pods, rng, hod)
    container_hours, gpu_util = _container_hours(topo, pods, node_rm, rng, hod)
    if own.any():
        own_rng = np.random.default_rng(_seed("hour", cluster.demo.seed, cluster.name, H, demo_scenario.OWN_RNG))
        own_pod_hours, own_egress = _pod_hours(topo, mine, own_rng, hod)
        own_container_hours, _ = _container_hours(topo, mine, node_rm, own_rng, hod,
                                                  demo_scenario.bursty_shape(hod))
        pod_hours = pd.concat([pod_hours, own_pod_hours], ignore_index=True)
        container_hours = pd.concat([container_hours, own_container_hours], ignore_index=True)
        egress = {c: np.r_[egress[c], own_egress[c]] for c in egress}
        pods = _take(pods, np.ones(len(pods.slot), bool), mine)
    service_hours = _service_hours(topo, pods)
    gpu_hours = _gpu_hours(topo, pods, node_on, gpu_util, rng)
    pod_volume_hours = _pod_volume_hours(topo, pods)
    frames = {
        "container_hours": container_hours, "pod_hours": pod_hours, "node_hours": node_hours,
        "namespace_hours": topo.namespaces.copy(), "volume_hours": topo.volumes.copy(),
        "pod_volume_hours": pod_volume_hours, "service_hours": service_hours,
        "gpu_hours": gpu_hours, COVERAGE_TABLE: _coverage(topo, service_hours, egress, gpu_hours),
        "volume_stats_hours": _volume_stats_hours(cluster, topo, pod_volume_hours, H),
    }
    if not stamp:  # a range stamps its concatenated frames once (extract_demo_hours)
        return frames
    return {t: _stamp(f, cluster.name, _naive(h)) for t, f in frames.items()}


_NODE_COLS = ["node", "provider_id", "instance_type", "region", "zone", "labels", "cpu_capacity_cores",
              "ram_capacity_bytes", "gpu_capacity", "cpu_allocatable_cores", "ram_allocatable_bytes", "gpu_model"]


def _node_hours(topo: _Topology, H: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """node_hours, each node's running minutes and whether it runs: all nodes, except the scale-away node
    after 14:20."""
    nodes = topo.nodes
    day0 = H - H % DAY_S
    n_first, n_last = _minutes(np.full(len(nodes), day0), day0 + topo.node_daily_end, H)
    node_rm = (n_last - n_first).astype(float)
    node_on = node_rm > 0
    return nodes.loc[node_on, _NODE_COLS].assign(running_minutes=node_rm[node_on]), node_rm, node_on


def _own_rng_pods(topo: _Topology, pods: _HourPods) -> np.ndarray:
    """Which of the hour's pods belong to slots with a generator of their own (demo_scenario.OWN_RNG)."""
    if "own_rng" not in topo.slots:
        return np.zeros(len(pods.slot), bool)
    return topo.slots["own_rng"].fillna(False).astype(bool).to_numpy()[pods.slot]


def _take(pods: _HourPods, keep: np.ndarray, more: _HourPods | None = None) -> _HourPods:
    """The pods where `keep`, followed by all of `more` if given."""
    out = {}
    for f in fields(_HourPods):
        v = getattr(pods, f.name)
        if f.name == "hour":
            out[f.name] = v
        elif isinstance(v, list):
            tail = list(getattr(more, f.name)) if more is not None else []
            out[f.name] = [x for x, k in zip(v, keep, strict=True) if k] + tail
        else:
            out[f.name] = np.r_[v[keep], getattr(more, f.name)] if more is not None else v[keep]
    return _HourPods(**out)


def _pod_instances(topo: _Topology, H: int) -> _HourPods:
    """Candidate period indices around the hour, kept when their minutes overlap it (or Pending across it)."""
    s = topo.segs
    k0 = (H - s["o"] - s["re"]) // s["T"] + 1
    cand = [np.arange(len(k0))] * 3
    seg_i = np.concatenate(cand)
    k = np.concatenate([k0, k0 + 1, k0 + 2])
    start = s["o"][seg_i] + k * s["T"][seg_i] + s["rs"][seg_i]
    end = s["o"][seg_i] + k * s["T"][seg_i] + s["re"][seg_i]
    first, last = _minutes(start, end, H)
    slot = s["slot"][seg_i]
    pending = topo.slots["pending"].to_numpy()[slot]
    keep = ((last > first) & (start < H + 3600) & (end > H)) | (pending & (start <= H) & (end > H))
    seg_i, k, start, end, first, last, slot, pending = (a[keep] for a in (seg_i, k, start, end, first, last, slot,
                                                                          pending))
    order = np.lexsort((seg_i, k, slot))
    seg_i, k, start, end, first, last, slot, pending = (a[order] for a in (seg_i, k, start, end, first, last, slot,
                                                                           pending))
    ctrl_i = topo.slots["ctrl"].to_numpy()[slot]
    b = topo.base
    tag = s["tag"][seg_i]
    pods = _HourPods(
        hour=H, seg_i=seg_i, k=k, start=start, end=end, first=first, last=last, slot=slot, pending=pending,
        rm=np.where(pending, 0, last - first).astype(float), node_i=s["node"][seg_i], ctrl_i=ctrl_i,
        kind=topo.ctrl["kind"].to_numpy()[ctrl_i], ns=topo.ctrl["namespace"].to_numpy()[ctrl_i],
        uid=_uuids(_vhash(b, slot, k, tag, 1), _vhash(b, slot, k, tag, 2)),
    )
    pods.pod, pods.owner, pods.labels = _pod_names(topo, pods, _alpha(_vhash(b, slot, k, tag, 3), 5))
    return pods


def _pod_names(topo: _Topology, pods: _HourPods,
               sfx: np.ndarray) -> tuple[list[str], list[str | None], list[str]]:
    """Pod name, owner name and labels JSON of each pod, as each controller kind names its pods."""
    ct, sl, s = topo.ctrl, topo.slots, topo.segs
    ctrl_i, start = pods.ctrl_i, pods.start
    cname = ct["name"].to_numpy()[ctrl_i]
    # ReplicaSet hash follows the controller's rollout generation at the pod's start
    gen = (start - ct["o"].to_numpy()[ctrl_i]) // ct["T"].to_numpy()[ctrl_i]
    rsh = _alpha(_vhash(topo.base, ctrl_i, gen, 4), 10)
    rs_len = 9 + (_vhash(topo.base, ctrl_i, gen, 5) % np.uint64(2)).astype(int)
    ordinal = sl["ordinal"].to_numpy()[pods.slot]
    bare_name = sl["bare_name"].to_numpy()[pods.slot]
    labels_prefix = ct["labels"].to_numpy()[ctrl_i]
    pod, owner, labels = [], [], []
    for i in range(len(pods.slot)):
        kd, c = pods.kind[i], cname[i]
        if kd == DEPLOY:
            r = rsh[i][: rs_len[i]]
            o = f"{c}-{r}"
            p = f"{o}-{sfx[i]}"
            lab = f'{labels_prefix[i]},"pod-template-hash":"{r}"}}'
        elif kd == DS:
            o, p = c, f"{c}-{sfx[i]}"
            lab = f'{labels_prefix[i]},"controller-revision-hash":"{rsh[i]}","pod-template-generation":"{gen[i] % 97 + 1}"}}'
        elif kd == STS:
            o, p = c, f"{c}-{ordinal[i]}"
            lab = (f'{labels_prefix[i]},"controller-revision-hash":"{c}-{rsh[i]}",'
                   f'"statefulset.kubernetes.io/pod-name":"{p}"}}')
        elif kd == CRON:  # Job named after the scheduled time in minutes, as the CronJob controller does
            o = f"{c}-{(start[i] - s['rs'][pods.seg_i[i]]) // 60}"
            p = f"{o}-{sfx[i]}"
            lab = f'{labels_prefix[i]},"batch.kubernetes.io/job-name":"{o}","job-name":"{o}"}}'
        elif kd == JOB:
            day = datetime(1970, 1, 1) + timedelta(seconds=int(start[i]))
            o = f"{c}-{day:%Y%m%d}"
            p = f"{o}-{sfx[i]}"
            lab = f'{labels_prefix[i]},"batch.kubernetes.io/job-name":"{o}","job-name":"{o}"}}'
        else:
            o, p, lab = None, bare_name[i], '{"run":"debug-shell"}'
        pod.append(p)
        owner.append(o)
        labels.append(lab)
    return pod, owner, labels


def _pod_hours(topo: _Topology, pods: _HourPods, rng: np.random.Generator,
               hod: int) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """pod_hours and the egress bytes per class (coverage counts them). Draws: transmit, then receive noise."""
    sl, ct, kind = topo.slots, topo.ctrl, pods.kind
    cname = ct["name"].to_numpy()[pods.ctrl_i]
    finished = (pods.end <= pods.hour + 3600)
    phase = np.where(pods.pending, "Pending",
                     np.where(np.isin(kind, (CRON, JOB)) & finished, "Succeeded", "Running"))
    net = sl["net"].to_numpy()[pods.slot] * pods.rm * 60
    tx = np.where(pods.pending, np.nan, net * rng.lognormal(0, 0.3, len(pods.slot)) * _diurnal(hod))
    rx = np.where(pods.pending, np.nan, net * rng.lognormal(0.3, 0.3, len(pods.slot)) * _diurnal(hod))
    eg = {c: sl[c].to_numpy()[pods.slot] * tx for c in ("eg_zone", "eg_region", "eg_internet")}
    frame = pd.DataFrame({
        "namespace": pods.ns, "pod": pods.pod, "pod_uid": pods.uid,
        "node": topo.nodes["node"].to_numpy()[pods.node_i], "phase": phase,
        "owner_kind": np.array([_KIND_OWNER[x] for x in kind], dtype=object),
        "owner_name": np.array(pods.owner, dtype=object),
        "controller_kind": np.array([_KIND_CTRL[x] for x in kind], dtype=object),
        "controller_name": np.where(kind == BARE, None, cname).astype(object), "labels": pods.labels,
        "annotations": ct["annotations"].to_numpy()[pods.ctrl_i],
        "network_transmit_bytes": tx, "network_receive_bytes": rx,
        "egress_cross_zone_bytes": eg["eg_zone"], "egress_cross_region_bytes": eg["eg_region"],
        "egress_internet_bytes": eg["eg_internet"],
    })
    return frame, eg


def _container_rows(topo: _Topology, pods: _HourPods) -> tuple[np.ndarray, np.ndarray]:
    """For each container row of the hour: its pod (index into `pods`) and its row in `topo.cont`."""
    counts = topo.slots["n_cont"].to_numpy()[pods.slot]
    rep = np.repeat(np.arange(len(pods.slot)), counts)
    within = np.arange(len(rep)) - np.repeat(np.cumsum(counts) - counts, counts)
    return rep, topo.cont_offset[pods.slot][rep] + within


def _container_usage(topo: _Topology, pods: _HourPods, rep: np.ndarray, ci: np.ndarray, node_rm: np.ndarray,
                     rng: np.random.Generator, d: float) -> tuple[np.ndarray, np.ndarray]:
    """Cores and bytes used by each container, within its node's capacity. Draws: CPU, then memory noise."""
    co, nodes = topo.cont, topo.nodes
    cpu_req = co["cpu_req"].to_numpy()[ci]
    ram_req = co["ram_req"].to_numpy()[ci]
    run = pods.rm[rep]
    cores = np.where(np.isnan(cpu_req), co["abs_cpu"].to_numpy()[ci], cpu_req * co["eff"].to_numpy()[ci])
    cores = cores * d * rng.lognormal(0, 0.15, len(ci))
    mem = np.where(np.isnan(ram_req), co["abs_ram"].to_numpy()[ci], ram_req * co["mem_eff"].to_numpy()[ci])
    mem = mem * (0.9 + 0.1 * d) * rng.lognormal(0, 0.05, len(ci))
    # a node runs no more than it has: Σ max(request, usage) within capacity in every node-hour
    node_c, run_h = pods.node_i[rep], run / 60
    cores = fit_usage(node_c, run_h, cpu_req, cores, nodes["cpu_capacity_cores"].to_numpy() * node_rm / 60)
    mem = fit_usage(node_c, run_h, ram_req, mem, nodes["ram_capacity_bytes"].to_numpy() * node_rm / 60)
    if topo.burst_cont is not None and (pods.hour % DAY_S) // 3600 == 10 and (topo.burst_cont == ci).any():
        # one node-hour whose demand Σ max(request, usage) exceeds capacity, while usage itself still fits
        j = int(np.flatnonzero(ci == topo.burst_cont)[0])
        same = (node_c == node_c[j]) & (run > 0)
        others = float((cores * run / 60)[same].sum() - cores[j] * run[j] / 60)
        cores[j] = max(0.92 * nodes["cpu_capacity_cores"].iloc[node_c[j]] - others, 1.5 * cpu_req[j])
    return cores, mem


def _container_hours(topo: _Topology, pods: _HourPods, node_rm: np.ndarray, rng: np.random.Generator,
                     hod: int, level: float | None = None) -> tuple[pd.DataFrame, float]:
    """container_hours and the GPU utilisation of the hour, at `level` (default: the diurnal curve). Draws: usage
    (`_container_usage`), GPU utilisation, CPU peak, then memory peak."""
    rep, ci = _container_rows(topo, pods)
    co = topo.cont
    gpu_req = co["gpu_req"].to_numpy()[ci]
    run = pods.rm[rep]
    on = run > 0
    n_c = len(ci)
    d = _diurnal(hod) if level is None else level
    cores, mem = _container_usage(topo, pods, rep, ci, node_rm, rng, d)
    gpu_util = np.full(n_c, np.nan)
    util = float(np.clip(0.15 + 0.6 * d + rng.normal(0, 0.05), 0.02, 0.98))
    gpu_util[~np.isnan(gpu_req) & on] = util
    peak = co["peak"].to_numpy()[ci] * rng.uniform(0.9, 1.1, n_c)
    cap = topo.nodes["cpu_capacity_cores"].to_numpy()[pods.node_i][rep]
    first, last = pods.first[rep], pods.last[rep]
    frame = pd.DataFrame({
        "namespace": pods.ns[rep], "pod": np.array(pods.pod, dtype=object)[rep], "pod_uid": pods.uid[rep],
        "container": co["container"].to_numpy()[ci], "node": topo.nodes["node"].to_numpy()[pods.node_i][rep],
        "running_minutes": run,
        "run_start_s": np.where(on, first * 60.0, np.nan), "run_end_s": np.where(on, last * 60.0, np.nan),
        "cpu_usage_core_seconds": np.where(on, cores * run * 60, np.nan),
        "cpu_usage_max_cores": np.where(on, np.minimum(cores * peak, cap), np.nan),
        "cpu_request_cores": co["cpu_req"].to_numpy()[ci], "cpu_limit_cores": co["cpu_lim"].to_numpy()[ci],
        "ram_usage_avg_bytes": np.where(on, np.round(mem), np.nan),
        "ram_usage_max_bytes": np.where(on, np.round(mem * rng.uniform(1.05, 1.3, n_c)), np.nan),
        "ram_request_bytes": co["ram_req"].to_numpy()[ci], "ram_limit_bytes": co["ram_lim"].to_numpy()[ci],
        "gpu_request": gpu_req, "gpu_usage_avg": gpu_util,
    })
    return frame, util


def _pod_volume_hours(topo: _Topology, pods: _HourPods) -> pd.DataFrame:
    """The claims each running pod mounts."""
    rows = [(pods.ns[i], pods.uid[i], pvc)
            for i in np.flatnonzero(pods.running) for pvc in topo.mounts.get(int(pods.slot[i]), ())]
    return pd.DataFrame(rows, columns=["namespace", "pod_uid", "pvc"])


def _volume_stats_hours(cluster: ClusterSettings, topo: _Topology, mounts: pd.DataFrame, H: int) -> pd.DataFrame:
    """The kubelet's stats of each mounted claim: a fill share fixed per volume by (seed, cluster, pv) and +-2 %
    noise per hour. Drawn from a generator of its own, seeded by (seed, cluster, hour) under another name than the
    hour's: the other tables' draws do not move when this one changes."""
    cols = ["namespace", "pvc", "used_avg_bytes", "used_max_bytes", "capacity_bytes"]
    claimed = topo.volumes.dropna(subset=["pvc"])
    mounted = claimed.merge(mounts[["namespace", "pvc"]].drop_duplicates(), on=["namespace", "pvc"])
    if mounted.empty:
        return pd.DataFrame(columns=cols)
    mounted = mounted.sort_values(["namespace", "pvc"], kind="stable").reset_index(drop=True)
    rng = np.random.default_rng(_seed("volume-stats", cluster.demo.seed, cluster.name, H))
    fill = np.array([0.08 + 0.8 * (_seed("volume-fill", cluster.demo.seed, cluster.name, pv) % 1000) / 1000
                     for pv in mounted["pv"]])
    capacity = mounted["pv_capacity_bytes"].to_numpy() * 0.98  # the filesystem's size: the PV less its metadata
    used = capacity * np.clip(fill * (1 + rng.normal(0, 0.02, len(mounted))), 0.0, 1.0)
    return pd.DataFrame({"namespace": mounted["namespace"], "pvc": mounted["pvc"], "used_avg_bytes": np.round(used),
                         "used_max_bytes": np.round(np.minimum(used * rng.uniform(1.0, 1.03, len(mounted)),
                                                               capacity)),
                         "capacity_bytes": np.round(capacity)}, columns=cols)


def _service_hours(topo: _Topology, pods: _HourPods) -> pd.DataFrame:
    """One row per LoadBalancer service and running backend pod; a service without pods keeps one row."""
    rows = []
    running = pods.running
    for svc in topo.services:
        sel = np.flatnonzero(running & np.isin(pods.ctrl_i, list(svc["ctrls"])))
        base_row = {"namespace": svc["namespace"], "service": svc["service"], "service_type": "LoadBalancer",
                    "ingress": svc["ingress"], "active_minutes": 60.0}
        rows += [base_row | {"pod_uid": pods.uid[i]} for i in sel] or [base_row | {"pod_uid": None}]
    return pd.DataFrame(rows, columns=["namespace", "service", "service_type", "ingress", "active_minutes",
                                       "pod_uid"])


def _gpu_hours(topo: _Topology, pods: _HourPods, node_on: np.ndarray, util: float,
               rng: np.random.Generator) -> pd.DataFrame:
    """The GPU node's device while the node runs, with the pod holding it at hour end. Draws: power noise."""
    rows = []
    if topo.gpu_node is not None and node_on[topo.gpu_node]:
        users = np.flatnonzero(pods.running & (pods.slot == topo.gpu_slot))
        u = users[np.argmax(pods.end[users])] if len(users) else None  # the pod holding the GPU at hour end
        busy = util if u is not None else 0.0
        rows.append({
            "node": topo.nodes["node"][topo.gpu_node], "gpu_uuid": topo.gpu_uuid, "model_name": "Tesla T4",
            "namespace": pods.ns[u] if u is not None else None, "pod": pods.pod[u] if u is not None else None,
            "container": "triton" if u is not None else None,
            "power_avg_w": round(11.0 + 59.0 * busy + float(rng.normal(0, 1.5)), 2), "util_avg": busy,
        })
    return pd.DataFrame(rows, columns=["node", "gpu_uuid", "model_name", "namespace", "pod", "container",
                                       "power_avg_w", "util_avg"])


def _coverage(topo: _Topology, service_hours: pd.DataFrame, egress: dict[str, np.ndarray],
              gpu_hours: pd.DataFrame) -> pd.DataFrame:
    """The optional series this cluster would export (kube-state-metrics >= 2.6, network-costs, dcgm-exporter):
    series counts of what was generated; the apiserver's default/kubernetes endpoint always exists."""
    series = {
        "kube_service_spec_type": len(topo.services),
        "kube_endpoint_address": int(service_hours["pod_uid"].notna().sum()) + 1,
        "kubecost_pod_network_egress_bytes_total": int(np.isfinite(egress["eg_zone"]).sum()),
        "DCGM_FI_DEV_GPU_UTIL": len(gpu_hours),
        "DCGM_FI_DEV_POWER_USAGE": len(gpu_hours),
    }
    return pd.DataFrame({"metric": list(OPTIONAL_SERIES), "series_count": [series[m] for m in OPTIONAL_SERIES]})


def _stamp(frame: pd.DataFrame, cluster: str, hour_ts: datetime) -> pd.DataFrame:
    frame = frame.reset_index(drop=True)
    frame.insert(0, "hour_ts", pd.Series([hour_ts] * len(frame), dtype="datetime64[us]"))
    frame.insert(0, "cluster", cluster)
    frame["_source"] = SOURCE
    return frame


# --- public API -----------------------------------------------------------------------------------------


def iter_demo_hours(cluster: ClusterSettings, hours: list[datetime]) -> Iterator[ExtractResult]:
    """One ExtractResult per hour, so large clusters can be landed hour by hour in bounded memory."""
    topo = _topology_for(cluster)
    for h in hours:
        frames = _frames_for_hour(cluster, topo, h)
        yield ExtractResult(batches=frames, partitions=[{"cluster": cluster.name, "hour_ts": _naive(h)}],
                            metadata={"source": SOURCE, "rows": {t: len(f) for t, f in frames.items()}})


def _stamp_range(frames: list[pd.DataFrame], cluster: str, hour_ts: list[datetime]) -> pd.DataFrame:
    """`_stamp` of each hour's frame, concatenated: the same frame, with the columns added once (a 30-day
    backfill spent a third of its generation time stamping 6,480 small frames one by one)."""
    frame = pd.concat(frames, ignore_index=True)
    stamps = np.repeat(np.array(hour_ts, dtype="datetime64[us]"), [len(f) for f in frames])
    frame.insert(0, "hour_ts", pd.Series(stamps, dtype="datetime64[us]"))
    frame.insert(0, "cluster", cluster)
    frame["_source"] = SOURCE
    return frame


def extract_demo_hours(cluster: ClusterSettings, hours: list[datetime]) -> ExtractResult:
    """The metrics tables of the demo cluster for `hours` (naive UTC hour starts), `_source='demo'`."""
    topo = _topology_for(cluster)
    raw = [_frames_for_hour(cluster, topo, h, stamp=False) for h in hours]
    tables = ("container_hours", "pod_hours", "node_hours", "namespace_hours", "volume_hours",
              "pod_volume_hours", "service_hours", "gpu_hours", COVERAGE_TABLE, "volume_stats_hours")
    stamps = [_naive(h) for h in hours]
    batches = {t: (_stamp_range([r[t] for r in raw], cluster.name, stamps) if raw else pd.DataFrame())
               for t in tables}
    parts = [{"cluster": cluster.name, "hour_ts": h} for h in stamps]
    absent: dict[str, list[str]] = {}
    if raw:
        cov = batches[COVERAGE_TABLE]
        for h, metric in cov.loc[cov["series_count"] == 0, ["hour_ts", "metric"]].itertuples(index=False):
            absent.setdefault(metric, []).append(h.isoformat())
    return ExtractResult(
        batches=batches,
        partitions=parts,
        metadata={"source": SOURCE, "nodes": len(topo.nodes), "pod_slots": len(topo.slots),
                  "hours": len(parts), "rows": {t: len(f) for t, f in batches.items()}, "absent_series": absent},
    )


def demo_zones(cluster: ClusterSettings) -> list[str]:
    """Carbon zones the demo nodes map to (region -> zone; on-prem via the kubeledger.io/carbon-zone label)."""
    zones = _topology_for(cluster).nodes["_carbon_zone"].dropna().unique().tolist()
    if cluster.carbon_zone and cluster.carbon_zone not in zones:
        zones.append(cluster.carbon_zone)
    return sorted(zones)


def demo_carbon_intensity(zones: list[str], hours: list[datetime]) -> ExtractResult:
    """A diurnal carbon-intensity curve per zone, provider 'demo'; one (zone, hour) a day is left missing."""
    rows, parts = [], []
    for z in zones:
        level = CARBON_LEVELS.get(z, CARBON_DEFAULT_LEVEL)
        phase = _seed("carbon-phase", z) % 5  # zones peak at slightly different hours
        for h in hours:
            hh = _naive(h)
            parts.append({"provider": SOURCE, "zone": z, "hour_ts": hh})
            if (z, hh.hour) == CARBON_GAP:
                continue
            # evening peak, midday solar trough; ±3 % noise fixed by (zone, hour)
            x = 2 * math.pi * (hh.hour - 19 - phase) / 24
            noise = (_seed("carbon", z, hh.isoformat()) % 1000) / 1000 - 0.5
            value = level * (1 + 0.18 * math.cos(x) + 0.06 * math.cos(2 * x) + 0.06 * noise)
            rows.append({"provider": SOURCE, "zone": z, "hour_ts": hh,
                         "carbon_intensity_g_per_kwh": round(max(value, 1.0), 2), "is_estimated": False,
                         "estimation_method": None, "emission_factor_type": "lifecycle", "coverage": 1.0})
    frame = pd.DataFrame(rows, columns=["provider", "zone", "hour_ts", "carbon_intensity_g_per_kwh", "is_estimated",
                                        "estimation_method", "emission_factor_type", "coverage"])
    frame["hour_ts"] = frame["hour_ts"].astype("datetime64[us]")
    frame["is_estimated"] = frame["is_estimated"].astype(bool)
    return ExtractResult(batches={"carbon_intensity_hours": frame}, partitions=parts,
                         metadata={"source": SOURCE, "missing": [CARBON_GAP] if CARBON_GAP[0] in zones else []})
