"""A deterministic synthetic cluster that lands the same raw tables as the Prometheus extractor.

Every value is a pure function of (demo seed, cluster name, hour): the cluster's shape (nodes, controllers,
pod slots, requests) comes from a topology seeded by (seed, cluster) and cached; pod identities come from a
periodic schedule per slot (rollouts, CronJob runs, daily windows), hashed by (slot, period index); usage noise
comes from a Generator seeded by (seed, cluster, hour). So an hour generated alone equals the same hour
generated inside any batch, and backfills over any date need no setup.

Units follow sql/raw/10_metrics.sql: cores, bytes, seconds, minutes. NULL (NaN/None) = not observed.

Modules: demo_shapes (fixed shapes, stable hashing), demo_topology (the cached topology), demo_scenario (the
opt-in `scenario: recommendations` workloads) and this one (the frames of an hour, the public API).
"""

from __future__ import annotations

import calendar
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from pipelines.settings import ClusterSettings
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


def _frames_for_hour(cluster: ClusterSettings, topo: _Topology, h: datetime,
                     stamp: bool = True) -> dict[str, pd.DataFrame]:
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
    mem = np.where(np.isnan(ram_req), co["abs_ram"].to_numpy()[ci], ram_req * co["mem_eff"].to_numpy()[ci])
    mem = mem * (0.9 + 0.1 * d) * rng.lognormal(0, 0.05, n_c)
    # a node runs no more than it has: Σ max(request, usage) within capacity in every node-hour
    node_c, run_h = node_i[rep], run / 60
    cores = fit_usage(node_c, run_h, cpu_req, cores, nodes["cpu_capacity_cores"].to_numpy() * node_rm / 60)
    mem = fit_usage(node_c, run_h, ram_req, mem, nodes["ram_capacity_bytes"].to_numpy() * node_rm / 60)
    if topo.burst_cont is not None and hod == 10 and (topo.burst_cont == ci).any():
        # one node-hour whose demand Σ max(request, usage) exceeds capacity, while usage itself still fits
        j = int(np.flatnonzero(ci == topo.burst_cont)[0])
        same = (node_i[rep] == node_i[rep][j]) & on
        others = float((cores * run / 60)[same].sum() - cores[j] * run[j] / 60)
        cores[j] = max(0.92 * nodes["cpu_capacity_cores"].iloc[node_i[rep][j]] - others, 1.5 * cpu_req[j])
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
    if not stamp:  # a range stamps its concatenated frames once (extract_demo_hours)
        return frames
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
              "pod_volume_hours", "service_hours", "gpu_hours", COVERAGE_TABLE)
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
