"""The bench-sized demo cluster behaves like a scheduler placed it: requests within allocatable, and every
node-hour's Σ max(request, usage) within capacity (so no idle clamp); a layout that fits is left untouched."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd

from pipelines.settings import ClusterSettings, DemoSettings
from pipelines.sources.demo import extract_demo_hours
from pipelines.sources.demo_fit import fit_requests, fit_usage

HOURS = [datetime(2025, 3, 3, h) for h in (0, 10, 15)]  # night, the demo's burst hour, after the scale-away


def _node_hours(b: dict[str, pd.DataFrame]) -> pd.DataFrame:
    c = b["container_hours"]
    run_h = c["running_minutes"] / 60
    c = c.assign(
        req_cpu=c["cpu_request_cores"].fillna(0) * run_h, req_ram=c["ram_request_bytes"].fillna(0) * run_h,
        use_cpu=c["cpu_usage_core_seconds"].fillna(0) / 3600, use_ram=c["ram_usage_avg_bytes"].fillna(0) * run_h,
        dem_cpu=np.maximum(c["cpu_request_cores"].fillna(0) * run_h, c["cpu_usage_core_seconds"].fillna(0) / 3600),
        dem_ram=np.maximum(c["ram_request_bytes"].fillna(0), c["ram_usage_avg_bytes"].fillna(0)) * run_h)
    g = c.groupby(["hour_ts", "node"])[["req_cpu", "req_ram", "use_cpu", "use_ram", "dem_cpu", "dem_ram"]].sum()
    n = b["node_hours"].set_index(["hour_ts", "node"])
    return g.join(n.assign(run_h=n["running_minutes"] / 60), how="inner")


def test_bench_cluster_fits_every_node_hour() -> None:
    bench = ClusterSettings(name="bench", demo=DemoSettings(nodes=100, pods_per_node=30, containers_per_pod=2))
    g = _node_hours(extract_demo_hours(bench, HOURS).batches)
    assert len(g) >= 290
    assert (g["req_cpu"] <= g["cpu_allocatable_cores"] * g["run_h"] + 1e-9).all()
    assert (g["req_ram"] <= g["ram_allocatable_bytes"] * g["run_h"] + 1).all()
    assert (g["dem_cpu"] <= g["cpu_capacity_cores"] * g["run_h"] * (1 + 1e-9)).all()
    assert (g["dem_ram"] <= g["ram_capacity_bytes"] * g["run_h"] * (1 + 1e-9)).all()
    # still a busy cluster, not an empty one: requests use a good share of the nodes
    assert 0.3 < g["req_cpu"].sum() / (g["cpu_allocatable_cores"] * g["run_h"]).sum() <= 0.9


def test_a_gpu_rollout_never_holds_the_device_twice() -> None:
    """The inference Deployment's rollout on the 1,000-node cluster (2025-04-01 11:00): the old pod releases the GPU
    before the new one runs (a surge would count both pods on a 1-GPU node for the same minute: an idle clamp)."""
    bench = ClusterSettings(name="bench", demo=DemoSettings(nodes=1000, pods_per_node=30, containers_per_pod=2))
    b = extract_demo_hours(bench, [datetime(2025, 4, 1, 11)]).batches
    c = b["container_hours"]
    gpu = c[c["gpu_request"].fillna(0) > 0]
    assert gpu["pod"].nunique() == 2  # the rollout hour: old and new pod
    held = (gpu["gpu_request"] * gpu["running_minutes"] / 60).groupby(gpu["node"]).sum()
    cap = b["node_hours"].set_index("node")
    assert (held <= cap.loc[held.index, "gpu_capacity"] * cap.loc[held.index, "running_minutes"] / 60).all()


def test_the_demo_keeps_its_burst_hour() -> None:
    g = _node_hours(extract_demo_hours(ClusterSettings(name="demo"), HOURS[1:2]).batches)
    assert (g["dem_cpu"] > g["cpu_capacity_cores"] * g["run_h"]).sum() == 1


def test_fit_functions_leave_a_fitting_layout_alone() -> None:
    cont = [(0, "app", 0.5, 1e9, np.nan, np.nan), (1, "app", 0.5, 1e9, 1.0, 2e9)]
    assert fit_requests(cont, [(0, 0), (1, 0)], {1: 0}, np.array([2.0]), np.array([4e9])) is cont
    usage = np.array([0.4, 0.9])
    assert fit_usage(np.array([0, 0]), np.array([1.0, 1.0]), np.array([0.5, 0.5]), usage, np.array([2.0])) is usage


def test_fit_functions_scale_an_overcommitted_node() -> None:
    # node 0: 1.0 fixed + 2 x 1.0 generic (one Deployment also on node 1) on 2.0 allocatable
    cont = [(0, "ds", 1.0, 1e9, np.nan, np.nan), (1, "app", 1.0, 1e9, 2.0, np.nan), (2, "app", 1.0, 1e9, 2.0, np.nan),
            (3, "app", 1.0, 1e9, 2.0, np.nan)]
    out = fit_requests(cont, [(0, 0), (1, 0), (2, 0), (3, 1)], {1: 7, 2: 7, 3: 7}, np.array([2.0, 8.0]),
                       np.array([8e9, 8e9]))
    assert out[0] == cont[0]
    assert {c[2] for c in out[1:]} == {0.4} and all(c[4] >= c[2] for c in out[1:])  # one template, (0.9*2-1)/2
    usage = fit_usage(np.array([0, 0]), np.array([1.0, 1.0]), np.array([0.5, np.nan]), np.array([2.0, 1.0]),
                      np.array([2.0]))
    assert np.maximum(np.array([0.5, 0.0]), usage).sum() <= 0.95 * 2.0 + 1e-12 and usage[0] >= 0.5
