"""The demo topology's workloads: DaemonSets, the fixed workloads that exercise the models' special cases, the
generic Deployments that fill the remaining pod slots, and the scale-away node's moved replicas.

`_Layout` carries the layout's random generator; the steps draw from it in the order `demo_topology._topology`
calls them, so that order is part of the demo's output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pipelines.sources.demo_shapes import (
    _APPS,
    _CPU_MENU,
    _EGRESS_CLASSIFIED,
    BARE,
    CRON,
    DAY_S,
    DEPLOY,
    DS,
    GIB,
    JOB,
    MIB,
    SCALE_AWAY_END_S,
    STS,
    _js,
)


class _Builder:
    """Accumulates controllers, slots, segments and containers while the topology is laid out."""

    def __init__(self, containers_per_pod: int) -> None:
        self.cpp = containers_per_pod
        self.ctrl: list[dict[str, Any]] = []
        self.slots: list[dict[str, Any]] = []
        self.segs: list[tuple[int, int, int, int, int, int, int]] = []
        self.cont: list[tuple[int, str, float, float, float, float, float, float, float, float, float]] = []
        self.moved: list[tuple[int, int]] = []  # (slot, stagger) rescheduled off the scale-away node

    def controller(self, name: str, kind: int, ns: str, period: int, offset: int,
                   labels: dict[str, str], annotations: dict[str, str] | None = None) -> int:
        self.ctrl.append({"name": name, "kind": kind, "namespace": ns, "T": period, "o": offset,
                          "labels": _js(labels)[:-1], "annotations": _js(annotations or {})})
        return len(self.ctrl) - 1

    def slot(self, ctrl: int, node: int, containers: list[tuple], *, ordinal: int = -1, pending: bool = False,
             net: float = 2e4, egress: tuple[float, float, float] | None = None, eff: float = 0.5,
             bare_name: str | None = None) -> int:
        """containers: (name, cpu_req, ram_req, cpu_lim, ram_lim, gpu_req, abs_cpu, abs_ram_bytes)."""
        sid = len(self.slots)
        if self.cpp:  # exactly N containers: truncate or pad with small sidecars
            containers = list(containers[: self.cpp])
            while len(containers) < self.cpp:
                j = len(containers)
                containers.append((f"sidecar-{j}", 0.01, 32 * MIB, np.nan, 64 * MIB, np.nan, 0.004, 20 * MIB))
        if egress is None and self.ctrl[ctrl]["namespace"] in _EGRESS_CLASSIFIED:
            egress = (0.15, 0.02, 0.1)
        eg = egress or (np.nan, np.nan, np.nan)
        self.slots.append({"ctrl": ctrl, "node": node, "ordinal": ordinal, "pending": pending,
                           "net": net, "eg_zone": eg[0], "eg_region": eg[1], "eg_internet": eg[2],
                           "n_cont": len(containers), "bare_name": bare_name})
        for c in containers:
            self.cont.append((sid, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], eff, 0.0))
        return sid

    def seg(self, slot: int, period: int, offset: int, rs: int, re: int, node: int, tag: int = 0) -> None:
        self.segs.append((slot, period, offset, rs, re, node, tag))


_FOREVER = 2**40  # a period longer than any backfill: one instance, one uid


def _regular_segments(b: _Builder, sid: int, kind: int, period: int, offset: int, stagger: int, node: int,
                      scale_away: int | None, holds_gpu: bool = False) -> None:
    """Long-lived pods: replaced once per period (rollout/restart). On the scale-away node they run
    00:00-14:20 every day; the afternoon replica of a non-DaemonSet pod is placed later (`b.moved`). A pod that
    holds a GPU is never surged: the scheduler keeps its replacement Pending until the device is released."""
    if node == scale_away:
        b.seg(sid, DAY_S, 0, 30 + stagger % 60, SCALE_AWAY_END_S, node, 1)
        if kind != DS:
            b.moved.append((sid, stagger % 60))
        return
    if kind == DEPLOY and not holds_gpu:  # surge: the new pod starts, the old one ends 20 s later
        b.seg(sid, period, offset, stagger, period + stagger + 20, node)
    else:  # DaemonSet/StatefulSet, a GPU pod: the old pod ends, the replacement starts 5 s later
        b.seg(sid, period, offset, stagger + 5, period + stagger, node)


class _Layout:
    """A topology being laid out: its nodes, the builder, the CPU each node's fixed pods request, and the
    generator of the layout's random draws (each fixed pod's stagger as it is placed, the generic Deployments,
    then the containers' usage factors)."""

    def __init__(self, base: int, rng_seed: int, nodes: pd.DataFrame, daily_end: np.ndarray,
                 namespaces: pd.DataFrame, pods_per_node: int, cpp: int) -> None:
        self.n_nodes, self.pods_per_node, self.cpp = len(nodes), pods_per_node, cpp
        self.base = base
        self.rng = np.random.default_rng(rng_seed)
        self.nodes, self.daily_end, self.namespaces = nodes, daily_end, namespaces
        self.roles: list[str] = self.nodes["_role"].tolist()
        self.provider: list[str] = self.nodes["_provider"].tolist()
        self.alloc: np.ndarray = self.nodes["cpu_allocatable_cores"].to_numpy()
        self.scale_away = self.roles.index("scale-away") if "scale-away" in self.roles else None
        self.gpu_node = self.roles.index("gpu") if "gpu" in self.roles else None
        self.b = _Builder(cpp)
        self.used = np.zeros(self.n_nodes)  # CPU requested by fixed pods per node
        self.count = np.zeros(self.n_nodes, dtype=np.int64)

    def at(self, i: int) -> int:
        """A node index that exists at this size."""
        return i if i < self.n_nodes else 0

    def fixed(self, ctrl: int, node: int, containers: list[tuple], kind: int, period: int, offset: int,
              **kw: Any) -> int:
        """Add a slot on `node` and draw its stagger; a Deployment, DaemonSet or StatefulSet slot gets its
        pods replaced once per period (`_regular_segments`)."""
        sid = self.b.slot(ctrl, node, containers, **kw)
        stagger = int(self.rng.integers(0, 120))
        if kind in (DEPLOY, DS, STS):
            _regular_segments(self.b, sid, kind, period, offset, stagger, node, self.scale_away,
                              holds_gpu=any(c[5] > 0 for c in containers))
        self.used[node] += sum(c[1] for c in containers if not np.isnan(c[1]))
        self.count[node] += 1
        return sid


@dataclass
class _Landmarks:
    """The fixed workloads that later steps refer to: claims, services, the GPU and the burst."""
    prom_slot: int
    pg_slots: list[int]
    redis_slots: list[int]
    gpu_slot: int | None
    api_slot: int
    cron_slot: int
    bare_slot: int
    legacy_gateway: int   # controller behind a LoadBalancer, scaled to zero at night
    web: int              # checkout-web's controller, behind a LoadBalancer
    burst_slot: int


_WEEK = 7 * DAY_S


def _daemonsets(lay: _Layout) -> int:
    """kube-proxy + the provider's CNI in kube-system, node-exporter in monitoring, on every node (fewer of them
    when pods_per_node is small). Returns kube-proxy's controller (the scenario's pool runs it too)."""
    b, nan, week = lay.b, np.nan, _WEEK
    ds_kp = b.controller("kube-proxy", DS, "kube-system", week, 3 * 3600 + 600, {"k8s-app": "kube-proxy"})
    cni = {"aws": ("aws-node", 0.025, nan), "gcp": ("netd", 0.005, 30 * MIB),
           "azure": ("azure-cns", 0.04, 250 * MIB), "onprem": ("calico-node", 0.25, nan)}
    ds_cni = {p: b.controller(name, DS, "kube-system", week, 2 * DAY_S + 5 * 3600, {"k8s-app": name})
              for p, (name, _, _) in cni.items()}
    ds_ne = b.controller("node-exporter", DS, "monitoring", week, 4 * DAY_S + 7200,
                         {"app.kubernetes.io/name": "node-exporter", "app.kubernetes.io/part-of": "kube-prometheus"},
                         {"kubectl.kubernetes.io/default-container": "node-exporter"})
    n_ds = 3 if lay.pods_per_node >= 6 else (2 if lay.pods_per_node >= 3 else 1)
    for i in range(lay.n_nodes):
        # kube-proxy requests CPU but no memory, like EKS/GKE's manifests
        lay.fixed(ds_kp, i, [("kube-proxy", 0.1, nan, nan, nan, nan, 0.004, 35 * MIB)], DS, week,
                  3 * 3600 + 600, net=3e3)
        if n_ds >= 2:
            name, c, r = cni[lay.provider[i]]
            lay.fixed(ds_cni[lay.provider[i]], i, [(name, c, r, nan, nan, nan, 0.006, 45 * MIB)], DS, week,
                      2 * DAY_S + 5 * 3600, net=1e3)
        if n_ds >= 3:
            lay.fixed(ds_ne, i, [("node-exporter", 0.1, 180 * MIB, 0.25, 180 * MIB, nan, 0.01, 25 * MIB),
                                 ("kube-rbac-proxy", 0.01, 20 * MIB, 0.02, 40 * MIB, nan, 0.001, 15 * MIB)],
                      DS, week, 4 * DAY_S + 7200, net=5e3)
    return ds_kp


def _fixed_workloads(lay: _Layout, kube_proxy: int) -> _Landmarks:
    """Fixed workloads that exercise the models' special cases, in a fixed order (each draws its stagger)."""
    prom_slot, pg_slots, redis_slots = _stateful_sets(lay)
    gpu_slot = _gpu_inference(lay)
    api_slot, cron_slot = _report_jobs(lay)
    bare_slot, legacy_gateway = _odd_pods(lay)
    web, burst_slot = _web_and_worker(lay)
    return _Landmarks(prom_slot, pg_slots, redis_slots, gpu_slot, api_slot, cron_slot, bare_slot, legacy_gateway,
                      web, burst_slot)


def _stateful_sets(lay: _Layout) -> tuple[int, list[int], list[int]]:
    """Prometheus, two Postgres replicas, and "redis-0" in two namespaces (same pod name): their slots."""
    b, nan, week, n = lay.b, np.nan, _WEEK, lay.at(1)
    prom = b.controller("prometheus-k8s", STS, "monitoring", week, 6 * DAY_S + 4000,
                        {"app.kubernetes.io/name": "prometheus", "prometheus": "k8s"},
                        {"kubectl.kubernetes.io/default-container": "prometheus"})
    prom_slot = lay.fixed(prom, n, [("prometheus", 0.5, 2 * GIB, nan, 4 * GIB, nan, 0, 0),
                                    ("config-reloader", 0.01, 25 * MIB, 0.1, 50 * MIB, nan, 0, 0)],
                          STS, week, 6 * DAY_S + 4000, ordinal=0, net=4e5, eff=0.6)
    pg = b.controller("postgres", STS, "payments", week, 2 * DAY_S + 1800, {"app": "postgres", "team": "payments"})
    pg_slots = [lay.fixed(pg, lay.at(node), [("postgres", 0.5, 1 * GIB, 1.0, 1 * GIB, nan, 0, 0)], STS, week,
                          2 * DAY_S + 1800, ordinal=o, net=8e4, egress=(0.3, 0.02, 0.0), eff=0.4)
                for o, node in enumerate((4, 10))]
    redis_slots = []
    for ns, node in (("team-a", 5), ("team-b", 6)):
        rc = b.controller("redis", STS, ns, week, DAY_S + 999, {"app": "redis", "team": ns})
        redis_slots.append(lay.fixed(rc, lay.at(node), [("redis", 0.1, 256 * MIB, nan, 512 * MIB, nan, 0, 0)], STS,
                                     week, DAY_S + 999, ordinal=0, net=3e4, eff=0.3))
    return prom_slot, pg_slots, redis_slots


def _gpu_inference(lay: _Layout) -> int | None:
    """The inference Deployment holding the GPU node's device: its slot (None without a GPU node)."""
    if lay.gpu_node is None:
        return None
    inf = lay.b.controller("inference", DEPLOY, "ml", 14 * DAY_S, 5 * DAY_S + 11 * 3600,
                           {"app": "inference", "team": "ml"}, {"prometheus.io/scrape": "true"})
    return lay.fixed(inf, lay.gpu_node, [("triton", 2.0, 8 * GIB, np.nan, 12 * GIB, 1.0, 0, 0)], DEPLOY, 14 * DAY_S,
                     5 * DAY_S + 11 * 3600, net=1e5, eff=0.5)


def _report_jobs(lay: _Layout) -> tuple[int, int]:
    """report-api, the report-generator CronJob sharing its claim, and a plain daily Job: (api, cron) slots."""
    b, nan, n = lay.b, np.nan, lay.at(1)
    api = b.controller("report-api", DEPLOY, "batch", 3 * DAY_S, DAY_S + 15 * 3600, {"app": "report-api"})
    api_slot = lay.fixed(api, n, [("api", 0.25, 512 * MIB, nan, nan, nan, 0, 0)], DEPLOY, 3 * DAY_S,
                         DAY_S + 15 * 3600, eff=0.4)
    # CronJob "0 */6 * * *": a 20-minute Job pod with a fresh uid every run, sharing report-api's claim.
    cron = b.controller("report-generator", CRON, "batch", 6 * 3600, 0, {"app": "report-generator"})
    cron_slot = b.slot(cron, n, [("generator", 0.5, 1 * GIB, nan, 2 * GIB, nan, 0, 0)], eff=1.3, net=5e4)
    b.seg(cron_slot, 6 * 3600, 0, 5, 1205, n)
    # A plain Job (no CronJob) every day 03:00-03:45.
    mig = b.controller("db-migrate", JOB, "payments", DAY_S, 3 * 3600, {"app": "db-migrate"})
    mig_slot = b.slot(mig, lay.at(4), [("migrate", 0.1, 128 * MIB, nan, nan, nan, 0, 0)], eff=0.8,
                      egress=(0.1, 0.0, 0.0))
    b.seg(mig_slot, DAY_S, 3 * 3600, 10, 2710, lay.at(4))
    lay.used[lay.at(4)] += 0.1
    return api_slot, cron_slot


def _odd_pods(lay: _Layout) -> tuple[int, int]:
    """A bare pod, a Deployment scaled to zero at night and a canary stuck Pending: (bare slot, gateway ctrl)."""
    b, nan = lay.b, np.nan
    # A bare pod (no owner, no requests) that runs 09:12-17:40 and mounts a claim, unmounted the rest of the day.
    bare = b.controller("", BARE, "team-a", DAY_S, 0, {})
    bare_slot = b.slot(bare, lay.at(0), [("shell", nan, nan, nan, nan, nan, 0.02, 60 * MIB)],
                       bare_name="debug-shell", net=500.0)
    b.seg(bare_slot, DAY_S, 0, 9 * 3600 + 12 * 60 + 17, 17 * 3600 + 40 * 60 + 9, lay.at(0))
    # A Deployment scaled to zero at night: its LoadBalancer has no pods 19:00-07:00.
    lg = b.controller("legacy-gateway", DEPLOY, "team-b", DAY_S, 7 * 3600, {"app": "legacy-gateway"})
    lg_slot = b.slot(lg, lay.at(9), [("gateway", 0.1, 128 * MIB, nan, nan, nan, 0, 0)], eff=0.3, net=2e4)
    b.seg(lg_slot, DAY_S, 7 * 3600, 30, 12 * 3600, lay.at(9))
    # ImagePullBackOff: scheduled, never running, never charged.
    can = b.controller("checkout-canary", DEPLOY, "checkout", _FOREVER, 0, {"app": "checkout", "track": "canary"})
    b.slot(can, lay.at(10), [("checkout", 0.5, 512 * MIB, 1.0, 1 * GIB, nan, 0, 0)], pending=True)
    b.seg(len(b.slots) - 1, _FOREVER, 0, 0, _FOREVER, lay.at(10))
    lay.used[lay.at(10)] += 0.5  # a scheduled Pending pod still holds its requests
    return bare_slot, lg


def _web_and_worker(lay: _Layout) -> tuple[int, int]:
    """Checkout web behind a LoadBalancer; an ingest worker on node 0 that bursts at 10:00 UTC.
    Returns (web controller, worker slot)."""
    b, nan = lay.b, np.nan
    web = b.controller("checkout-web", DEPLOY, "checkout", 2 * DAY_S, 13 * 3600 + 1234,
                       {"app": "checkout-web", "team": "payments"}, {"prometheus.io/scrape": "true"})
    for i in (4, 1, 10):
        lay.fixed(web, lay.at(i), [("web", 0.2, 256 * MIB, 0.5, 512 * MIB, nan, 0, 0),
                                   ("istio-proxy", 0.1, 128 * MIB, 2.0, 1 * GIB, nan, 0, 0)],
                  DEPLOY, 2 * DAY_S, 13 * 3600 + 1234, net=3e5, egress=(0.2, 0.01, 0.25), eff=0.7)
    ing = b.controller("ingest-worker", DEPLOY, "data", 4 * DAY_S, 2 * DAY_S + 8 * 3600, {"app": "ingest-worker"})
    burst_slot = lay.fixed(ing, lay.at(0), [("worker", 0.25, 256 * MIB, nan, nan, nan, 0, 0)], DEPLOY, 4 * DAY_S,
                           2 * DAY_S + 8 * 3600, eff=0.5, net=1e4)
    return web, burst_slot


def _generic_deployments(lay: _Layout) -> dict[int, int]:
    """Generic Deployments fill the remaining pod slots, sized to each node's free allocatable CPU.
    Returns generic slot -> its Deployment."""
    quota = np.maximum(lay.pods_per_node - lay.count, 0)
    if lay.gpu_node is not None:
        quota[lay.gpu_node] = min(quota[lay.gpu_node], 2)
    slot_node = np.repeat(np.arange(lay.n_nodes), quota)
    if not len(slot_node):
        return {}
    cpu, ram, sidecar = _generic_shapes(lay, quota, slot_node)
    key_order, dep_of = _group_shapes(lay.rng, cpu, ram, sidecar)
    deps = _generic_controllers(lay, int(dep_of[-1]) + 1)
    nan, rng = np.nan, lay.rng
    generic_dep: dict[int, int] = {}
    for j, s in enumerate(key_order):
        d = dep_of[j]
        c, r = float(cpu[s]), float(ram[s])
        conts: list[tuple] = [("app", c, r, 2 * c if deps.has_limit[d] else nan, r if deps.has_limit[d] else nan,
                               nan, 0, 0)]
        if sidecar[s]:
            conts.append(("log-shipper", nan, nan, nan, nan, nan, 0.005, 40 * MIB) if deps.no_req_sidecar[d]
                         else ("istio-proxy", 0.1, 128 * MIB, 2.0, 1 * GIB, nan, 0, 0))
        # the efficiency is drawn before the slot's stagger (argument before call)
        generic_dep[lay.fixed(deps.ctrl[d], int(slot_node[s]), conts, DEPLOY, int(deps.T[d]), int(deps.o[d]),
                              eff=float(deps.eff[d] * rng.uniform(0.85, 1.15)), net=float(deps.net[d]))] = int(d)
    return generic_dep


def _generic_shapes(lay: _Layout, quota: np.ndarray,
                    slot_node: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CPU and memory request of each generic slot and whether it has a sidecar. Draws: fill, size, memory
    ratio, then sidecars (realistic mix only)."""
    rng, n_nodes, alloc = lay.rng, lay.n_nodes, lay.alloc
    budget = np.maximum(alloc - lay.used, 0.05)
    fill = rng.uniform(0.4, 0.7, n_nodes)
    target = budget * fill / np.maximum(quota, 1)
    raw = target[slot_node] * rng.lognormal(0, 0.5, len(slot_node))
    mi = np.clip(np.searchsorted(_CPU_MENU, raw), 0, len(_CPU_MENU) - 1)
    cpu = _CPU_MENU[_within_budget(mi, slot_node, budget, n_nodes)]
    ratio = (lay.nodes["ram_allocatable_bytes"].to_numpy() / alloc)[slot_node]
    ram = np.maximum(np.round(cpu * ratio * rng.choice([0.25, 0.5, 0.75], len(cpu)) / (64 * MIB)), 1) * 64 * MIB
    cpp = lay.cpp
    sidecar = rng.random(len(cpu)) < 0.4 if cpp == 0 else np.full(len(cpu), cpp > 1)
    return cpu, ram, sidecar


def _within_budget(mi: np.ndarray, slot_node: np.ndarray, budget: np.ndarray, n_nodes: int) -> np.ndarray:
    """Menu indices stepped down, largest first per node, until Σ requests ≤ 85 % of free allocatable (the
    scheduler would refuse more); at most 40 rounds. Updates `mi` in place and returns it."""
    for _ in range(40):
        tot = np.bincount(slot_node, _CPU_MENU[mi], n_nodes)
        over = np.flatnonzero(tot > 0.85 * budget)
        if not len(over):
            break
        order = np.lexsort((-_CPU_MENU[mi], slot_node))
        first = order[np.r_[0, np.flatnonzero(np.diff(slot_node[order])) + 1]]
        first = first[np.isin(slot_node[first], over)]
        mi[first] = np.maximum(mi[first] - 1, 0)
    return mi


def _group_shapes(rng: np.random.Generator, cpu: np.ndarray, ram: np.ndarray,
                  sidecar: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal shapes grouped into Deployments of 1-6 replicas: the slots in grouped order and the Deployment of
    each position in it. Draws: the order within a shape, then the cuts."""
    key_order = np.lexsort((rng.random(len(cpu)), sidecar, ram, cpu))
    k_cpu, k_ram, k_sc = cpu[key_order], ram[key_order], sidecar[key_order]
    change = np.r_[True, (np.diff(k_cpu) != 0) | (np.diff(k_ram) != 0) | (np.diff(k_sc) != 0)]
    cut = change | (rng.random(len(cpu)) < 0.3)
    return key_order, np.cumsum(cut) - 1


@dataclass
class _Deployments:
    """The generic Deployments' drawn properties, one entry per Deployment."""
    ctrl: list[int]
    T: np.ndarray                 # rollout period (s)
    o: np.ndarray                 # rollout offset (s)
    eff: np.ndarray               # usage / request
    net: np.ndarray               # network bytes per running minute
    no_req_sidecar: np.ndarray    # sidecar is a log shipper without requests
    has_limit: np.ndarray


def _generic_controllers(lay: _Layout, n_dep: int) -> _Deployments:
    """Namespace, app, rollout schedule, efficiency and traffic of each generic Deployment, and its controller."""
    rng, b = lay.rng, lay.b
    team_ns = [ns for ns in lay.namespaces["namespace"] if ns not in ("kube-system", "monitoring", "ml", "batch")]
    dep_ns = rng.integers(0, len(team_ns), n_dep)
    dep_app = rng.integers(0, len(_APPS), n_dep)
    dep_T = rng.choice([1, 2, 3, 4, 7], n_dep) * DAY_S
    dep_o = (rng.random(n_dep) * dep_T).astype(np.int64)
    # usage/request: most under-use their requests, ~8 % run above them
    dep_eff = np.where(rng.random(n_dep) < 0.08, rng.uniform(1.1, 1.8, n_dep), rng.lognormal(np.log(0.5), 0.35, n_dep))
    dep_net = rng.lognormal(np.log(2e4), 1.0, n_dep)
    no_req_sidecar = rng.random(n_dep) < 0.5  # log shippers usually run without requests
    has_limit = rng.random(n_dep) < 0.4
    seen: dict[tuple[str, str], int] = {}
    dep_ctrl = []
    for d in range(n_dep):
        ns, app = team_ns[dep_ns[d]], _APPS[dep_app[d]]
        k = seen.get((ns, app), 0)
        seen[(ns, app)] = k + 1
        name = app if k == 0 else f"{app}-{k + 1}"
        ann = {"prometheus.io/scrape": "true", "prometheus.io/port": "8080"} if d % 3 == 0 else {}
        dep_ctrl.append(b.controller(name, DEPLOY, ns, int(dep_T[d]), int(dep_o[d]),
                                     {"app": name, "app.kubernetes.io/name": app} |
                                     ({"team": ns} if d % 2 else {}), ann))
    return _Deployments(dep_ctrl, dep_T, dep_o, dep_eff, dep_net, no_req_sidecar, has_limit)


def _move_scale_away(lay: _Layout) -> None:
    """The scale-away node's afternoon replicas go where the most allocatable CPU is still free."""
    b, n_nodes = lay.b, lay.n_nodes
    if not b.moved:
        return
    req = np.zeros(len(b.slots))
    for sid_, _, cpu_r, *_ in b.cont:
        req[sid_] += 0.0 if np.isnan(cpu_r) else cpu_r
    node_of = np.array([x["node"] for x in b.slots])
    free = 0.9 * lay.alloc - np.bincount(node_of, req, n_nodes)
    free[[i for i in range(n_nodes) if lay.roles[i]]] = -np.inf  # not onto the GPU, on-prem or scale-away node
    if not np.isfinite(free).any():
        free[:] = 0.0
    for sid_, st in b.moved:
        dest = int(np.argmax(free))
        free[dest] -= req[sid_]
        b.seg(sid_, DAY_S, 0, SCALE_AWAY_END_S + 60 + st, DAY_S + 30 + st, dest, 2)
