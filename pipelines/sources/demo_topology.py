"""The demo cluster's topology: nodes, namespaces, controllers, pod slots, schedules, containers, volumes and
services, a pure function of (seed, cluster, size) and cached (pipelines/sources/demo.py describes the generator)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from pipelines.settings import ClusterSettings
from pipelines.sources import demo_scenario
from pipelines.sources.demo_fit import fit_requests
from pipelines.sources.demo_shapes import (
    _APPS,
    _CPU_MENU,
    _EGRESS_CLASSIFIED,
    _REPEAT,
    _STORAGE_CLASS,
    _TEMPLATES,
    BARE,
    CARBON_ZONE_LABEL,
    CRON,
    DAY_S,
    DEMO_FEATURE_NODES,
    DEPLOY,
    DS,
    GIB,
    INSTANCE_TYPES,
    JOB,
    MIB,
    REGION_ZONES,
    SCALE_AWAY_END_S,
    STS,
    _hex,
    _js,
    _seed,
    _uuids,
    _vhash,
)

# --- topology (hour-independent, cached) ----------------------------------------------------------------


@dataclass
class _Topology:
    nodes: pd.DataFrame              # one row per node (node_hours columns + helpers)
    node_daily_end: np.ndarray       # seconds after midnight the node disappears, or DAY_S
    namespaces: pd.DataFrame         # namespace, labels, annotations
    ctrl: pd.DataFrame               # controllers: name, kind, namespace, T, o, labels/annotations JSON
    slots: pd.DataFrame              # pod slots (one per replica / DaemonSet pod / job / bare pod)
    segs: dict[str, np.ndarray]      # schedule segments: slot, T, o, rs, re, node, tag
    cont: pd.DataFrame               # containers of slots (flattened, in slot order)
    cont_offset: np.ndarray          # first container row of each slot
    volumes: pd.DataFrame            # PVs (claimed and released)
    mounts: dict[int, list[str]]     # slot -> claims it mounts
    services: list[dict[str, Any]]   # LoadBalancer services
    gpu_uuid: str | None
    gpu_node: int | None
    gpu_slot: int | None
    burst_cont: int | None           # container that bursts above its node at 10:00 UTC (<= 12 nodes only)
    base: int                        # hash base for (seed, cluster)


def _node_table(cluster: str, n: int, base: int) -> tuple[pd.DataFrame, np.ndarray]:
    rows = []
    daily_end = np.full(n, DAY_S, dtype=np.int64)
    slug = "".join(c if c.isalnum() else "-" for c in cluster.lower()).strip("-")[:20] or "demo"
    hashes = _vhash(base, np.arange(n), 1)
    inst_ids = _hex(hashes, 16)
    pool_hex = {}
    for i in range(n):
        t = _TEMPLATES[i] if i < len(_TEMPLATES) else _REPEAT[(i - len(_TEMPLATES)) % len(_REPEAT)]
        cpu, ram_gib, gpus, gpu_model = INSTANCE_TYPES[t.instance_type]
        labels = {
            "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": t.instance_type,
            "beta.kubernetes.io/instance-type": t.instance_type,
        }
        if t.provider == "aws":
            octet = 0 if t.region == "us-east-1" else 1
            name = f"ip-10-{octet}-{16 + (i // 250) % 240}-{1 + i % 250}"
            name += ".ec2.internal" if t.region == "us-east-1" else f".{t.region}.compute.internal"
            provider_id = f"aws:///{t.zone}/i-0{inst_ids[i]}"
            labels |= {"eks.amazonaws.com/nodegroup": t.pool,
                       "eks.amazonaws.com/capacityType": "SPOT" if t.spot else "ON_DEMAND"}
        elif t.provider == "gcp":
            ph = pool_hex.setdefault(t.pool, _hex(_vhash(base, np.array([len(t.pool)]), 7), 8)[0])
            sfx = np.base_repr((i * 7919 + 1000) % 36**4, 36).lower().rjust(4, "0")
            name = f"gke-{slug}-{t.pool}-{ph}-{sfx}"
            provider_id = f"gce://demo-project/{t.zone}/{name}"
            labels |= {"cloud.google.com/gke-nodepool": t.pool, "cloud.google.com/machine-family": t.instance_type[:2]}
            if t.spot:
                labels["cloud.google.com/gke-spot"] = "true"
        elif t.provider == "azure":
            idx = np.base_repr(i, 36).lower().rjust(6, "0")
            pool_no = 10000000 + _seed(base, t.pool) % 89999999  # one VM scale set per pool
            name = f"aks-{t.pool}-{pool_no}-vmss{idx}"
            vmss = name.rsplit("-", 1)[0] + "-vmss"
            provider_id = ("azure:///subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/"
                           f"mc_demo-rg_{slug}_westeurope/providers/Microsoft.Compute/virtualMachineScaleSets/"
                           f"{vmss}/virtualMachines/{i}")
            labels |= {"kubernetes.azure.com/agentpool": t.pool, "kubernetes.azure.com/mode": "user",
                       "agentpool": t.pool}
        else:  # on-prem: no providerID, no cloud topology labels
            name = "metal-fr-01"  # only the first block has an on-prem node
            provider_id = None
            labels[CARBON_ZONE_LABEL] = "FR"
        if t.region:
            labels |= {"topology.kubernetes.io/region": t.region, "topology.kubernetes.io/zone": t.zone}
        if gpus:
            labels |= {"nvidia.com/gpu.present": "true", "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4"}
        labels["kubernetes.io/hostname"] = name
        if t.role == "scale-away":
            daily_end[i] = SCALE_AWAY_END_S
        cap_ram = ram_gib * GIB
        rows.append({
            "node": name, "provider_id": provider_id, "instance_type": t.instance_type, "region": t.region,
            "zone": t.zone, "labels": _js(labels), "cpu_capacity_cores": float(cpu),
            "ram_capacity_bytes": cap_ram, "gpu_capacity": float(gpus) if gpus else np.nan,
            # kubelet/system reservations, roughly EKS/GKE's formulas
            "cpu_allocatable_cores": round(cpu - 0.06 - 0.01 * (cpu - 1), 3),
            "ram_allocatable_bytes": float(math.floor((cap_ram * 0.92 - 100 * MIB) / 1024) * 1024),
            "gpu_model": gpu_model, "_provider": t.provider, "_role": t.role,
            "_carbon_zone": "FR" if t.provider == "onprem" else REGION_ZONES.get((t.provider, t.region)),
        })
    return pd.DataFrame(rows), daily_end


def _namespaces(n_nodes: int) -> pd.DataFrame:
    base = [
        ("kube-system", {}, {}),
        ("monitoring", {"team": "platform", "env": "prod"}, {"kubeledger.io/cost-center": "CC-1000"}),
        ("team-a", {"team": "team-a", "env": "prod"},
         {"kubeledger.io/cost-center": "CC-1001", "owner": "team-a@example.com"}),
        ("team-b", {"team": "team-b", "env": "staging"}, {}),
        ("payments", {"team": "payments", "env": "prod", "pci": "true"},
         {"kubeledger.io/cost-center": "CC-2001", "owner": "payments@example.com"}),
        ("checkout", {"team": "payments", "env": "prod"}, {"kubeledger.io/cost-center": "CC-2002"}),
        ("search", {"team": "search", "env": "prod"}, {"owner": "search@example.com"}),
        ("data", {"team": "data", "env": "prod"}, {"kubeledger.io/cost-center": "CC-3001"}),
        ("ml", {"team": "ml", "env": "prod"}, {"kubeledger.io/cost-center": "CC-3002"}),
        ("batch", {"team": "data", "env": "prod"}, {}),
    ]
    for k in range(n_nodes // 25):  # more teams in larger clusters
        base.append((f"team-{k + 3:03d}", {"team": f"team-{k + 3:03d}", "env": "prod" if k % 3 else "dev"},
                     {"kubeledger.io/cost-center": f"CC-{4000 + k}"}))
    return pd.DataFrame([
        {"namespace": ns, "labels": _js({"kubernetes.io/metadata.name": ns} | lab), "annotations": _js(ann)}
        for ns, lab, ann in base
    ])


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


@lru_cache(maxsize=8)
def _topology(seed: int, cluster: str, n_nodes: int, pods_per_node: int, cpp: int,
              scenario: str = "default") -> _Topology:
    n_nodes = max(int(n_nodes), 1)
    base = _seed("kubeledger-demo", seed, cluster)
    rng = np.random.default_rng(_seed("topology", seed, cluster, n_nodes, pods_per_node, cpp))
    nodes, daily_end = _node_table(cluster, n_nodes, base)
    namespaces = _namespaces(n_nodes)
    roles = nodes["_role"].tolist()
    provider = nodes["_provider"].tolist()
    scale_away = roles.index("scale-away") if "scale-away" in roles else None
    gpu_node = roles.index("gpu") if "gpu" in roles else None

    def at(i: int) -> int:  # a node index that exists at this size
        return i if i < n_nodes else 0

    b = _Builder(cpp)
    used = np.zeros(n_nodes)  # CPU requested by fixed pods per node
    count = np.zeros(n_nodes, dtype=np.int64)

    def fixed(ctrl: int, node: int, containers: list[tuple], kind: int, period: int, offset: int,
              **kw: Any) -> int:
        sid = b.slot(ctrl, node, containers, **kw)
        stagger = int(rng.integers(0, 120))
        if kind in (DEPLOY, DS, STS):
            _regular_segments(b, sid, kind, period, offset, stagger, node, scale_away,
                              holds_gpu=any(c[5] > 0 for c in containers))
        used[node] += sum(c[1] for c in containers if not np.isnan(c[1]))
        count[node] += 1
        return sid

    nan = np.nan
    # DaemonSets: kube-proxy + the provider's CNI in kube-system, node-exporter in monitoring, on every node.
    week = 7 * DAY_S
    ds_kp = b.controller("kube-proxy", DS, "kube-system", week, 3 * 3600 + 600, {"k8s-app": "kube-proxy"})
    cni = {"aws": ("aws-node", 0.025, nan), "gcp": ("netd", 0.005, 30 * MIB),
           "azure": ("azure-cns", 0.04, 250 * MIB), "onprem": ("calico-node", 0.25, nan)}
    ds_cni = {p: b.controller(name, DS, "kube-system", week, 2 * DAY_S + 5 * 3600, {"k8s-app": name})
              for p, (name, _, _) in cni.items()}
    ds_ne = b.controller("node-exporter", DS, "monitoring", week, 4 * DAY_S + 7200,
                         {"app.kubernetes.io/name": "node-exporter", "app.kubernetes.io/part-of": "kube-prometheus"},
                         {"kubectl.kubernetes.io/default-container": "node-exporter"})
    n_ds = 3 if pods_per_node >= 6 else (2 if pods_per_node >= 3 else 1)
    for i in range(n_nodes):
        # kube-proxy requests CPU but no memory, like EKS/GKE's manifests
        fixed(ds_kp, i, [("kube-proxy", 0.1, nan, nan, nan, nan, 0.004, 35 * MIB)], DS, week,
              3 * 3600 + 600, net=3e3)
        if n_ds >= 2:
            name, c, r = cni[provider[i]]
            fixed(ds_cni[provider[i]], i, [(name, c, r, nan, nan, nan, 0.006, 45 * MIB)], DS, week,
                  2 * DAY_S + 5 * 3600, net=1e3)
        if n_ds >= 3:
            fixed(ds_ne, i, [("node-exporter", 0.1, 180 * MIB, 0.25, 180 * MIB, nan, 0.01, 25 * MIB),
                             ("kube-rbac-proxy", 0.01, 20 * MIB, 0.02, 40 * MIB, nan, 0.001, 15 * MIB)],
                  DS, week, 4 * DAY_S + 7200, net=5e3)

    # Fixed workloads that exercise the models' special cases.
    n = at(1)
    prom = b.controller("prometheus-k8s", STS, "monitoring", week, 6 * DAY_S + 4000,
                        {"app.kubernetes.io/name": "prometheus", "prometheus": "k8s"},
                        {"kubectl.kubernetes.io/default-container": "prometheus"})
    prom_slot = fixed(prom, n, [("prometheus", 0.5, 2 * GIB, nan, 4 * GIB, nan, 0, 0),
                                ("config-reloader", 0.01, 25 * MIB, 0.1, 50 * MIB, nan, 0, 0)],
                      STS, week, 6 * DAY_S + 4000, ordinal=0, net=4e5, eff=0.6)
    pg = b.controller("postgres", STS, "payments", week, 2 * DAY_S + 1800, {"app": "postgres", "team": "payments"})
    pg_slots = [fixed(pg, at(node), [("postgres", 0.5, 1 * GIB, 1.0, 1 * GIB, nan, 0, 0)], STS, week,
                      2 * DAY_S + 1800, ordinal=o, net=8e4, egress=(0.3, 0.02, 0.0), eff=0.4)
                for o, node in enumerate((4, 10))]
    redis_slots = []
    for ns, node in (("team-a", 5), ("team-b", 6)):  # same pod name "redis-0" in two namespaces
        rc = b.controller("redis", STS, ns, week, DAY_S + 999, {"app": "redis", "team": ns})
        redis_slots.append(fixed(rc, at(node), [("redis", 0.1, 256 * MIB, nan, 512 * MIB, nan, 0, 0)], STS, week,
                                 DAY_S + 999, ordinal=0, net=3e4, eff=0.3))
    gpu_slot = None
    if gpu_node is not None:
        inf = b.controller("inference", DEPLOY, "ml", 14 * DAY_S, 5 * DAY_S + 11 * 3600,
                           {"app": "inference", "team": "ml"}, {"prometheus.io/scrape": "true"})
        gpu_slot = fixed(inf, gpu_node, [("triton", 2.0, 8 * GIB, nan, 12 * GIB, 1.0, 0, 0)], DEPLOY, 14 * DAY_S,
                         5 * DAY_S + 11 * 3600, net=1e5, eff=0.5)
    api = b.controller("report-api", DEPLOY, "batch", 3 * DAY_S, DAY_S + 15 * 3600, {"app": "report-api"})
    api_slot = fixed(api, n, [("api", 0.25, 512 * MIB, nan, nan, nan, 0, 0)], DEPLOY, 3 * DAY_S, DAY_S + 15 * 3600,
                     eff=0.4)
    # CronJob "0 */6 * * *": a 20-minute Job pod with a fresh uid every run, sharing report-api's claim.
    cron = b.controller("report-generator", CRON, "batch", 6 * 3600, 0, {"app": "report-generator"})
    cron_slot = b.slot(cron, n, [("generator", 0.5, 1 * GIB, nan, 2 * GIB, nan, 0, 0)], eff=1.3, net=5e4)
    b.seg(cron_slot, 6 * 3600, 0, 5, 1205, n)
    # A plain Job (no CronJob) every day 03:00-03:45.
    mig = b.controller("db-migrate", JOB, "payments", DAY_S, 3 * 3600, {"app": "db-migrate"})
    mig_slot = b.slot(mig, at(4), [("migrate", 0.1, 128 * MIB, nan, nan, nan, 0, 0)], eff=0.8,
                      egress=(0.1, 0.0, 0.0))
    b.seg(mig_slot, DAY_S, 3 * 3600, 10, 2710, at(4))
    used[at(4)] += 0.1
    # A bare pod (no owner, no requests) that runs 09:12-17:40 and mounts a claim, unmounted the rest of the day.
    bare = b.controller("", BARE, "team-a", DAY_S, 0, {})
    bare_slot = b.slot(bare, at(0), [("shell", nan, nan, nan, nan, nan, 0.02, 60 * MIB)], bare_name="debug-shell",
                       net=500.0)
    b.seg(bare_slot, DAY_S, 0, 9 * 3600 + 12 * 60 + 17, 17 * 3600 + 40 * 60 + 9, at(0))
    # A Deployment scaled to zero at night: its LoadBalancer has no pods 19:00-07:00.
    lg = b.controller("legacy-gateway", DEPLOY, "team-b", DAY_S, 7 * 3600, {"app": "legacy-gateway"})
    lg_slot = b.slot(lg, at(9), [("gateway", 0.1, 128 * MIB, nan, nan, nan, 0, 0)], eff=0.3, net=2e4)
    b.seg(lg_slot, DAY_S, 7 * 3600, 30, 12 * 3600, at(9))
    # ImagePullBackOff: scheduled, never running, never charged.
    can = b.controller("checkout-canary", DEPLOY, "checkout", _FOREVER, 0, {"app": "checkout", "track": "canary"})
    b.slot(can, at(10), [("checkout", 0.5, 512 * MIB, 1.0, 1 * GIB, nan, 0, 0)], pending=True)
    b.seg(len(b.slots) - 1, _FOREVER, 0, 0, _FOREVER, at(10))
    used[at(10)] += 0.5  # a scheduled Pending pod still holds its requests
    # Checkout web behind a LoadBalancer; an ingest worker on node 0 that bursts at 10:00 UTC.
    web = b.controller("checkout-web", DEPLOY, "checkout", 2 * DAY_S, 13 * 3600 + 1234,
                       {"app": "checkout-web", "team": "payments"}, {"prometheus.io/scrape": "true"})
    for i in (4, 1, 10):
        fixed(web, at(i), [("web", 0.2, 256 * MIB, 0.5, 512 * MIB, nan, 0, 0),
                           ("istio-proxy", 0.1, 128 * MIB, 2.0, 1 * GIB, nan, 0, 0)],
              DEPLOY, 2 * DAY_S, 13 * 3600 + 1234, net=3e5, egress=(0.2, 0.01, 0.25), eff=0.7)
    ing = b.controller("ingest-worker", DEPLOY, "data", 4 * DAY_S, 2 * DAY_S + 8 * 3600, {"app": "ingest-worker"})
    burst_slot = fixed(ing, at(0), [("worker", 0.25, 256 * MIB, nan, nan, nan, 0, 0)], DEPLOY, 4 * DAY_S,
                       2 * DAY_S + 8 * 3600, eff=0.5, net=1e4)

    # Generic Deployments fill the remaining pod slots, sized to each node's free allocatable CPU.
    alloc = nodes["cpu_allocatable_cores"].to_numpy()
    generic_dep: dict[int, int] = {}  # generic slot -> its Deployment
    quota = np.maximum(pods_per_node - count, 0)
    if gpu_node is not None:
        quota[gpu_node] = min(quota[gpu_node], 2)
    slot_node = np.repeat(np.arange(n_nodes), quota)
    if len(slot_node):
        budget = np.maximum(alloc - used, 0.05)
        fill = rng.uniform(0.4, 0.7, n_nodes)
        target = budget * fill / np.maximum(quota, 1)
        raw = target[slot_node] * rng.lognormal(0, 0.5, len(slot_node))
        mi = np.clip(np.searchsorted(_CPU_MENU, raw), 0, len(_CPU_MENU) - 1)
        for _ in range(40):  # keep Σ requests ≤ 85 % of free allocatable: the scheduler would refuse more
            tot = np.bincount(slot_node, _CPU_MENU[mi], n_nodes)
            over = np.flatnonzero(tot > 0.85 * budget)
            if not len(over):
                break
            order = np.lexsort((-_CPU_MENU[mi], slot_node))
            first = order[np.r_[0, np.flatnonzero(np.diff(slot_node[order])) + 1]]
            first = first[np.isin(slot_node[first], over)]
            mi[first] = np.maximum(mi[first] - 1, 0)
        cpu = _CPU_MENU[mi]
        ratio = (nodes["ram_allocatable_bytes"].to_numpy() / alloc)[slot_node]
        ram = np.maximum(np.round(cpu * ratio * rng.choice([0.25, 0.5, 0.75], len(cpu)) / (64 * MIB)), 1) * 64 * MIB
        sidecar = rng.random(len(cpu)) < 0.4 if cpp == 0 else np.full(len(cpu), cpp > 1)
        # group equal shapes into Deployments of 1-6 replicas
        key_order = np.lexsort((rng.random(len(cpu)), sidecar, ram, cpu))
        k_cpu, k_ram, k_sc = cpu[key_order], ram[key_order], sidecar[key_order]
        change = np.r_[True, (np.diff(k_cpu) != 0) | (np.diff(k_ram) != 0) | (np.diff(k_sc) != 0)]
        cut = change | (rng.random(len(cpu)) < 0.3)
        dep_of = np.cumsum(cut) - 1
        team_ns = [ns for ns in namespaces["namespace"] if ns not in ("kube-system", "monitoring", "ml", "batch")]
        n_dep = int(dep_of[-1]) + 1
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
        for j, s in enumerate(key_order):
            d = dep_of[j]
            c, r = float(cpu[s]), float(ram[s])
            conts: list[tuple] = [("app", c, r, 2 * c if has_limit[d] else nan, r if has_limit[d] else nan,
                                   nan, 0, 0)]
            if sidecar[s]:
                conts.append(("log-shipper", nan, nan, nan, nan, nan, 0.005, 40 * MIB) if no_req_sidecar[d]
                             else ("istio-proxy", 0.1, 128 * MIB, 2.0, 1 * GIB, nan, 0, 0))
            generic_dep[fixed(dep_ctrl[d], int(slot_node[s]), conts, DEPLOY, int(dep_T[d]), int(dep_o[d]),
                              eff=float(dep_eff[d] * rng.uniform(0.85, 1.15)), net=float(dep_net[d]))] = int(d)

    # The scale-away node's afternoon replicas go where the most allocatable CPU is still free.
    if b.moved:
        req = np.zeros(len(b.slots))
        for sid_, _, cpu_r, *_ in b.cont:
            req[sid_] += 0.0 if np.isnan(cpu_r) else cpu_r
        node_of = np.array([x["node"] for x in b.slots])
        free = 0.9 * alloc - np.bincount(node_of, req, n_nodes)
        free[[i for i in range(n_nodes) if roles[i]]] = -np.inf  # not onto the GPU, on-prem or scale-away node
        if not np.isfinite(free).any():
            free[:] = 0.0
        for sid_, st in b.moved:
            dest = int(np.argmax(free))
            free[dest] -= req[sid_]
            b.seg(sid_, DAY_S, 0, SCALE_AWAY_END_S + 60 + st, DAY_S + 30 + st, dest, 2)
    # The scheduler's rule: a node's pods request no more than its allocatable (dense nodes scale their
    # Deployments down; a layout that fits, like the 12-node demo's, is kept as it is).
    b.cont = fit_requests(b.cont, [(x[0], x[5]) for x in b.segs] + [(i, x["node"]) for i, x in enumerate(b.slots)],
                          generic_dep, alloc, nodes["ram_allocatable_bytes"].to_numpy())

    # Volumes: claims of the StatefulSets and shared/unmounted claims; one released PV without a claim.
    vols: list[dict[str, Any]] = []
    mounts: dict[int, list[str]] = {}

    def claim(ns: str | None, pvc: str | None, node: int, req_gib: float, cap_gib: float, slots: list[int]) -> None:
        k = len(vols)
        h = _vhash(base, np.array([k, k]), np.array([11, 12]))
        pv = f"pvc-{_uuids(h[:1], h[1:])[0]}"
        prov = provider[node]
        vol_id = {"aws": f"vol-0{_hex(h[:1], 16)[0]}",
                  "gcp": f"projects/demo-project/zones/{nodes['zone'][node]}/disks/{pv}",
                  "azure": f"/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/mc_demo-rg/"
                           f"providers/Microsoft.Compute/disks/{pv}"}.get(prov)
        vols.append({"pv": pv, "namespace": ns, "pvc": pvc, "storage_class": _STORAGE_CLASS[prov],
                     "pvc_request_bytes": req_gib * GIB if pvc else np.nan, "pv_capacity_bytes": cap_gib * GIB,
                     "provider_volume_id": vol_id, "active_minutes": 60.0})
        for s in slots:
            mounts.setdefault(s, []).append(pvc or "")

    claim("monitoring", "prometheus-k8s-db-prometheus-k8s-0", n, 50, 50, [prom_slot])
    for o, s in enumerate(pg_slots):
        claim("payments", f"data-postgres-{o}", b.slots[s]["node"], 20, 20, [s])
    for ns, s in zip(("team-a", "team-b"), redis_slots, strict=True):
        claim(ns, "data-redis-0", b.slots[s]["node"], 8, 10, [s])  # PV rounded up above the request
    claim("batch", "reports-cache", n, 30, 30, [api_slot, cron_slot])  # two pods concurrently, 4×20 min a day
    claim("team-a", "debug-scratch", at(0), 5, 5, [bare_slot])  # unmounted outside 09:12-17:40
    claim(None, None, at(0), 0, 100, [])  # Released PV, reclaim policy Retain
    showcase: dict[int, dict[str, float]] = {}
    if scenario == demo_scenario.SCENARIO:  # after everything else, so the default demo is unchanged
        first = len(nodes)
        showcase = demo_scenario.add_showcase(b, first, ds_kp, DEPLOY, CRON, DS, _regular_segments)
        nodes = pd.concat([nodes, demo_scenario.showcase_nodes(first)], ignore_index=True)
        daily_end = np.r_[daily_end, np.full(3, DAY_S)]
        namespaces = pd.concat([namespaces, pd.DataFrame(demo_scenario.showcase_namespaces())], ignore_index=True)
        claim(demo_scenario.NAMESPACE, "orphan-data", at(0), 50, 50, [])

    services = [
        {"namespace": "checkout", "service": "checkout-web",
         "ingress": f"a{_hex(_vhash(base, np.array([21])), 16)[0]}-1234567890.us-east-1.elb.amazonaws.com",
         "ctrls": {web}},
        {"namespace": "team-b", "service": "legacy-gateway", "ingress": "34.76.112.18", "ctrls": {lg}},
    ]

    ctrl = pd.DataFrame(b.ctrl)
    slots = pd.DataFrame(b.slots)
    cont = pd.DataFrame(b.cont, columns=["slot", "container", "cpu_req", "ram_req", "cpu_lim", "ram_lim",
                                         "gpu_req", "abs_cpu", "abs_ram", "eff", "_pad"])
    cont["eff"] = cont["eff"] * rng.uniform(0.8, 1.2, len(cont))
    cont["mem_eff"] = rng.uniform(0.4, 0.9, len(cont))
    cont["peak"] = rng.uniform(1.2, 2.5, len(cont))
    for sid_, fixed_factors in showcase.items():
        for col, value in fixed_factors.items():
            cont.loc[cont["slot"] == sid_, col] = value
    seg = np.array(b.segs, dtype=np.int64)
    segs = {k: seg[:, i] for i, k in enumerate(("slot", "T", "o", "rs", "re", "node", "tag"))}
    offset = np.r_[0, np.cumsum(slots["n_cont"].to_numpy())[:-1]].astype(np.int64)
    gh = _vhash(base, np.array([31, 32]))
    # the deliberate over-allocation hour is a feature of the 12-node block; larger (bench) clusters fit their nodes
    burst = int(offset[burst_slot]) if n_nodes <= DEMO_FEATURE_NODES else None
    return _Topology(nodes, daily_end, namespaces, ctrl, slots, segs, cont, offset, pd.DataFrame(vols), mounts,
                     services, f"GPU-{_uuids(gh[:1], gh[1:])[0]}" if gpu_node is not None else None, gpu_node,
                     gpu_slot, burst, base)


def _topology_for(cluster: ClusterSettings) -> _Topology:
    d = cluster.demo
    return _topology(int(d.seed), cluster.name, int(d.nodes), int(d.pods_per_node), int(d.containers_per_pod),
                     d.scenario)

