"""Assembly of the cluster frames: nodes, volumes (and pod mounts), LoadBalancer services, GPUs, and the coverage
of the optional series.

- LoadBalancer services -> pods: `kube_endpoint_address` (KSM >= 2.6, one series per endpoint IP, endpoint name =
  service name) restricted to LoadBalancer services, joined to `kube_pod_info`'s `pod_ip` within the same hour
  (host-network pods are skipped: they share the node IP). Without `kube_endpoint_address` the service is landed
  with pod_uid NULL; the models then fall back to the Kubernetes API snapshot's Service selectors.
- Optional series (base.OPTIONAL_SERIES) are checked, not assumed: raw.metric_coverage_hours holds the series
  count per hour and family (0 = absent); absent ones a present workload needed are warned about.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from pipelines.sources.base import COVERAGE_COLS, OPTIONAL_SERIES
from pipelines.sources.prometheus.frames import (
    GPU_COLS,
    GPU_RESOURCES,
    NODE_COLS,
    POD_VOLUME_COLS,
    SERVICE_COLS,
    SOURCE,
    VOLUME_COLS,
    VOLUME_STATS_COLS,
    QueryParts,
    dumps,
    merge_json,
    prefixed,
    to_frame,
)

_NODE_LABEL_KEYS = {
    "instance_type": ("node_kubernetes_io_instance_type", "beta_kubernetes_io_instance_type"),
    "region": ("topology_kubernetes_io_region", "failure_domain_beta_kubernetes_io_region"),
    "zone": ("topology_kubernetes_io_zone", "failure_domain_beta_kubernetes_io_zone"),
    "gpu_model": ("nvidia_com_gpu_product",),
}


class ClusterFrames(QueryParts):
    def _keyed_rows(self, column: str) -> tuple[dict[tuple[datetime, str], dict[str, Any]],
                                                 Callable[[datetime, str], dict[str, Any]]]:
        """Rows keyed by (hour, value of `column`), and the function returning one of them (made on first use)."""
        rows: dict[tuple[datetime, str], dict[str, Any]] = {}

        def row(h: datetime, value: str) -> dict[str, Any]:
            r = rows.get((h, value))
            if r is None:
                r = rows[(h, value)] = {"cluster": self.cluster, "hour_ts": h, column: value, "_source": SOURCE}
            return r

        return rows, row

    def nodes(self) -> pd.DataFrame:
        rows, row = self._keyed_rows("node")
        for h, lab, _ in self.part("nodes", "info"):
            if lab.get("node"):
                row(h, lab["node"])["provider_id"] = lab.get("provider_id") or None
        labels: dict[tuple, dict[str, str]] = {}
        for h, lab, _ in self.part("nodes", "labels"):
            if lab.get("node"):
                row(h, lab["node"])
                merge_json(labels, (h, lab["node"]), prefixed(lab, "label_"))
        for key, d in labels.items():
            rows[key]["labels"] = dumps(d)
            for col, keys in _NODE_LABEL_KEYS.items():
                rows[key][col] = next((d[k] for k in keys if d.get(k)), None)
        for part, prefix in (("capacity", "capacity"), ("allocatable", "allocatable")):
            for h, lab, v in self.part("nodes", part):
                if not lab.get("node"):
                    continue
                res = lab.get("resource")
                col = {"cpu": f"cpu_{prefix}_cores", "memory": f"ram_{prefix}_bytes"}.get(res or "")
                if res in GPU_RESOURCES and part == "capacity":
                    col = "gpu_capacity"
                if col:
                    row(h, lab["node"])[col] = v
        for h, lab, v in self.part("presence", "node"):
            if lab.get("node"):
                row(h, lab["node"])["running_minutes"] = self._minutes(v)
        for h, lab, _ in self.part("gpu", "util"):
            node = lab.get("node") or lab.get("Hostname")
            if node and (h, node) in rows and not rows[(h, node)].get("gpu_model") and lab.get("modelName"):
                rows[(h, node)]["gpu_model"] = lab["modelName"]
        return to_frame(list(rows.values()), NODE_COLS)

    def volumes(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        rows, row = self._keyed_rows("pv")
        for h, lab, _ in self.part("volumes", "pv"):
            pv = lab.get("persistentvolume")
            if pv:
                r = row(h, pv)
                r["storage_class"] = lab.get("storageclass") or None
                r["provider_volume_id"] = next((lab[k] for k in ("csi_volume_handle", "ebs_volume_id",
                                                                  "gce_persistent_disk_name", "azure_disk_name")
                                                if lab.get(k)), None)
        for h, lab, v in self.part("volumes", "pv_capacity"):
            if lab.get("persistentvolume"):
                row(h, lab["persistentvolume"])["pv_capacity_bytes"] = v
        for h, lab, _ in self.part("volumes", "pv_claim"):
            if lab.get("persistentvolume") and lab.get("name"):
                r = row(h, lab["persistentvolume"])
                r["namespace"], r["pvc"] = lab.get("claim_namespace") or None, lab["name"]
        pvc_req = {(h, lab.get("namespace"), lab.get("persistentvolumeclaim")): v
                   for h, lab, v in self.part("volumes", "pvc_request")}
        pvc_min = {(h, lab.get("namespace"), lab.get("persistentvolumeclaim")): v
                   for h, lab, v in self.part("presence", "pvc")}
        for h, lab, _ in self.part("volumes", "pvc"):
            pv = lab.get("volumename")
            if not pv:
                continue  # unbound claim: no volume to charge yet
            r = row(h, pv)
            r["namespace"], r["pvc"] = lab.get("namespace"), lab.get("persistentvolumeclaim")
            if lab.get("storageclass") and not r.get("storage_class"):
                r["storage_class"] = lab["storageclass"]
        pv_min = {(h, lab.get("persistentvolume")): v for h, lab, v in self.part("presence", "pv")}
        for (h, pv), r in rows.items():
            key = (h, r.get("namespace"), r.get("pvc"))
            r["pvc_request_bytes"] = pvc_req.get(key)
            count = pvc_min.get(key) if r.get("pvc") else pv_min.get((h, pv))
            r["active_minutes"] = self._minutes(count)
        mounts = []
        for h, lab, _ in self.part("pod_meta", "mounts"):
            if lab.get("uid") and lab.get("persistentvolumeclaim"):
                mounts.append({"cluster": self.cluster, "hour_ts": h, "namespace": lab.get("namespace", ""),
                               "pod_uid": lab["uid"], "pvc": lab["persistentvolumeclaim"], "_source": SOURCE})
        return to_frame(list(rows.values()), VOLUME_COLS), to_frame(mounts, POD_VOLUME_COLS).drop_duplicates()

    def volume_stats(self) -> pd.DataFrame:
        """The kubelet's used and total bytes of each mounted claim per hour (no row for an unmounted claim: the
        kubelet reports the volumes its pods mount)."""
        rows: dict[tuple, dict[str, Any]] = {}
        for part, col in (("used_avg", "used_avg_bytes"), ("used_max", "used_max_bytes"),
                          ("stats_capacity", "capacity_bytes")):
            for h, lab, v in self.part("volumes", part):
                ns, pvc = lab.get("namespace"), lab.get("persistentvolumeclaim")
                if not ns or not pvc:
                    continue
                rows.setdefault((h, ns, pvc), {"cluster": self.cluster, "hour_ts": h, "namespace": ns, "pvc": pvc,
                                               "_source": SOURCE})[col] = v
        return to_frame(list(rows.values()), VOLUME_STATS_COLS)

    def services(self) -> pd.DataFrame:
        ingress: dict[tuple, str] = {}
        for h, lab, _ in self.part("services", "ingress"):
            ingress.setdefault((h, lab.get("namespace"), lab.get("service")), lab.get("ip") or lab.get("hostname")
                               or "")
        minutes = {(h, lab.get("namespace"), lab.get("service")): v for h, lab, v in self.part("presence", "service")}
        ip_pods: dict[tuple[datetime, str], set[str]] = defaultdict(set)
        for h, lab, _ in self.part("pod_meta", "info"):
            if lab.get("pod_ip") and lab.get("uid") and lab.get("host_network") != "true":
                ip_pods[(h, lab["pod_ip"])].add(lab["uid"])
        svc_pods: dict[tuple, set[str]] = defaultdict(set)
        for h, lab, _ in self.part("services", "endpoints"):
            svc_pods[(h, lab.get("namespace"), lab.get("endpoint"))] |= ip_pods.get((h, lab.get("ip", "")), set())
        rows = []
        for h, lab, _ in self.part("services", "lb"):
            key = (h, lab.get("namespace"), lab.get("service"))
            base = {"cluster": self.cluster, "hour_ts": h, "namespace": key[1], "service": key[2],
                    "service_type": "LoadBalancer", "ingress": ingress.get(key) or None,
                    "active_minutes": self._minutes(minutes.get(key)), "_source": SOURCE}
            for uid in sorted(svc_pods.get(key, set())) or [None]:
                rows.append({**base, "pod_uid": uid})
        return to_frame(rows, SERVICE_COLS)

    def coverage(self, hours: Sequence[datetime]) -> tuple[pd.DataFrame, dict[str, list[datetime]]]:
        """One row per (hour, optional series family): series seen in the hour, 0 = absent; and the absent hours
        per family."""
        counts = {(h, lab.get("kl_metric")): v for h, lab, v in self.part("presence", "coverage")}
        rows, absent = [], {}
        for metric in OPTIONAL_SERIES:
            for h in hours:
                n = int(counts.get((h, metric)) or 0)
                rows.append({"cluster": self.cluster, "hour_ts": h, "metric": metric, "series_count": n,
                             "_source": SOURCE})
                if n == 0:
                    absent.setdefault(metric, []).append(h)
        return to_frame(rows, COVERAGE_COLS), absent

    def absent_warnings(self, absent: Mapping[str, list[datetime]]) -> list[str]:
        """A warning per absent family that some hour needed: LB endpoints where LB services exist, DCGM where
        nodes have GPUs; services and egress always."""
        needed: dict[str, set[datetime]] = {
            "kube_endpoint_address": {h for h, _, _ in self.part("services", "lb")},
        }
        gpu_hours = {h for h, lab, v in self.part("nodes", "capacity")
                     if lab.get("resource") in GPU_RESOURCES and (v or 0) > 0}
        needed["DCGM_FI_DEV_GPU_UTIL"] = needed["DCGM_FI_DEV_POWER_USAGE"] = gpu_hours
        out = []
        for metric, hours in absent.items():
            hit = sorted(set(hours) & needed[metric]) if metric in needed else sorted(hours)
            if hit:
                out.append(f"cluster {self.cluster}: {metric} absent in {len(hit)} hour(s) from "
                           f"{hit[0].isoformat()}; {OPTIONAL_SERIES[metric]}")
        return out

    def gpus(self) -> pd.DataFrame:
        rows: dict[tuple, dict[str, Any]] = {}
        for part, col, scale in (("util", "util_avg", 0.01), ("power", "power_avg_w", 1.0)):
            for h, lab, v in self.part("gpu", part):
                node = lab.get("node") or lab.get("Hostname")
                uuid = lab.get("UUID") or lab.get("gpu")
                if not node or not uuid:
                    continue
                ns = lab.get("namespace") or lab.get("exported_namespace") or None
                pod = lab.get("pod") or lab.get("exported_pod") or None
                cont = lab.get("container") or lab.get("exported_container") or None
                key = (h, node, uuid, ns, pod, cont)
                r = rows.setdefault(key, {"cluster": self.cluster, "hour_ts": h, "node": node, "gpu_uuid": uuid,
                                          "model_name": lab.get("modelName"), "namespace": ns, "pod": pod,
                                          "container": cont, "_source": SOURCE})
                r[col] = None if v is None else v * scale
        return to_frame(list(rows.values()), GPU_COLS)

