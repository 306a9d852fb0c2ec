"""A deterministic synthetic cluster that lands the same raw tables as the Prometheus extractor.

Every value is a pure function of (demo seed, cluster name, hour): the cluster's shape (nodes, controllers,
pod slots, requests) comes from a topology seeded by (seed, cluster) and cached; pod identities come from a
periodic schedule per slot (rollouts, CronJob runs, daily windows), hashed by (slot, period index); usage noise
comes from a Generator seeded by (seed, cluster, hour). So an hour generated alone equals the same hour
generated inside any batch, and backfills over any date need no setup.

Units follow sql/raw/10_metrics.sql: cores, bytes, seconds, minutes. NULL (NaN/None) = not observed.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from pipelines.settings import ClusterSettings
from pipelines.sources import demo_scenario
from pipelines.sources.base import COVERAGE_TABLE, OPTIONAL_SERIES, ExtractResult, hour_floor

SOURCE = "demo"
GIB = float(2**30)
MIB = float(2**20)
DAY_S = 86_400
SCALE_AWAY_END_S = 14 * 3600 + 20 * 60  # the autoscaled node is gone at 14:20 UTC every day
CARBON_ZONE_LABEL = "kubeledger.io/carbon-zone"

# Real instance shapes: (vCPU, GiB, GPUs, GPU model).
INSTANCE_TYPES: dict[str, tuple[float, float, int, str | None]] = {
    "m5.large": (2, 8, 0, None),
    "m5.xlarge": (4, 16, 0, None),
    "c5.2xlarge": (8, 16, 0, None),
    "g4dn.xlarge": (4, 16, 1, "Tesla T4"),
    "n2-standard-4": (4, 16, 0, None),
    "e2-standard-8": (8, 32, 0, None),
    "Standard_D4s_v3": (4, 16, 0, None),
    "custom-bare-metal": (16, 64, 0, None),
}

REGION_ZONES: dict[tuple[str, str | None], str] = {
    ("aws", "us-east-1"): "US-MIDA-PJM",
    ("aws", "eu-west-1"): "IE",
    ("gcp", "europe-west1"): "BE",
    ("azure", "westeurope"): "NL",
}

CARBON_LEVELS: dict[str, float] = {
    "FR": 50.0, "DE": 350.0, "US-MIDA-PJM": 400.0, "IE": 300.0, "BE": 150.0, "NL": 350.0,
    "US-CAL-CISO": 250.0, "SE-SE3": 30.0,
}
CARBON_DEFAULT_LEVEL = 300.0
CARBON_GAP = ("BE", 13)  # (zone, UTC hour): left missing every day so the fallback path runs


@dataclass(frozen=True)
class _Template:
    provider: str
    instance_type: str
    region: str | None
    zone: str | None
    pool: str
    spot: bool = False
    role: str = ""  # gpu | onprem | scale-away


# The first 12 templates carry every feature; larger clusters repeat the plain ones (no second GPU,
# on-prem or scale-away node), smaller ones keep the most important features first.
_TEMPLATES: tuple[_Template, ...] = (
    _Template("aws", "m5.large", "us-east-1", "us-east-1a", "general"),
    _Template("aws", "m5.xlarge", "us-east-1", "us-east-1b", "general"),
    _Template("aws", "g4dn.xlarge", "us-east-1", "us-east-1c", "gpu", role="gpu"),
    _Template("onprem", "custom-bare-metal", None, None, "metal", role="onprem"),
    _Template("aws", "c5.2xlarge", "us-east-1", "us-east-1a", "spot-compute", spot=True),
    _Template("gcp", "n2-standard-4", "europe-west1", "europe-west1-b", "default-pool"),
    _Template("azure", "Standard_D4s_v3", "westeurope", "westeurope-1", "agentpool"),
    _Template("aws", "m5.xlarge", "us-east-1", "us-east-1c", "burst", role="scale-away"),
    _Template("gcp", "e2-standard-8", "europe-west1", "europe-west1-c", "spot-pool", spot=True),
    _Template("aws", "m5.large", "eu-west-1", "eu-west-1a", "general-eu"),
    _Template("aws", "c5.2xlarge", "us-east-1", "us-east-1b", "compute"),
    _Template("aws", "m5.xlarge", "eu-west-1", "eu-west-1b", "spot-eu", spot=True),
)
_REPEAT = tuple(t for t in _TEMPLATES if not t.role)
_STORAGE_CLASS = {"aws": "gp3", "gcp": "pd-ssd", "azure": "managed-csi", "onprem": "local-path"}

# Pod kinds
DEPLOY, STS, DS, CRON, JOB, BARE = range(6)
_KIND_OWNER = {DEPLOY: "ReplicaSet", STS: "StatefulSet", DS: "DaemonSet", CRON: "Job", JOB: "Job", BARE: None}
_KIND_CTRL = {DEPLOY: "Deployment", STS: "StatefulSet", DS: "DaemonSet", CRON: "CronJob", JOB: "Job", BARE: None}

_ALPHA = np.frombuffer(b"bcdfghjklmnpqrstvwxz2456789", np.uint8)  # Kubernetes' safe name alphabet
_HEXC = np.frombuffer(b"0123456789abcdef", np.uint8)
_CPU_MENU = np.array([0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0])
_APPS = ("web", "api", "worker", "frontend", "backend", "cart", "catalog", "auth", "notifier", "gateway",
         "ingest", "scheduler", "recommender", "billing", "ledger", "reporting", "thumbnailer", "mailer",
         "session", "pricing")
_EGRESS_CLASSIFIED = frozenset({"payments", "checkout", "team-a"})  # network-costs DaemonSet only there

# --- stable hashing ------------------------------------------------------------------------------------


def _seed(*parts: object) -> int:
    """A 63-bit seed from hashlib (Python's hash() is salted per process)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def _mix(x: np.ndarray) -> np.ndarray:
    # splitmix64 finaliser: a fast, vectorised, well-spread integer hash
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _vhash(base: int, *parts: np.ndarray | int) -> np.ndarray:
    n = max((len(p) for p in parts if isinstance(p, np.ndarray)), default=1)
    x = np.full(n, np.uint64(base & 0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for p in parts:
            v = np.asarray(p, dtype=np.int64).astype(np.uint64)
            x = _mix(x ^ (v + np.uint64(0x9E3779B97F4A7C15)))
    return x


def _alpha(h: np.ndarray, length: int) -> np.ndarray:
    """`length` characters of the safe alphabet per hash (base-27 digits)."""
    out = np.empty((len(h), length), np.uint8)
    x = h.copy()
    for i in range(length):
        out[:, i] = _ALPHA[(x % np.uint64(27)).astype(np.intp)]
        x = x // np.uint64(27)
    return out.view(f"S{length}").ravel().astype(f"U{length}")


def _hex(h: np.ndarray, length: int) -> np.ndarray:
    out = np.empty((len(h), length), np.uint8)
    for i in range(length):
        out[:, i] = _HEXC[((h >> np.uint64(60 - 4 * (i % 16))) & np.uint64(15)).astype(np.intp)]
    return out.view(f"S{length}").ravel().astype(f"U{length}")


_UUID_POS = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])


def _uuids(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """RFC 4122 version-4 shaped uuids from two 64-bit hashes."""
    nib = np.empty((len(a), 32), np.uint8)
    for i in range(16):
        shift = np.uint64(60 - 4 * i)
        nib[:, i] = ((a >> shift) & np.uint64(15)).astype(np.uint8)
        nib[:, 16 + i] = ((b >> shift) & np.uint64(15)).astype(np.uint8)
    nib[:, 12] = 4
    nib[:, 16] = 8 | (nib[:, 16] & 3)
    out = np.full((len(a), 36), ord("-"), np.uint8)
    out[:, _UUID_POS] = _HEXC[nib]
    return out.view("S36").ravel().astype("U36")


def _js(d: dict[str, Any]) -> str:
    return json.dumps(d, separators=(",", ":"), sort_keys=True)


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
    burst_cont: int | None           # container that bursts above its node at 10:00 UTC
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
                      scale_away: int | None) -> None:
    """Long-lived pods: replaced once per period (rollout/restart). On the scale-away node they run
    00:00-14:20 every day; the afternoon replica of a non-DaemonSet pod is placed later (`b.moved`)."""
    if node == scale_away:
        b.seg(sid, DAY_S, 0, 30 + stagger % 60, SCALE_AWAY_END_S, node, 1)
        if kind != DS:
            b.moved.append((sid, stagger % 60))
        return
    if kind == DEPLOY:  # surge: the new pod starts, the old one ends 20 s later
        b.seg(sid, period, offset, stagger, period + stagger + 20, node)
    else:  # DaemonSet/StatefulSet: old pod ends, the replacement starts 5 s later
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
            _regular_segments(b, sid, kind, period, offset, stagger, node, scale_away)
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
            fixed(dep_ctrl[d], int(slot_node[s]), conts, DEPLOY, int(dep_T[d]), int(dep_o[d]),
                  eff=float(dep_eff[d] * rng.uniform(0.85, 1.15)), net=float(dep_net[d]))

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
        namespaces = pd.concat([namespaces, pd.DataFrame([demo_scenario.showcase_namespace()])], ignore_index=True)
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
    burst = int(offset[burst_slot])
    return _Topology(nodes, daily_end, namespaces, ctrl, slots, segs, cont, offset, pd.DataFrame(vols), mounts,
                     services, f"GPU-{_uuids(gh[:1], gh[1:])[0]}" if gpu_node is not None else None, gpu_node,
                     gpu_slot, burst, base)


def _topology_for(cluster: ClusterSettings) -> _Topology:
    d = cluster.demo
    return _topology(int(d.seed), cluster.name, int(d.nodes), int(d.pods_per_node), int(d.containers_per_pod),
                     d.scenario)


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


def _frames_for_hour(cluster: ClusterSettings, topo: _Topology, h: datetime) -> dict[str, pd.DataFrame]:
    H = _epoch(h)
    hour_ts = _naive(h)
    hod = (H % DAY_S) // 3600
    rng = np.random.default_rng(_seed("hour", cluster.demo.seed, cluster.name, H))
    name = cluster.name
    nodes = topo.nodes

    # Nodes: all present, except the scale-away node after 14:20.
    day0 = H - H % DAY_S
    n_first, n_last = _minutes(np.full(len(nodes), day0), day0 + topo.node_daily_end, H)
    node_rm = (n_last - n_first).astype(float)
    node_on = node_rm > 0
    node_cols = ["node", "provider_id", "instance_type", "region", "zone", "labels", "cpu_capacity_cores",
                 "ram_capacity_bytes", "gpu_capacity", "cpu_allocatable_cores", "ram_allocatable_bytes", "gpu_model"]
    node_hours = nodes.loc[node_on, node_cols].assign(running_minutes=node_rm[node_on])

    # Pod instances: candidate period indices around the hour, kept when their minutes overlap it.
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
    tag = s["tag"][seg_i]
    node_i = s["node"][seg_i]
    n_pod = len(slot)
    rm = np.where(pending, 0, last - first).astype(float)

    sl = topo.slots
    ct = topo.ctrl
    ctrl_i = sl["ctrl"].to_numpy()[slot]
    kind = ct["kind"].to_numpy()[ctrl_i]
    cname = ct["name"].to_numpy()[ctrl_i]
    ns = ct["namespace"].to_numpy()[ctrl_i]
    b = topo.base
    uh1, uh2 = _vhash(b, slot, k, tag, 1), _vhash(b, slot, k, tag, 2)
    uid = _uuids(uh1, uh2)
    sfx = _alpha(_vhash(b, slot, k, tag, 3), 5)
    # ReplicaSet hash follows the controller's rollout generation at the pod's start
    gen = (start - ct["o"].to_numpy()[ctrl_i]) // ct["T"].to_numpy()[ctrl_i]
    rsh = _alpha(_vhash(b, ctrl_i, gen, 4), 10)
    rs_len = 9 + (_vhash(b, ctrl_i, gen, 5) % np.uint64(2)).astype(int)
    ordinal = sl["ordinal"].to_numpy()[slot]
    bare_name = sl["bare_name"].to_numpy()[slot]
    labels_prefix = ct["labels"].to_numpy()[ctrl_i]
    pod, owner, labels = [], [], []
    for i in range(n_pod):
        kd, c = kind[i], cname[i]
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
            o = f"{c}-{(start[i] - s['rs'][seg_i[i]]) // 60}"
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
    node_names = nodes["node"].to_numpy()[node_i]
    finished = (end <= H + 3600)
    phase = np.where(pending, "Pending", np.where(np.isin(kind, (CRON, JOB)) & finished, "Succeeded", "Running"))
    owner_kind = np.array([_KIND_OWNER[x] for x in kind], dtype=object)
    ctrl_kind = np.array([_KIND_CTRL[x] for x in kind], dtype=object)
    ctrl_name = np.where(kind == BARE, None, cname).astype(object)

    net = sl["net"].to_numpy()[slot] * rm * 60
    tx = np.where(pending, np.nan, net * rng.lognormal(0, 0.3, n_pod) * _diurnal(hod))
    rx = np.where(pending, np.nan, net * rng.lognormal(0.3, 0.3, n_pod) * _diurnal(hod))
    eg = {c: sl[c].to_numpy()[slot] * tx for c in ("eg_zone", "eg_region", "eg_internet")}
    pod_hours = pd.DataFrame({
        "namespace": ns, "pod": pod, "pod_uid": uid, "node": node_names, "phase": phase,
        "owner_kind": owner_kind, "owner_name": np.array(owner, dtype=object), "controller_kind": ctrl_kind,
        "controller_name": ctrl_name, "labels": labels, "annotations": ct["annotations"].to_numpy()[ctrl_i],
        "network_transmit_bytes": tx, "network_receive_bytes": rx,
        "egress_cross_zone_bytes": eg["eg_zone"], "egress_cross_region_bytes": eg["eg_region"],
        "egress_internet_bytes": eg["eg_internet"],
    })

    # Containers.
    counts = sl["n_cont"].to_numpy()[slot]
    rep = np.repeat(np.arange(n_pod), counts)
    within = np.arange(len(rep)) - np.repeat(np.cumsum(counts) - counts, counts)
    ci = topo.cont_offset[slot][rep] + within
    co = topo.cont
    cpu_req = co["cpu_req"].to_numpy()[ci]
    ram_req = co["ram_req"].to_numpy()[ci]
    gpu_req = co["gpu_req"].to_numpy()[ci]
    run = rm[rep]
    on = run > 0
    n_c = len(ci)
    d = _diurnal(hod)
    cores = np.where(np.isnan(cpu_req), co["abs_cpu"].to_numpy()[ci], cpu_req * co["eff"].to_numpy()[ci])
    cores = cores * d * rng.lognormal(0, 0.15, n_c)
    if topo.burst_cont is not None and hod == 10 and (topo.burst_cont == ci).any():
        # one node-hour whose demand Σ max(request, usage) exceeds capacity, while usage itself still fits
        j = int(np.flatnonzero(ci == topo.burst_cont)[0])
        same = (node_i[rep] == node_i[rep][j]) & on
        others = float((cores * run / 60)[same].sum() - cores[j] * run[j] / 60)
        cores[j] = max(0.92 * nodes["cpu_capacity_cores"].iloc[node_i[rep][j]] - others, 1.5 * cpu_req[j])
    mem = np.where(np.isnan(ram_req), co["abs_ram"].to_numpy()[ci], ram_req * co["mem_eff"].to_numpy()[ci])
    mem = mem * (0.9 + 0.1 * d) * rng.lognormal(0, 0.05, n_c)
    gpu_util = np.full(n_c, np.nan)
    util = float(np.clip(0.15 + 0.6 * d + rng.normal(0, 0.05), 0.02, 0.98))
    gpu_util[~np.isnan(gpu_req) & on] = util
    peak = co["peak"].to_numpy()[ci] * rng.uniform(0.9, 1.1, n_c)
    cap = nodes["cpu_capacity_cores"].to_numpy()[node_i][rep]
    container_hours = pd.DataFrame({
        "namespace": ns[rep], "pod": np.array(pod, dtype=object)[rep], "pod_uid": uid[rep],
        "container": co["container"].to_numpy()[ci], "node": node_names[rep], "running_minutes": run,
        "run_start_s": np.where(on, first[rep] * 60.0, np.nan), "run_end_s": np.where(on, last[rep] * 60.0, np.nan),
        "cpu_usage_core_seconds": np.where(on, cores * run * 60, np.nan),
        "cpu_usage_max_cores": np.where(on, np.minimum(cores * peak, cap), np.nan),
        "cpu_request_cores": cpu_req, "cpu_limit_cores": co["cpu_lim"].to_numpy()[ci],
        "ram_usage_avg_bytes": np.where(on, np.round(mem), np.nan),
        "ram_usage_max_bytes": np.where(on, np.round(mem * rng.uniform(1.05, 1.3, n_c)), np.nan),
        "ram_request_bytes": ram_req, "ram_limit_bytes": co["ram_lim"].to_numpy()[ci],
        "gpu_request": gpu_req, "gpu_usage_avg": gpu_util,
    })

    # Namespaces, volumes, mounts, services, GPUs.
    namespace_hours = topo.namespaces.copy()
    volume_hours = topo.volumes.copy()
    running = ~pending & (rm > 0)
    mount_rows = [(ns[i], uid[i], pvc) for i in np.flatnonzero(running) for pvc in topo.mounts.get(int(slot[i]), ())]
    pod_volume_hours = pd.DataFrame(mount_rows, columns=["namespace", "pod_uid", "pvc"])
    svc_rows = []
    for svc in topo.services:
        sel = np.flatnonzero(running & np.isin(ctrl_i, list(svc["ctrls"])))
        base_row = {"namespace": svc["namespace"], "service": svc["service"], "service_type": "LoadBalancer",
                    "ingress": svc["ingress"], "active_minutes": 60.0}
        svc_rows += [base_row | {"pod_uid": uid[i]} for i in sel] or [base_row | {"pod_uid": None}]
    service_hours = pd.DataFrame(svc_rows, columns=["namespace", "service", "service_type", "ingress",
                                                    "active_minutes", "pod_uid"])
    gpu_rows = []
    if topo.gpu_node is not None and node_on[topo.gpu_node]:
        users = np.flatnonzero(running & (slot == topo.gpu_slot))
        u = users[np.argmax(end[users])] if len(users) else None  # the pod holding the GPU at hour end
        busy = util if u is not None else 0.0
        gpu_rows.append({
            "node": nodes["node"][topo.gpu_node], "gpu_uuid": topo.gpu_uuid, "model_name": "Tesla T4",
            "namespace": ns[u] if u is not None else None, "pod": pod[u] if u is not None else None,
            "container": "triton" if u is not None else None,
            "power_avg_w": round(11.0 + 59.0 * busy + float(rng.normal(0, 1.5)), 2), "util_avg": busy,
        })
    gpu_hours = pd.DataFrame(gpu_rows, columns=["node", "gpu_uuid", "model_name", "namespace", "pod",
                                                "container", "power_avg_w", "util_avg"])

    # The optional series this cluster would export (kube-state-metrics >= 2.6, network-costs, dcgm-exporter):
    # series counts of what was generated; the apiserver's default/kubernetes endpoint always exists.
    series = {
        "kube_service_spec_type": len(topo.services),
        "kube_endpoint_address": int(service_hours["pod_uid"].notna().sum()) + 1,
        "kubecost_pod_network_egress_bytes_total": int(np.isfinite(eg["eg_zone"]).sum()),
        "DCGM_FI_DEV_GPU_UTIL": len(gpu_rows),
        "DCGM_FI_DEV_POWER_USAGE": len(gpu_rows),
    }
    coverage = pd.DataFrame({"metric": list(OPTIONAL_SERIES),
                             "series_count": [series[m] for m in OPTIONAL_SERIES]})

    frames = {
        "container_hours": container_hours, "pod_hours": pod_hours, "node_hours": node_hours,
        "namespace_hours": namespace_hours, "volume_hours": volume_hours, "pod_volume_hours": pod_volume_hours,
        "service_hours": service_hours, "gpu_hours": gpu_hours, COVERAGE_TABLE: coverage,
    }
    return {t: _stamp(f, name, hour_ts) for t, f in frames.items()}


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


def extract_demo_hours(cluster: ClusterSettings, hours: list[datetime]) -> ExtractResult:
    """The metrics tables of the demo cluster for `hours` (naive UTC hour starts), `_source='demo'`."""
    parts = list(iter_demo_hours(cluster, hours))
    tables = ("container_hours", "pod_hours", "node_hours", "namespace_hours", "volume_hours",
              "pod_volume_hours", "service_hours", "gpu_hours", COVERAGE_TABLE)
    batches = {t: (pd.concat([p.batches[t] for p in parts], ignore_index=True) if parts else pd.DataFrame())
               for t in tables}
    topo = _topology_for(cluster)
    absent: dict[str, list[str]] = {}
    if parts:
        cov = batches[COVERAGE_TABLE]
        for h, metric in cov.loc[cov["series_count"] == 0, ["hour_ts", "metric"]].itertuples(index=False):
            absent.setdefault(metric, []).append(h.isoformat())
    return ExtractResult(
        batches=batches,
        partitions=[p for r in parts for p in r.partitions],
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
