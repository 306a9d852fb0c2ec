"""Benchmark data: a 200-node / 4,000-pod cluster day as OpenMetrics, backfilled into a TSDB with promtool.

Writes one file per --window-hours window (default 6; promtool holds a whole file in memory and re-parses it per
block, so use 1 at 1,000 nodes), backfills each into --tsdb, and deletes the text unless --keep. Not committed data: run it when benchmarking, e.g.

    python scripts/gen_prom_scale.py --tsdb /tmp/scale/tsdb --hours 24
    prometheus --config.file=prom.yml --storage.tsdb.path=/tmp/scale/tsdb --storage.tsdb.retention.time=100y ...
    python scripts/gen_prom_scale.py --bench http://127.0.0.1:19090 --hours 24

Per pod: one container with cAdvisor CPU/memory, pod network, and KSM info/phase/owner/labels/running/requests.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

DAY = datetime(2025, 3, 3)
T0 = int((DAY - datetime(1970, 1, 1)).total_seconds())
SCRAPE_S = 60
WINDOW_H = 6


def _series(nodes: int, pods_per_node: int) -> dict[str, tuple[str, list[tuple[str, float, float]]]]:
    """family -> (type, [(labels, value at t0, slope per second)])."""
    fam: dict[str, tuple[str, list[tuple[str, float, float]]]] = {
        "container_cpu_usage_seconds": ("counter", []),
        "container_memory_working_set_bytes": ("gauge", []),
        "container_network_transmit_bytes": ("counter", []),
        "container_network_receive_bytes": ("counter", []),
        "kube_pod_info": ("gauge", []),
        "kube_pod_status_phase": ("gauge", []),
        "kube_pod_owner": ("gauge", []),
        "kube_pod_labels": ("gauge", []),
        "kube_pod_container_status_running": ("gauge", []),
        "kube_pod_container_resource_requests": ("gauge", []),
        "kube_node_info": ("gauge", []),
        "kube_node_labels": ("gauge", []),
        "kube_node_status_capacity": ("gauge", []),
        "kube_replicaset_owner": ("gauge", []),
    }
    ksm = 'job="kube-state-metrics",instance="10.9.0.1:8080"'
    for n in range(nodes):
        node = f"node-{n:03d}"
        fam["kube_node_info"][1].append((f'{ksm},node="{node}",provider_id="aws:///us-east-1a/i-{n:08x}"', 1, 0))
        fam["kube_node_labels"][1].append(
            (f'{ksm},node="{node}",label_node_kubernetes_io_instance_type="m5.4xlarge",'
             f'label_topology_kubernetes_io_zone="us-east-1{"abc"[n % 3]}"', 1, 0))
        fam["kube_node_status_capacity"][1].append((f'{ksm},node="{node}",resource="cpu",unit="core"', 16, 0))
        fam["kube_node_status_capacity"][1].append(
            (f'{ksm},node="{node}",resource="memory",unit="byte"', 64 * 2**30, 0))
        for p in range(pods_per_node):
            i = n * pods_per_node + p
            ns = f"team-{i % 40}"
            pod = f"app-{i // 40}-{i:05d}"
            uid = f"00000000-0000-4000-8000-{i:012d}"
            dep = f"app-{i // 40}"
            cad = f'job="kubelet",instance="{node}:10250",node="{node}",namespace="{ns}",pod="{pod}"'
            cpu = 0.05 + (i % 20) * 0.02
            fam["container_cpu_usage_seconds"][1].append(
                (f'{cad},container="app",id="/kubepods/burstable/pod{uid}/c{i}",cpu="total"', 0, cpu))
            fam["container_memory_working_set_bytes"][1].append(
                (f'{cad},container="app",id="/kubepods/burstable/pod{uid}/c{i}"', 100 * 2**20 + i * 4096, 0))
            for d in ("transmit", "receive"):
                fam[f"container_network_{d}_bytes"][1].append(
                    (f'{cad},id="/kubepods/burstable/pod{uid}",interface="eth0"', 0, 1000 + i % 500))
            kp = f'{ksm},namespace="{ns}",pod="{pod}",uid="{uid}"'
            fam["kube_pod_info"][1].append((f'{kp},node="{node}",pod_ip="10.{n}.{p}.1",host_network="false"', 1, 0))
            fam["kube_pod_status_phase"][1].append((f'{kp},phase="Running"', 1, 0))
            fam["kube_pod_owner"][1].append(
                (f'{kp},owner_kind="ReplicaSet",owner_name="{dep}-7d9f",owner_is_controller="true"', 1, 0))
            fam["kube_pod_labels"][1].append((f'{kp},label_app="{dep}",label_team="{ns}"', 1, 0))
            fam["kube_pod_container_status_running"][1].append((f'{kp},container="app"', 1, 0))
            for res, unit, v in (("cpu", "core", cpu), ("memory", "byte", 128 * 2**20)):
                fam["kube_pod_container_resource_requests"][1].append(
                    (f'{kp},container="app",node="{node}",resource="{res}",unit="{unit}"', v, 0))
    # one ReplicaSet -> Deployment owner per deployment
    deps = {(f"team-{i % 40}", f"app-{i // 40}") for i in range(nodes * pods_per_node)}
    for ns, dep in sorted(deps):
        fam["kube_replicaset_owner"][1].append(
            (f'{ksm},namespace="{ns}",replicaset="{dep}-7d9f",owner_kind="Deployment",owner_name="{dep}",'
             'owner_is_controller="true"', 1, 0))
    return fam


def write_window(path: Path, fam: dict[str, tuple[str, list[tuple[str, float, float]]]], start_h: int,
                 window_h: int = WINDOW_H) -> int:
    times = list(range(start_h * 3600, (start_h + window_h) * 3600, SCRAPE_S))
    lines = 0
    with path.open("w", buffering=1 << 22) as f:
        for family, (mtype, series) in fam.items():
            name = f"{family}_total" if mtype == "counter" else family
            f.write(f"# TYPE {family} {mtype}\n")
            for labels, v0, slope in series:
                head = f"{name}{{cluster=\"scale\",{labels}}} "
                if slope:
                    f.write("".join(f"{head}{v0 + slope * t:.3f} {T0 + t}\n" for t in times))
                else:
                    f.write("".join(f"{head}{v0:g} {T0 + t}\n" for t in times))
                lines += len(times)
        f.write("# EOF\n")
    return lines


def generate(tsdb: Path, hours: int, nodes: int, pods_per_node: int, workdir: Path, keep: bool,
             window_h: int = WINDOW_H) -> None:
    tool = shutil.which("promtool")
    if not tool:
        sys.exit("promtool not found: run scripts/ci/setup_prometheus.sh")
    tsdb.mkdir(parents=True, exist_ok=True)
    workdir.mkdir(parents=True, exist_ok=True)
    fam = _series(nodes, pods_per_node)
    print(f"series: {sum(len(s) for _, s in fam.values())}")
    for start_h in range(0, hours, window_h):
        path = workdir / f"scale-{start_h:02d}.om"
        t = time.monotonic()
        lines = write_window(path, fam, start_h, window_h)
        gen_s = time.monotonic() - t
        t = time.monotonic()
        subprocess.run([tool, "tsdb", "create-blocks-from", "openmetrics", str(path), str(tsdb)], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"window {start_h:02d}h: {lines} samples, {path.stat().st_size / 2**20:.0f} MiB, "
              f"written in {gen_s:.1f} s, backfilled in {time.monotonic() - t:.1f} s", flush=True)
        if not keep:
            path.unlink()


def bench(url: str, hours: int) -> None:
    from pipelines.settings import ClusterSettings, PrometheusSettings
    from pipelines.sources.prometheus import extract_prometheus_hours

    cluster = ClusterSettings(name="scale", source="prometheus", prometheus=PrometheusSettings(
        url=url, cluster_label="cluster", scrape_interval_s=SCRAPE_S, timeout_s=300))
    hs = [DAY + timedelta(hours=i) for i in range(hours)]
    t = time.monotonic()
    res = extract_prometheus_hours(cluster, hs)
    el = time.monotonic() - t
    m = res.metadata
    print(f"hours={len(hs)} queries={m['queries']} queries/hour={m['queries_per_hour']:.2f} "
          f"seconds={el:.1f} seconds/hour={el / len(hs):.2f} rows={m['rows']} splits={m['size_splits']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tsdb", type=Path, help="TSDB directory to backfill into")
    ap.add_argument("--hours", type=int, default=24, help="hours from DAY 00:00 (a multiple of --window-hours)")
    ap.add_argument("--window-hours", type=int, default=WINDOW_H, help="hours per OpenMetrics file")
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods-per-node", type=int, default=20)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/kubeledger-prom-scale"))
    ap.add_argument("--keep", action="store_true", help="keep the OpenMetrics files")
    ap.add_argument("--bench", metavar="URL", help="extract --hours from a Prometheus serving the TSDB")
    a = ap.parse_args()
    if a.bench:
        bench(a.bench, a.hours)
    elif a.tsdb:
        generate(a.tsdb, a.hours, a.nodes, a.pods_per_node, a.workdir, a.keep, a.window_hours)
    else:
        ap.error("give --tsdb (generate) or --bench URL")


if __name__ == "__main__":
    main()
