"""The demo's `scenario: recommendations` workloads: one case per recommendation kind, on a pool of their own.

Added only when a cluster sets `demo.scenario: recommendations`, after the default topology is laid out, so the
default demo is unchanged. Usage factors are fixed (not drawn) so each case lands where tests expect it:

- showcase/oversized-api (Deployment, 2 replicas): requests 2 cores / 4 GiB, uses ~5 % of them -> rightsizing;
- showcase/abandoned-worker (Deployment): ~1 millicore, no traffic -> abandoned workload;
- showcase/orphan-data (PVC): claimed, never mounted -> unclaimed volume;
- pool m5.xlarge @ us-east-1d (3 nodes): its requests fit on 2 -> idle node pool;
- showcase/nightly-export (CronJob 20:00-22:00 UTC, the evening intensity peak) -> carbon shift in time;
- showcase/right-sized-web (Deployment): p95 peak x headroom ~ its requests -> no recommendation;
- sandbox/forgotten-demo (Deployment) alone in namespace sandbox, ~0.2 millicores, no traffic, all week -> idle
  namespace (its abandoned-workload row is superseded by it);
- showcase/bursty-api (Deployment, 3 steady replicas of 250m / 256 Mi, alone on an m5.large in us-east-1d): CPU
  bursts to 4x its quiet level one hour in four (02:00, 06:00, ... UTC), memory ~20 % of one replica's request ->
  HPA candidate (an HPA sizes it for less than its rightsizing; no quiet block of 4 hours, so no off-peak row).
  Its pods draw from a generator of their own (`OWN_RNG`, in demo._frames_for_hour and demo_topology._containers)
  and share no node, so adding it moved no other workload's numbers.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

SCENARIO = "recommendations"
NAMESPACE = "showcase"
IDLE_NAMESPACE = "sandbox"
POOL = ("m5.xlarge", "us-east-1d", 4.0, 16.0)  # instance type, zone, vCPU, GiB
# bursty-api's node, a pool of one: no other pod shares its energy, so adding it moved no other workload's kWh
BURSTY_NODE = ("m5.large", "us-east-1d", 2.0, 8.0)
GIB = float(2**30)
MIB = float(2**20)
DAY_S = 86_400
WEEK_S = 7 * DAY_S
# (container row overrides) eff = mean usage / request, mem_eff = memory / request, peak = hourly peak / mean
OVERSIZED = {"eff": 0.05, "mem_eff": 0.1, "peak": 1.5}
ABANDONED = {"eff": 0.002, "mem_eff": 0.2, "peak": 1.2}
# p95 over a week of (diurnal x noise) hourly peaks is ~1.13 x the mean request share, the memory maximum ~1.40 x:
# 0.74 x 1.13 x 1.2 and 0.55 x 1.40 x 1.3 are both ~1.0 of the requests, well inside min_change_ratio
WELL_SIZED = {"eff": 0.74, "mem_eff": 0.55, "peak": 1.0}
NIGHTLY = {"eff": 0.9, "mem_eff": 0.5, "peak": 1.1}
# usage / request at the burst level (x BURST_QUIET between bursts): 3 x 250m x 0.4 = 0.3 cores in a burst needs
# 2 replicas at a 70 % target, 0.075 between bursts needs 1; the hourly peak p95 x 1.2 headroom (~0.2 cores) stays
# below the request, so its rightsizing lowers requests (a saving, not a risk fix that would block the HPA)
BURSTY = {"eff": 0.4, "mem_eff": 0.2, "peak": 1.3}
BURST_EVERY_H, BURST_AT_H, BURST_QUIET = 4, 2, 0.25
OWN_RNG = "bursty-api"  # the slot flag and generator name of the pods that draw from a generator of their own


def bursty_shape(hour_of_day: int) -> float:
    """bursty-api's hourly level (in place of demo._diurnal): 1 one hour in four, BURST_QUIET the others; no 4 quiet
    hours in a row, so off-peak scale-down has no block and the HPA is the one way to size it by the hour."""
    return 1.0 if hour_of_day % BURST_EVERY_H == BURST_AT_H else BURST_QUIET


def showcase_nodes(first: int) -> pd.DataFrame:
    """Three AWS nodes of one pool, then bursty-api's node (a pool of its own), in the node table's columns (as
    demo._node_table builds them)."""
    rows = []
    for k, (itype, zone, cpu, ram_gib) in enumerate([POOL] * 3 + [BURSTY_NODE]):
        name = f"ip-10-0-200-{k + 1}.ec2.internal"
        group = "showcase" if k < 3 else "showcase-burst"
        labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
                  "node.kubernetes.io/instance-type": itype, "beta.kubernetes.io/instance-type": itype,
                  "eks.amazonaws.com/nodegroup": group, "eks.amazonaws.com/capacityType": "ON_DEMAND",
                  "topology.kubernetes.io/region": "us-east-1", "topology.kubernetes.io/zone": zone,
                  "kubernetes.io/hostname": name}
        cap_ram = ram_gib * GIB
        rows.append({
            "node": name, "provider_id": f"aws:///{zone}/i-0showcase{first + k:07d}", "instance_type": itype,
            "region": "us-east-1", "zone": zone, "labels": json.dumps(labels, separators=(",", ":"), sort_keys=True),
            "cpu_capacity_cores": cpu, "ram_capacity_bytes": cap_ram, "gpu_capacity": np.nan,
            "cpu_allocatable_cores": round(cpu - 0.06 - 0.01 * (cpu - 1), 3),
            "ram_allocatable_bytes": float(np.floor((cap_ram * 0.92 - 100 * MIB) / 1024) * 1024),
            "gpu_model": None, "_provider": "aws", "_role": "", "_carbon_zone": "US-MIDA-PJM",
        })
    return pd.DataFrame(rows)


def add_showcase(b: Any, first_node: int, kube_proxy: int, deploy: int, cron: int, ds: int,
                 regular: Any) -> dict[int, dict[str, float]]:
    """Add the showcase controllers and slots to the builder `b`; returns {slot: container overrides}.

    `regular(b, sid, kind, period, offset, stagger, node, scale_away)` lays out long-lived pods
    (demo_workloads._regular_segments); `kube_proxy` is the kube-proxy DaemonSet's controller index."""
    nan = np.nan
    a, b2, c = first_node, first_node + 1, first_node + 2
    over: dict[int, dict[str, float]] = {}
    for node in (a, b2, c):
        sid = b.slot(kube_proxy, node, [("kube-proxy", 0.1, nan, nan, nan, nan, 0.004, 35 * MIB)], net=3e3)
        regular(b, sid, ds, WEEK_S, 3 * 3600 + 600, 17, node, None)
    api = b.controller("oversized-api", deploy, NAMESPACE, WEEK_S, 2 * 3600, {"app": "oversized-api"})
    for node in (a, b2):
        sid = b.slot(api, node, [("app", 2.0, 4 * GIB, nan, nan, nan, 0, 0)], net=3e4)
        regular(b, sid, deploy, WEEK_S, 2 * 3600, 40 + node % 7, node, None)
        over[sid] = OVERSIZED
    idle = b.controller("abandoned-worker", deploy, NAMESPACE, WEEK_S, 3 * 3600, {"app": "abandoned-worker"})
    sid = b.slot(idle, b2, [("worker", 0.5, 512 * MIB, nan, nan, nan, 0, 0)], net=0.0)
    regular(b, sid, deploy, WEEK_S, 3 * 3600, 55, b2, None)
    over[sid] = ABANDONED
    web = b.controller("right-sized-web", deploy, NAMESPACE, WEEK_S, 4 * 3600, {"app": "right-sized-web"})
    sid = b.slot(web, c, [("web", 0.3, 256 * MIB, nan, nan, nan, 0, 0)], net=2e4)
    regular(b, sid, deploy, WEEK_S, 4 * 3600, 70, c, None)
    over[sid] = WELL_SIZED
    exp = b.controller("nightly-export", cron, NAMESPACE, DAY_S, 0, {"app": "nightly-export"})
    sid = b.slot(exp, c, [("export", 1.0, 1 * GIB, nan, nan, nan, 0, 0)], net=5e4)
    b.seg(sid, DAY_S, 20 * 3600, 5, 2 * 3600 + 5, c)  # "0 20 * * *", two hours
    over[sid] = NIGHTLY
    # last, so the cases above draw what they drew before it
    forgotten = b.controller("forgotten-demo", deploy, IDLE_NAMESPACE, WEEK_S, 5 * 3600, {"app": "forgotten-demo"})
    sid = b.slot(forgotten, c, [("demo", 0.1, 128 * MIB, nan, nan, nan, 0, 0)], net=0.0)
    regular(b, sid, deploy, WEEK_S, 5 * 3600, 85, c, None)
    over[sid] = ABANDONED
    # after forgotten-demo, on a node of its own (BURSTY_NODE: no co-located pod's energy share moves, no pool's
    # sizing either); its pods and containers draw from a generator of their own (OWN_RNG), not the layout's
    bursty = b.controller("bursty-api", deploy, NAMESPACE, WEEK_S, 6 * 3600, {"app": "bursty-api"})
    node = first_node + 3
    for k in range(3):
        sid = b.slot(bursty, node, [("api", 0.25, 256 * MIB, nan, nan, nan, 0, 0)], net=2e4)
        b.slots[sid]["own_rng"] = True
        regular(b, sid, deploy, WEEK_S, 6 * 3600, 90 + 7 * k, node, None)
        over[sid] = BURSTY
    return over


def showcase_namespaces() -> list[dict[str, str]]:
    out = []
    for ns, env in ((NAMESPACE, "prod"), (IDLE_NAMESPACE, "dev")):
        labels = {"kubernetes.io/metadata.name": ns, "team": "showcase", "env": env}
        out.append({"namespace": ns, "labels": json.dumps(labels, separators=(",", ":"), sort_keys=True),
                    "annotations": "{}"})
    return out
