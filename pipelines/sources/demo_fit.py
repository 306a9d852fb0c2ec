"""What a real scheduler and kubelet would not let the demo cluster do, applied where the layout overshoots.

1. Requests (`fit_requests`, once per topology): the pods placed on a node must fit its allocatable CPU and
   memory. Where a node's pods ask for more (dense nodes: 30 pods with sidecars on a 2-vCPU node), the generic
   Deployments on it are scaled down, each Deployment by one factor so its replicas keep one pod template.
2. Usage (`fit_usage`, per hour): Σ max(request, usage) per node-hour, CPU and memory, must stay within the
   node's capacity for the hour; where bursting containers would push it over, their usage above request is
   scaled down (a node cannot run more than it has).

Both leave a node that already fits untouched (no rounding, no random draw), so clusters that never overshoot,
the 12-node demo among them, keep exactly their rows.
"""

from __future__ import annotations

import numpy as np

REQUEST_TARGET = 0.9  # an overcommitted node's requests are brought to this share of allocatable
USAGE_TARGET = 0.95  # an overshooting node-hour's demand is brought to this share of capacity
MILLICORE = 0.001
MIB = float(2**20)


def fit_requests(cont: list[tuple], slot_nodes: list[tuple[int, int]], generic_dep: dict[int, int],
                 cpu_alloc: np.ndarray, ram_alloc: np.ndarray) -> list[tuple]:
    """Scale the requests (and limits) of generic Deployments on nodes whose pods ask for more than allocatable.

    cont: the builder's container tuples (slot, name, cpu_req, ram_req, cpu_lim, ram_lim, ...); slot_nodes: the
    (slot, node) pairs a slot's segments run on; generic_dep: slot -> Deployment index for the generic slots.
    Returns the container tuples, unchanged unless some node overshoots."""
    n_nodes = len(cpu_alloc)
    n_slots = 1 + max((c[0] for c in cont), default=-1)
    cpu = np.bincount([c[0] for c in cont], [0.0 if np.isnan(c[2]) else c[2] for c in cont], n_slots)
    ram = np.bincount([c[0] for c in cont], [0.0 if np.isnan(c[3]) else c[3] for c in cont], n_slots)
    pairs = np.array(sorted(set(slot_nodes)), dtype=np.int64).reshape(-1, 2)
    s, n = pairs[:, 0], pairs[:, 1]
    tot_cpu, tot_ram = np.bincount(n, cpu[s], n_nodes), np.bincount(n, ram[s], n_nodes)
    if not ((tot_cpu > cpu_alloc).any() or (tot_ram > ram_alloc).any()):
        return cont
    gen = np.array([x in generic_dep for x in s])
    fix_cpu, fix_ram = np.bincount(n[~gen], cpu[s[~gen]], n_nodes), np.bincount(n[~gen], ram[s[~gen]], n_nodes)
    gen_cpu, gen_ram = tot_cpu - fix_cpu, tot_ram - fix_ram
    with np.errstate(divide="ignore", invalid="ignore"):
        f_cpu = np.where(gen_cpu > 0, (REQUEST_TARGET * cpu_alloc - fix_cpu) / gen_cpu, 1.0)
        f_ram = np.where(gen_ram > 0, (REQUEST_TARGET * ram_alloc - fix_ram) / gen_ram, 1.0)
    over = (tot_cpu > cpu_alloc) | (tot_ram > ram_alloc)
    node_f = np.where(over, np.clip(np.minimum(f_cpu, f_ram), 0.0, 1.0), 1.0)
    dep_f: dict[int, float] = {}
    for slot, node in zip(s[gen], n[gen], strict=True):
        d = generic_dep[int(slot)]
        dep_f[d] = min(dep_f.get(d, 1.0), float(node_f[node]))
    out = []
    for c in cont:
        f = dep_f.get(generic_dep.get(c[0], -1), 1.0)
        if f < 1.0:
            cpu_r = c[2] if np.isnan(c[2]) else max(np.floor(c[2] * f / MILLICORE) * MILLICORE, MILLICORE)
            ram_r = c[3] if np.isnan(c[3]) else max(np.floor(c[3] * f / MIB) * MIB, MIB)
            cpu_l = c[4] if np.isnan(c[4]) else max(c[4] * f, cpu_r)
            ram_l = c[5] if np.isnan(c[5]) else max(np.floor(c[5] * f / MIB) * MIB, ram_r)
            c = (c[0], c[1], cpu_r, ram_r, cpu_l, ram_l, *c[6:])
        out.append(c)
    return out


def fit_usage(node: np.ndarray, run_h: np.ndarray, request: np.ndarray, usage: np.ndarray,
              capacity_h: np.ndarray) -> np.ndarray:
    """Usage per container (cores or bytes, average while running) with every node-hour's Σ max(request, usage)
    × running hours within capacity_h (capacity × the node's running hours); unchanged where it already fits."""
    req = np.nan_to_num(request)
    demand = np.bincount(node, np.maximum(req, usage) * run_h, len(capacity_h))
    over_nodes = demand > capacity_h
    if not over_nodes.any():
        return usage
    above = np.maximum(usage - req, 0.0)
    above_h = np.bincount(node, above * run_h, len(capacity_h))
    excess = demand - USAGE_TARGET * capacity_h
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = np.where(over_nodes & (above_h > 0), np.clip(1.0 - excess / above_h, 0.0, 1.0), 1.0)
    k = keep[node]
    return np.where((k < 1.0) & (usage > req), req + above * k, usage)
