"""The demo cluster's topology: nodes, namespaces, controllers, pod slots, schedules, containers, volumes and
services, a pure function of (seed, cluster, size) and cached (pipelines/sources/demo.py describes the generator).
The workloads are laid out by demo_workloads; this module makes the nodes, namespaces, claims and services and
assembles the cached `_Topology`."""

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
    _REPEAT,
    _STORAGE_CLASS,
    _TEMPLATES,
    CARBON_ZONE_LABEL,
    CRON,
    DAY_S,
    DEMO_FEATURE_NODES,
    DEPLOY,
    DS,
    GIB,
    INSTANCE_TYPES,
    MIB,
    REGION_ZONES,
    SCALE_AWAY_END_S,
    _hex,
    _js,
    _seed,
    _uuids,
    _vhash,
)
from pipelines.sources.demo_workloads import (
    _daemonsets,
    _fixed_workloads,
    _generic_deployments,
    _Landmarks,
    _Layout,
    _move_scale_away,
    _regular_segments,
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


@lru_cache(maxsize=8)
def _topology(seed: int, cluster: str, n_nodes: int, pods_per_node: int, cpp: int,
              scenario: str = "default") -> _Topology:
    n_nodes = max(int(n_nodes), 1)
    base = _seed("kubeledger-demo", seed, cluster)
    nodes, daily_end = _node_table(cluster, n_nodes, base)
    lay = _Layout(base, _seed("topology", seed, cluster, n_nodes, pods_per_node, cpp), nodes, daily_end,
                  _namespaces(n_nodes), pods_per_node, cpp)
    # Each step adds to the layout and may draw from its generator: the order of the steps is part of the output.
    kube_proxy = _daemonsets(lay)
    marks = _fixed_workloads(lay, kube_proxy)
    generic_dep = _generic_deployments(lay)
    _move_scale_away(lay)
    # The scheduler's rule: a node's pods request no more than its allocatable (dense nodes scale their
    # Deployments down; a layout that fits, like the 12-node demo's, is kept as it is).
    b = lay.b
    b.cont = fit_requests(b.cont, [(x[0], x[5]) for x in b.segs] + [(i, x["node"]) for i, x in enumerate(b.slots)],
                          generic_dep, lay.alloc, lay.nodes["ram_allocatable_bytes"].to_numpy())
    claims = _Claims(lay)
    _default_claims(lay, claims, marks)
    showcase: dict[int, dict[str, float]] = {}
    if scenario == demo_scenario.SCENARIO:  # after everything else, so the default demo is unchanged
        showcase = _add_scenario(lay, kube_proxy, claims)
    return _assemble(lay, marks, claims, showcase)


class _Claims:
    """PVs, their claims and which slots mount them. A PV's name and volume id hash its position: claims are
    added in a fixed order."""

    def __init__(self, lay: _Layout) -> None:
        self.lay = lay
        self.vols: list[dict[str, Any]] = []
        self.mounts: dict[int, list[str]] = {}

    def claim(self, ns: str | None, pvc: str | None, node: int, req_gib: float, cap_gib: float,
              slots: list[int]) -> None:
        k = len(self.vols)
        h = _vhash(self.lay.base, np.array([k, k]), np.array([11, 12]))
        pv = f"pvc-{_uuids(h[:1], h[1:])[0]}"
        prov = self.lay.provider[node]
        vol_id = {"aws": f"vol-0{_hex(h[:1], 16)[0]}",
                  "gcp": f"projects/demo-project/zones/{self.lay.nodes['zone'][node]}/disks/{pv}",
                  "azure": f"/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/mc_demo-rg/"
                           f"providers/Microsoft.Compute/disks/{pv}"}.get(prov)
        self.vols.append({"pv": pv, "namespace": ns, "pvc": pvc, "storage_class": _STORAGE_CLASS[prov],
                          "pvc_request_bytes": req_gib * GIB if pvc else np.nan, "pv_capacity_bytes": cap_gib * GIB,
                          "provider_volume_id": vol_id, "active_minutes": 60.0})
        for s in slots:
            self.mounts.setdefault(s, []).append(pvc or "")


def _default_claims(lay: _Layout, claims: _Claims, marks: _Landmarks) -> None:
    """Claims of the StatefulSets and shared/unmounted claims; one released PV without a claim."""
    n, b = lay.at(1), lay.b
    claims.claim("monitoring", "prometheus-k8s-db-prometheus-k8s-0", n, 50, 50, [marks.prom_slot])
    for o, s in enumerate(marks.pg_slots):
        claims.claim("payments", f"data-postgres-{o}", b.slots[s]["node"], 20, 20, [s])
    for ns, s in zip(("team-a", "team-b"), marks.redis_slots, strict=True):
        claims.claim(ns, "data-redis-0", b.slots[s]["node"], 8, 10, [s])  # PV rounded up above the request
    # two pods concurrently, 4×20 min a day
    claims.claim("batch", "reports-cache", n, 30, 30, [marks.api_slot, marks.cron_slot])
    claims.claim("team-a", "debug-scratch", lay.at(0), 5, 5, [marks.bare_slot])  # unmounted outside 09:12-17:40
    claims.claim(None, None, lay.at(0), 0, 100, [])  # Released PV, reclaim policy Retain


def _add_scenario(lay: _Layout, kube_proxy: int, claims: _Claims) -> dict[int, dict[str, float]]:
    """The `scenario: recommendations` pool, namespaces, workloads and unmounted claim; returns the showcase
    slots' fixed usage factors (demo_scenario)."""
    first = len(lay.nodes)
    showcase = demo_scenario.add_showcase(lay.b, first, kube_proxy, DEPLOY, CRON, DS, _regular_segments)
    added = demo_scenario.showcase_nodes(first)
    lay.nodes = pd.concat([lay.nodes, added], ignore_index=True)
    lay.daily_end = np.r_[lay.daily_end, np.full(len(added), DAY_S)]
    lay.namespaces = pd.concat([lay.namespaces, pd.DataFrame(demo_scenario.showcase_namespaces())],
                               ignore_index=True)
    claims.claim(demo_scenario.NAMESPACE, "orphan-data", lay.at(0), 50, 50, [])
    return showcase


def _services(lay: _Layout, marks: _Landmarks) -> list[dict[str, Any]]:
    """The LoadBalancer services and the controllers behind them."""
    elb = f"a{_hex(_vhash(lay.base, np.array([21])), 16)[0]}-1234567890.us-east-1.elb.amazonaws.com"
    return [
        {"namespace": "checkout", "service": "checkout-web", "ingress": elb, "ctrls": {marks.web}},
        {"namespace": "team-b", "service": "legacy-gateway", "ingress": "34.76.112.18",
         "ctrls": {marks.legacy_gateway}},
    ]


def _containers(lay: _Layout, showcase: dict[int, dict[str, float]]) -> pd.DataFrame:
    """The containers table. Draws (the layout's last): efficiency noise, memory efficiency, peak factor; the
    showcase slots then take their fixed factors."""
    rng = lay.rng
    cont = pd.DataFrame(lay.b.cont, columns=["slot", "container", "cpu_req", "ram_req", "cpu_lim", "ram_lim",
                                             "gpu_req", "abs_cpu", "abs_ram", "eff", "_pad"])
    # slots with a generator of their own (demo_scenario.OWN_RNG) draw nothing here: their factors are fixed
    drawn = ~cont["slot"].isin([i for i, x in enumerate(lay.b.slots) if x.get("own_rng")]).to_numpy()
    n = int(drawn.sum())
    cont.loc[drawn, "eff"] = cont.loc[drawn, "eff"] * rng.uniform(0.8, 1.2, n)
    cont.loc[drawn, "mem_eff"] = rng.uniform(0.4, 0.9, n)
    cont.loc[drawn, "peak"] = rng.uniform(1.2, 2.5, n)
    for sid_, fixed_factors in showcase.items():
        for col, value in fixed_factors.items():
            cont.loc[cont["slot"] == sid_, col] = value
    return cont


def _assemble(lay: _Layout, marks: _Landmarks, claims: _Claims,
              showcase: dict[int, dict[str, float]]) -> _Topology:
    b = lay.b
    slots = pd.DataFrame(b.slots)
    seg = np.array(b.segs, dtype=np.int64)
    segs = {k: seg[:, i] for i, k in enumerate(("slot", "T", "o", "rs", "re", "node", "tag"))}
    offset = np.r_[0, np.cumsum(slots["n_cont"].to_numpy())[:-1]].astype(np.int64)
    gh = _vhash(lay.base, np.array([31, 32]))
    gpu_uuid = f"GPU-{_uuids(gh[:1], gh[1:])[0]}" if lay.gpu_node is not None else None
    # the deliberate over-allocation hour is a feature of the 12-node block; larger (bench) clusters fit their nodes
    burst = int(offset[marks.burst_slot]) if lay.n_nodes <= DEMO_FEATURE_NODES else None
    return _Topology(lay.nodes, lay.daily_end, lay.namespaces, pd.DataFrame(b.ctrl), slots, segs,
                     _containers(lay, showcase), offset, pd.DataFrame(claims.vols), claims.mounts,
                     _services(lay, marks), gpu_uuid, lay.gpu_node, marks.gpu_slot, burst, lay.base)


def _topology_for(cluster: ClusterSettings) -> _Topology:
    d = cluster.demo
    return _topology(int(d.seed), cluster.name, int(d.nodes), int(d.pods_per_node), int(d.containers_per_pod),
                     d.scenario)

