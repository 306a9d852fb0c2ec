"""Assembly of the workload frames: pods (phase, owners and controllers, labels, network), containers (running
minutes and run span, requests and limits, CPU/RAM/GPU use) and namespaces.

- Running minutes, run_start_s and run_end_s come from raw `kube_pod_container_status_running` samples: sample
  count x scrape interval; the first/last running sample timestamps, plus the last sample at the hour end.
- cAdvisor series carry no pod uid; the query plan reads it from the cgroup path (`id`), and here it falls back
  to the (namespace, pod) -> uid map from kube-state-metrics when the path does not embed it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pandas as pd

from pipelines.sources.prometheus.frames import (
    CONTAINER_COLS,
    GPU_RESOURCES,
    NAMESPACE_COLS,
    POD_COLS,
    SOURCE,
    Parts,
    QueryParts,
    dumps,
    merge_json,
    prefixed,
    to_frame,
)
from pipelines.sources.prometheus.runner import Point
from pipelines.timeutil import to_epoch

_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2, "Succeeded": 3, "Failed": 3}
_NO_POD = "kubeledger-none"  # the follow-up request of a chunk with nothing to settle selects (almost) nothing


def _group(h: datetime, lab: Mapping[str, str]) -> tuple[datetime, str, str, str, str]:
    """The (hour, namespace, pod, uid, container) a `by (namespace, pod, uid, container)` point stands for."""
    return h, lab.get("namespace", ""), lab.get("pod", ""), lab.get("uid", ""), lab.get("container", "")


def follow_up_pods(results: Mapping[str, list[Point]], chunks: list[list[datetime]]) -> list[list[str]]:
    """Per chunk, the pods whose containers' run span or memory average the cheaper forms could not settle
    (query_plan.running, .mem): running samples but no `first`, a `needs_last` count, or more than one
    memory series. Sorted, so requests are reproducible."""
    counted, settled, needed = set(), set(), set()
    for h, lab, v in results.get("running", []):
        part, key = lab.get("kl_part"), _group(h, lab)
        if part == "count" and v:
            counted.add(key)
        elif part == "first":
            settled.add(key)
        elif part == "needs_last":
            needed.add(key)
    needed |= counted - settled
    needed |= {_group(h, lab) for h, lab, v in results.get("mem", []) if lab.get("kl_part") == "series" and v != 1}
    hour_chunk = {h: i for i, chunk in enumerate(chunks) for h in chunk}
    pods: list[set[str]] = [set() for _ in chunks]
    for h, _ns, pod, _uid, _c in needed:
        pods[hour_chunk[h]].add(pod)
    return [sorted(p) or [_NO_POD] for p in pods]


class PodFrames(QueryParts):
    """Call pods() first: it builds the (hour, namespace, pod) -> uid, uid -> node and uid -> name maps the
    other frames use."""

    def __init__(self, cluster: str, scrape_s: float, parts: Parts, meta: dict[str, Any]) -> None:
        super().__init__(cluster, scrape_s, parts)
        self.meta = meta
        self.uids: dict[tuple[datetime, str, str], set[str]] = defaultdict(set)  # (h, ns, pod) -> uids
        self.pod_node: dict[tuple[datetime, str], str] = {}                     # (h, uid) -> node
        self.pod_name: dict[tuple[datetime, str], tuple[str, str]] = {}         # (h, uid) -> (ns, pod)

    def _uid_for(self, h: datetime, labels: Mapping[str, str], what: str) -> str | None:
        """cAdvisor series: uid from the cgroup path, else the only KSM pod with that (namespace, pod)."""
        uid = labels.get("uid", "").replace("_", "-")
        if uid:
            return uid
        cands = self.uids.get((h, labels.get("namespace", ""), labels.get("pod", "")), set())
        if len(cands) == 1:
            return next(iter(cands))
        self.meta.setdefault(f"unmatched_{what}", 0)
        self.meta[f"unmatched_{what}"] += 1
        return None

    def pods(self) -> pd.DataFrame:
        rows: dict[tuple[datetime, str], dict[str, Any]] = {}
        # in this order: a pod's row is made where it first appears (the frame's row order), and the owners,
        # labels and network of a pod need its row
        self._pod_nodes(rows)
        self._pod_phases(rows)
        self._pod_owners(rows)
        self._pod_labels(rows)
        self._pod_network(rows)
        self._pod_egress(rows)
        return to_frame(list(rows.values()), POD_COLS)

    def _pod_row(self, rows: dict[tuple[datetime, str], dict[str, Any]], h: datetime,
                 lab: Mapping[str, str]) -> dict[str, Any] | None:
        """The row of the pod a KSM point names (made, and the uid maps filled, on first sight); None without uid."""
        uid = lab.get("uid", "")
        if not uid:
            return None
        r = rows.get((h, uid))
        if r is None:
            r = rows[(h, uid)] = {"cluster": self.cluster, "hour_ts": h, "namespace": lab.get("namespace", ""),
                                  "pod": lab.get("pod", ""), "pod_uid": uid, "_source": SOURCE}
            self.uids[(h, r["namespace"], r["pod"])].add(uid)
            self.pod_name[(h, uid)] = (r["namespace"], r["pod"])
        return r

    def _pod_nodes(self, rows: dict[tuple[datetime, str], dict[str, Any]]) -> None:
        """The node from kube_pod_info, else from the running containers' or requests' series."""
        points = self.part("pod_meta", "info") + self.part("running", "count") + self.part("resources", "request")
        for h, lab, _ in points:
            r = self._pod_row(rows, h, lab)
            if r is not None and lab.get("node") and not r.get("node"):
                r["node"] = lab["node"]
                self.pod_node[(h, r["pod_uid"])] = lab["node"]

    def _pod_phases(self, rows: dict[tuple[datetime, str], dict[str, Any]]) -> None:
        """The most advanced phase seen in the hour."""
        for h, lab, _ in self.part("pod_meta", "phase"):
            r = self._pod_row(rows, h, lab)
            if r is not None and _PHASE_RANK.get(lab.get("phase", ""), -1) >= _PHASE_RANK.get(r.get("phase"), -1):
                r["phase"] = lab.get("phase")

    def _pod_owners(self, rows: dict[tuple[datetime, str], dict[str, Any]]) -> None:
        """The owner, and the controller: a ReplicaSet's or Job's own owner (Deployment, CronJob), else the owner."""
        rs_owner = {(h, lab.get("namespace"), lab.get("replicaset")): (lab.get("owner_kind"), lab.get("owner_name"))
                    for h, lab, _ in self.part("pod_meta", "rs_owner")}
        job_owner = {(h, lab.get("namespace"), lab.get("job_name")): (lab.get("owner_kind"), lab.get("owner_name"))
                     for h, lab, _ in self.part("pod_meta", "job_owner")}
        for h, lab, _ in self.part("pod_meta", "owner"):
            r = self._pod_row(rows, h, lab)
            kind, name = lab.get("owner_kind"), lab.get("owner_name")
            if r is None or not kind or kind == "<none>":
                continue
            r["owner_kind"], r["owner_name"] = kind, name
            parent = None
            if kind == "ReplicaSet":
                parent = rs_owner.get((h, r["namespace"], name))
            elif kind == "Job":
                parent = job_owner.get((h, r["namespace"], name))
            if parent and parent[0] and parent[0] != "<none>":
                r["controller_kind"], r["controller_name"] = parent
            else:
                r["controller_kind"], r["controller_name"] = kind, name

    def _pod_labels(self, rows: dict[tuple[datetime, str], dict[str, Any]]) -> None:
        """Labels and annotations as JSON, merged over the hour's series."""
        for part, col, prefix in (("labels", "labels", "label_"), ("annotations", "annotations", "annotation_")):
            acc: dict[tuple, dict[str, str]] = {}
            for h, lab, _ in self.part("pod_labels", part):
                if self._pod_row(rows, h, lab) is not None:
                    merge_json(acc, (h, lab["uid"]), prefixed(lab, prefix))
            for key, d in acc.items():
                rows[key][col] = dumps(d)

    def _pod_network(self, rows: dict[tuple[datetime, str], dict[str, Any]]) -> None:
        """Bytes sent and received in the hour (cAdvisor series, matched to a pod by uid)."""
        for part, col in (("tx", "network_transmit_bytes"), ("rx", "network_receive_bytes")):
            for h, lab, v in self.part("network", part):
                uid = self._uid_for(h, lab, "network_series")
                if uid and (h, uid) in rows and v is not None:  # rate over [h, h+1) x 3600 = bytes in the hour
                    rows[(h, uid)][col] = (rows[(h, uid)].get(col) or 0.0) + v * 3600.0

    def _pod_egress(self, rows: dict[tuple[datetime, str], dict[str, Any]]) -> None:
        """Billable egress bytes per class (network-costs), where its pod name maps to one pod."""
        for h, lab, v in self.part("network", "egress"):
            cands = self.uids.get((h, lab.get("namespace", ""), lab.get("pod_name", "")), set())
            if len(cands) != 1 or v is None:
                continue
            r = rows[(h, next(iter(cands)))]
            if lab.get("internet") == "true":
                col = "egress_internet_bytes"
            elif lab.get("same_region") == "false":
                col = "egress_cross_region_bytes"
            elif lab.get("same_zone") == "false":
                col = "egress_cross_zone_bytes"
            else:
                col = None  # same-zone traffic is free
            for c in ("egress_internet_bytes", "egress_cross_region_bytes", "egress_cross_zone_bytes"):
                r.setdefault(c, 0.0)
            if col:
                r[col] += v * 3600.0

    def containers(self) -> pd.DataFrame:
        rows: dict[tuple[datetime, str, str], dict[str, Any]] = {}

        def row(h: datetime, uid: str, lab: Mapping[str, str]) -> dict[str, Any]:
            key = (h, uid, lab.get("container", ""))
            r = rows.get(key)
            if r is None:
                ns, pod = self.pod_name.get((h, uid), (lab.get("namespace", ""), lab.get("pod", "")))
                r = rows[key] = {"cluster": self.cluster, "hour_ts": h, "namespace": ns, "pod": pod, "pod_uid": uid,
                                 "container": key[2], "node": self.pod_node.get((h, uid)), "_source": SOURCE}
            return r

        facts_by: dict[tuple[datetime, str, str], dict[str, float | None]] = {}
        # per_step (where it was needed) holds the subqueries' first/last; elsewhere running's equal them
        for q, part in (("running", "count"), ("running", "first"), ("running", "last_now"),
                        ("per_step", "first"), ("per_step", "last")):
            for h, lab, v in self.part(q, part):
                if lab.get("uid") and lab.get("container"):
                    facts_by.setdefault((h, lab["uid"], lab["container"]), {})[part] = v
        for (h, uid, c), facts in facts_by.items():
            if "count" not in facts:
                continue  # seen only through the subquery's 5-minute lookback: no sample in [h, h+1)
            r = row(h, uid, {"container": c})
            count = facts.get("count")
            r["running_minutes"] = self._minutes(count)
            lasts = [x for x in (facts.get("last"), facts.get("last_now")) if x is not None]
            hs = to_epoch(h)
            if count and facts.get("first") is not None and lasts:
                r["run_start_s"] = max(0.0, facts["first"] - hs)  # a sample just before h: running since h
                r["run_end_s"] = min(3600.0, max(lasts) - hs + self.scrape_s)

        resource_cols = {
            ("request", "cpu"): "cpu_request_cores", ("request", "memory"): "ram_request_bytes",
            ("limit", "cpu"): "cpu_limit_cores", ("limit", "memory"): "ram_limit_bytes",
        }
        for kind in ("request", "limit"):
            for h, lab, v in self.part("resources", kind):
                if not lab.get("uid") or v is None:
                    continue
                res = lab.get("resource", "")
                col = "gpu_request" if (kind == "request" and res in GPU_RESOURCES) else resource_cols.get((kind, res))
                if col:
                    r = row(h, lab["uid"], lab)
                    r[col] = max(r.get(col) or 0.0, v)
                    if lab.get("node") and not r.get("node"):
                        r["node"] = lab["node"]

        # memory average: running's for containers with one series in the hour, per_step's for the others
        single = {_group(h, lab) for h, lab, v in self.part("mem", "series") if v == 1}
        mem_avg = [p for p in self.part("mem", "avg") if _group(p[0], p[1]) in single]
        mem_avg += [p for p in self.part("per_step", "mem_avg") if _group(p[0], p[1]) not in single]
        usage: list[tuple[str, list[Point], float]] = [
            ("cpu_usage_core_seconds", self.part("cpu"), 3600.0), ("cpu_usage_max_cores", self.part("cpu_max"), 1.0),
            ("ram_usage_avg_bytes", mem_avg, 1.0), ("ram_usage_max_bytes", self.part("mem", "max"), 1.0)]
        for col, points, scale in usage:
            for h, lab, v in points:
                uid = self._uid_for(h, lab, "cadvisor_series")
                if uid is None or v is None:
                    continue
                row(h, uid, lab)[col] = v * scale

        # container-level GPU use, when dcgm-exporter maps GPUs to pods
        for h, lab, v in self.part("gpu", "util"):
            ns = lab.get("namespace") or lab.get("exported_namespace")
            pod = lab.get("pod") or lab.get("exported_pod")
            cont = lab.get("container") or lab.get("exported_container")
            cands = self.uids.get((h, ns or "", pod or ""), set())
            if not (ns and pod and cont) or len(cands) != 1 or v is None:
                continue
            uid = next(iter(cands))
            if (h, uid, cont) in rows:
                r = rows[(h, uid, cont)]
                r["gpu_usage_avg"] = (r.get("gpu_usage_avg") or 0.0) + v / 100.0
        return to_frame(list(rows.values()), CONTAINER_COLS)

    def namespaces(self) -> pd.DataFrame:
        rows: dict[tuple[datetime, str], dict[str, Any]] = {}
        for h, ns, _pod in list(self.uids):
            if ns:
                rows.setdefault((h, ns), {"cluster": self.cluster, "hour_ts": h, "namespace": ns, "_source": SOURCE})
        for part, prefix in (("labels", "label_"), ("annotations", "annotation_")):
            acc: dict[tuple, dict[str, str]] = {}
            for h, lab, _ in self.part("namespaces", part):
                ns = lab.get("namespace")
                if ns:
                    rows.setdefault((h, ns), {"cluster": self.cluster, "hour_ts": h, "namespace": ns,
                                              "_source": SOURCE})
                    merge_json(acc, (h, ns), prefixed(lab, prefix))
            for key, d in acc.items():
                rows[key][part] = dumps(d)
        return to_frame(list(rows.values()), NAMESPACE_COLS)

