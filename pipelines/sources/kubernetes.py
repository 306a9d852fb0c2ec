"""Kubernetes API snapshot → raw.k8s_objects (one row per object, per cluster and hour).

The metrics give lifetimes; the API gives what they lack: original label keys, annotations, the controller
owner chain and provider ids. Lists go through the official client's API classes with
`_preload_content=False`: we parse the raw JSON ourselves, which is faster and does not depend on the v37
pydantic models accepting every object a real cluster (or an older apiserver) returns.

`spec` holds only the fields of SOURCES.md §5, with API (camelCase) names and quantities parsed to numbers
(CPU in cores, memory and storage in bytes, GPUs as counts):

- Node: providerID, capacity{resource: n}, allocatable{resource: n}, unschedulable
- Pod: nodeName, pinnedNodeLabels[] (`pinned_node_labels`), phase, creationTimestamp, deletionTimestamp,
  containers[{name, requests{}, limits{}}], containerStatuses[{name, state, reason, restartCount}],
  pvcClaimNames[]
- PersistentVolumeClaim: storageClassName, requestsStorage, volumeName, capacityStorage, phase
- PersistentVolume: capacityStorage, storageClassName, claimRef{namespace, name}, csiDriver,
  csiVolumeHandle, phase
- Service: type, selector{}, loadBalancerIngress[{ip, hostname}]
- Namespace: phase; controllers (ReplicaSet, Deployment, StatefulSet, DaemonSet, Job, CronJob): {}
- PodDisruptionBudget (policy/v1): minAvailable, maxUnavailable (an int, or a "N%" string as the API gives it),
  matchLabels{}, matchExpressions{index: {key, operator, values[]}} (null selector: matchLabels null, which
  selects no pod; `{}` selects every pod of the namespace), disruptionsAllowed, expectedPods (status)
- HorizontalPodAutoscaler (autoscaling/v2): scaleTargetKind, scaleTargetName (spec.scaleTargetRef), minReplicas,
  maxReplicas

Each snapshot also lands one `ListedKinds` row (name `listed-kinds`, spec {listed[], skipped[]}): which kinds the
API answered for that hour, so an empty list (no PodDisruptionBudget) is told apart from a kind never listed (403,
404): the spot_eligible recommendation flags `pdb_not_checked` in the second case, hpa_candidate `hpa_not_checked`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

import duckdb
import pandas as pd
import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from pipelines.settings import ClusterSettings, KubernetesSettings, Settings
from pipelines.timeutil import hour_floor, utc_now

from . import base
from .base import ExtractResult, SourceError, auth_line
from .faults import MAX_RETRY_AFTER_S, Problem, hint_for, kind_of_status

log = logging.getLogger(__name__)

TABLE = "k8s_objects"
COLUMNS = [
    "cluster", "hour_ts", "kind", "namespace", "name", "uid", "labels", "annotations",
    "owner_kind", "owner_name", "owner_uid", "spec",
]
MAX_THROTTLE_RETRIES = 5
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})  # throttling and apiserver overload are transient
REQUEST_TIMEOUT_S = (10.0, 120.0)  # (connect, read)
# kubectl stores the whole applied manifest here: it would bloat every row and is never read.
DROPPED_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})

_sleep: Callable[[float], None] = time.sleep  # tests replace it to assert Retry-After without waiting


@dataclass(frozen=True)
class _Kind:
    kind: str
    api: str  # core | apps | batch | policy | autoscaling
    method: str  # list method on the official API class
    path: str  # for messages and RBAC hints

    def rbac_hint(self) -> str:
        """The ClusterRole rule this kind needs: verb `list` on its resource in its API group (deploy/kubernetes)."""
        parts = self.path.strip("/").split("/")  # api/v1/<resource> | apis/<group>/v1/<resource>
        group = parts[1] if parts[0] == "apis" else ""
        return f'grant verb "list" on resource "{parts[-1]}" in API group "{group}" to the ClusterRole'


KINDS: tuple[_Kind, ...] = (
    _Kind("Node", "core", "list_node", "/api/v1/nodes"),
    _Kind("Namespace", "core", "list_namespace", "/api/v1/namespaces"),
    _Kind("Pod", "core", "list_pod_for_all_namespaces", "/api/v1/pods"),
    _Kind("PersistentVolumeClaim", "core", "list_persistent_volume_claim_for_all_namespaces",
          "/api/v1/persistentvolumeclaims"),
    _Kind("PersistentVolume", "core", "list_persistent_volume", "/api/v1/persistentvolumes"),
    _Kind("Service", "core", "list_service_for_all_namespaces", "/api/v1/services"),
    _Kind("ReplicaSet", "apps", "list_replica_set_for_all_namespaces", "/apis/apps/v1/replicasets"),
    _Kind("Deployment", "apps", "list_deployment_for_all_namespaces", "/apis/apps/v1/deployments"),
    _Kind("StatefulSet", "apps", "list_stateful_set_for_all_namespaces", "/apis/apps/v1/statefulsets"),
    _Kind("DaemonSet", "apps", "list_daemon_set_for_all_namespaces", "/apis/apps/v1/daemonsets"),
    _Kind("Job", "batch", "list_job_for_all_namespaces", "/apis/batch/v1/jobs"),
    _Kind("CronJob", "batch", "list_cron_job_for_all_namespaces", "/apis/batch/v1/cronjobs"),
    _Kind("PodDisruptionBudget", "policy", "list_pod_disruption_budget_for_all_namespaces",
          "/apis/policy/v1/poddisruptionbudgets"),
    _Kind("HorizontalPodAutoscaler", "autoscaling", "list_horizontal_pod_autoscaler_for_all_namespaces",
          "/apis/autoscaling/v2/horizontalpodautoscalers"),
)
# the marker row of each snapshot: which kinds were listed (module docstring)
LISTED_KIND = "ListedKinds"
LISTED_NAME = "listed-kinds"

# --- quantities -----------------------------------------------------------------------------------------

_QUANTITY_RE = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)
_SUFFIX_FACTOR: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"),
    "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30),
    "Ti": Decimal(2**40), "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}


def parse_quantity(value: str | int | float) -> float:
    """Parse a Kubernetes resource quantity exactly ('250m' → 0.25, '1Gi' → 1073741824.0, '1e3' → 1000.0).

    Grammar (apimachinery resource.Quantity): signed decimal number, then a binary SI suffix
    (Ki..Ei), a decimal SI suffix (n u m '' k M G T P E) or a decimal exponent (e3, E-2). Note 'E' alone is
    exa while 'E3' is an exponent. Decimal arithmetic keeps '3920m' at exactly 3.92.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    m = _QUANTITY_RE.match(text)
    if not m:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    try:
        number = Decimal(m.group("num"))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid decimals
        raise ValueError(f"not a Kubernetes quantity: {value!r}") from exc
    suffix = m.group("suffix") or ""
    if suffix in _SUFFIX_FACTOR:
        factor = _SUFFIX_FACTOR[suffix]
    else:  # decimal exponent: e3, E-2
        factor = Decimal(10) ** int(suffix[1:])
    return float(number * factor)


def _quantities(resources: dict[str, Any] | None, warnings: list[str], where: str) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, raw in (resources or {}).items():
        try:
            out[key] = parse_quantity(raw)
        except ValueError:
            out[key] = None  # missing, never 0
            warnings.append(f"{where}: resource {key}={raw!r} is not a quantity; stored as null")
    return out


def _one_quantity(raw: Any, warnings: list[str], where: str) -> float | None:
    if raw is None:
        return None
    try:
        return parse_quantity(raw)
    except ValueError:
        warnings.append(f"{where}: {raw!r} is not a quantity; stored as null")
        return None


# --- per-kind projections -------------------------------------------------------------------------------

def _spec_node(obj: dict[str, Any], warnings: list[str], where: str) -> dict[str, Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {
        "providerID": spec.get("providerID"),
        "unschedulable": bool(spec.get("unschedulable", False)),
        "capacity": _quantities(status.get("capacity"), warnings, where),
        "allocatable": _quantities(status.get("allocatable"), warnings, where),
    }


def _container_state(status: dict[str, Any]) -> tuple[str | None, str | None]:
    state = status.get("state") or {}
    for name in ("waiting", "running", "terminated"):
        if name in state and state[name] is not None:
            return name, (state[name] or {}).get("reason")
    return None, None


def _spec_pod(obj: dict[str, Any], warnings: list[str], where: str) -> dict[str, Any]:
    spec, status, meta = obj.get("spec") or {}, obj.get("status") or {}, obj.get("metadata") or {}
    containers = []
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        cw = f"{where} container {c.get('name')}"
        containers.append({
            "name": c.get("name"),
            "requests": _quantities(res.get("requests"), warnings, cw),
            "limits": _quantities(res.get("limits"), warnings, cw),
        })
    statuses = []
    for cs in status.get("containerStatuses") or []:
        state, reason = _container_state(cs)
        statuses.append({"name": cs.get("name"), "state": state, "reason": reason,
                         "restartCount": cs.get("restartCount")})
    claims = [
        v["persistentVolumeClaim"]["claimName"]
        for v in spec.get("volumes") or []
        if (v.get("persistentVolumeClaim") or {}).get("claimName")
    ]
    return {
        "nodeName": spec.get("nodeName"),
        "pinnedNodeLabels": pinned_node_labels(spec),
        "phase": status.get("phase"),
        "creationTimestamp": meta.get("creationTimestamp"),
        "deletionTimestamp": meta.get("deletionTimestamp"),
        "containers": containers,
        "containerStatuses": statuses,
        "pvcClaimNames": claims,
    }


def pinned_node_labels(spec: dict[str, Any]) -> list[str]:
    """The node label keys (and `metadata.name` for a node-name field) that the pod's required placement fixes:
    every `nodeSelector` key, and each key that every required node-affinity term constrains with `In` (the terms
    are alternatives, so a key one term leaves free pins nothing). Which keys mean a zone, region or node is the
    recommendations' rule (macros/recommendations.sql rec_placement_pin_keys), not this parser's."""
    keys = set((spec.get("nodeSelector") or {}).keys())
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    per_term = [{e.get("key") for e in (t.get("matchExpressions") or []) + (t.get("matchFields") or [])
                 if e.get("operator") == "In" and e.get("key")} for t in terms]
    if per_term:
        keys |= set.intersection(*per_term)
    return sorted(keys)


def _spec_pvc(obj: dict[str, Any], warnings: list[str], where: str) -> dict[str, Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {
        "storageClassName": spec.get("storageClassName"),
        "requestsStorage": _one_quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage"),
                                         warnings, where),
        "volumeName": spec.get("volumeName"),
        "capacityStorage": _one_quantity((status.get("capacity") or {}).get("storage"), warnings, where),
        "phase": status.get("phase"),
    }


def _spec_pv(obj: dict[str, Any], warnings: list[str], where: str) -> dict[str, Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    claim = spec.get("claimRef") or None
    csi = spec.get("csi") or {}
    return {
        "capacityStorage": _one_quantity((spec.get("capacity") or {}).get("storage"), warnings, where),
        "storageClassName": spec.get("storageClassName"),
        "claimRef": {"namespace": claim.get("namespace"), "name": claim.get("name")} if claim else None,
        "csiDriver": csi.get("driver"),
        "csiVolumeHandle": csi.get("volumeHandle"),
        "phase": status.get("phase"),
    }


def _spec_service(obj: dict[str, Any], warnings: list[str], where: str) -> dict[str, Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ingress = ((status.get("loadBalancer") or {}).get("ingress")) or []
    return {
        "type": spec.get("type"),
        "selector": spec.get("selector") or {},
        "loadBalancerIngress": [{"ip": i.get("ip"), "hostname": i.get("hostname")} for i in ingress],
    }


def _int_or_percent(raw: Any) -> int | str | None:
    """An IntOrString field as the API gives it: an int, or a percentage string kept as text ("50%")."""
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    text = str(raw).strip()
    return int(text) if text.isdigit() else text


def _spec_pdb(obj: dict[str, Any], warnings: list[str], where: str) -> dict[str, Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    selector = spec.get("selector")
    expressions = (selector or {}).get("matchExpressions") or []
    return {
        "minAvailable": _int_or_percent(spec.get("minAvailable")),
        "maxUnavailable": _int_or_percent(spec.get("maxUnavailable")),
        # an absent selector selects nothing (matchLabels null); `{}` selects the whole namespace
        "matchLabels": None if selector is None else (selector.get("matchLabels") or {}),
        # keyed by position: the models walk JSON object keys portably (macros unnest_json_keys), not arrays
        "matchExpressions": {str(i): {"key": e.get("key"), "operator": e.get("operator"),
                                      "values": list(e.get("values") or [])}
                             for i, e in enumerate(expressions)},
        "disruptionsAllowed": status.get("disruptionsAllowed"),
        "expectedPods": status.get("expectedPods"),
    }


def _spec_hpa(obj: dict[str, Any], warnings: list[str], where: str) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    target = spec.get("scaleTargetRef") or {}
    return {"scaleTargetKind": target.get("kind"), "scaleTargetName": target.get("name"),
            "minReplicas": spec.get("minReplicas"), "maxReplicas": spec.get("maxReplicas")}


def _spec_namespace(obj: dict[str, Any], warnings: list[str], where: str) -> dict[str, Any]:
    return {"phase": (obj.get("status") or {}).get("phase")}


_SPEC: dict[str, Callable[[dict[str, Any], list[str], str], dict[str, Any]]] = {
    "Node": _spec_node,
    "Pod": _spec_pod,
    "PersistentVolumeClaim": _spec_pvc,
    "PersistentVolume": _spec_pv,
    "Service": _spec_service,
    "Namespace": _spec_namespace,
    "PodDisruptionBudget": _spec_pdb,
    "HorizontalPodAutoscaler": _spec_hpa,
}


def _controller(meta: dict[str, Any]) -> dict[str, Any] | None:
    refs = meta.get("ownerReferences") or []
    for ref in refs:
        if ref.get("controller"):
            return ref
    # Some operators omit `controller: true`; a sole owner is still the only chain there is.
    return refs[0] if len(refs) == 1 else None


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def object_row(kind: str, obj: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """Project one API object onto the raw.k8s_objects columns (without cluster/hour)."""
    meta = obj.get("metadata") or {}
    where = f"{kind} {meta.get('namespace') + '/' if meta.get('namespace') else ''}{meta.get('name')}"
    owner = _controller(meta) or {}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in DROPPED_ANNOTATIONS}
    project = _SPEC.get(kind)
    return {
        "kind": kind,
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "labels": _dumps(meta.get("labels") or {}),
        "annotations": _dumps(annotations),
        "owner_kind": owner.get("kind"),
        "owner_name": owner.get("name"),
        "owner_uid": owner.get("uid"),
        "spec": _dumps(project(obj, warnings, where) if project else {}),
    }


# --- client and paging ----------------------------------------------------------------------------------

def build_api_client(cluster: ClusterSettings) -> client.ApiClient:
    """An ApiClient from the cluster's settings: in-cluster, kubeconfig (context/file) or an explicit host."""
    k = cluster.kubernetes
    configuration = client.Configuration()
    try:
        if k.in_cluster:
            # re-reads the rotating bound service-account token before it expires
            config.load_incluster_config(client_configuration=configuration)
        elif k.host is None or k.kubeconfig or k.context:
            config.load_kube_config(config_file=k.kubeconfig, context=k.context,
                                    client_configuration=configuration, persist_config=False)
    except (ConfigException, OSError) as exc:
        how = "in-cluster service account" if k.in_cluster else f"kubeconfig {k.kubeconfig or '~/.kube/config'}"
        raise SourceError(f"cluster {cluster.name}: cannot load Kubernetes credentials from {how}: {exc}") from exc
    if k.host:
        configuration.host = k.host.rstrip("/")
    configuration.verify_ssl = bool(k.verify_tls and configuration.verify_ssl)
    # urllib3 would otherwise sleep through 429/503 Retry-After itself (hidden, unbounded by us); keep its
    # connect/read retries and let _list_all own throttling.
    # connect errors retried 3 times, a read timeout once: an apiserver that accepts and never answers costs two
    # timeouts (clusters[].kubernetes.timeout_s), then the cluster's hours fall back
    configuration.retries = urllib3.util.Retry(total=3, read=1, status=0, respect_retry_after_header=False,
                                               raise_on_status=False)
    return client.ApiClient(configuration)


def _status_message(exc: ApiException) -> str:
    """The Status object's message (the apiserver's own words), else the HTTP reason."""
    try:
        body = json.loads(exc.body or "")
        if isinstance(body, dict) and body.get("message"):
            return f"{body.get('reason') or exc.reason}: {body['message']}"
    except ValueError:
        pass
    return str(exc.reason or "no message")


def _retry_after(exc: ApiException, attempt: int) -> float:
    raw = (exc.headers or {}).get("Retry-After")
    try:
        wait = float(raw) if raw is not None else min(2.0 ** (attempt - 1), 8.0)
    except ValueError:
        wait = min(2.0 ** (attempt - 1), 8.0)
    return min(max(wait, 0.0), MAX_RETRY_AFTER_S)


def _list_body(cluster: str, spec: _Kind, data: bytes) -> dict[str, Any]:
    """A list answer's JSON; an HTML page from a proxy, a cut-off body or JSON without `items` is a SourceError
    (an empty `items` list is a real answer, an absent one is not)."""
    try:
        body = json.loads(data)
    except ValueError as exc:
        raise SourceError(f"cluster {cluster}: GET {spec.path} answered something that is not JSON "
                          f"({data[:60]!r}…): {exc}") from exc
    if not isinstance(body, dict) or "items" not in body:
        raise SourceError(f"cluster {cluster}: GET {spec.path} answered JSON of an unexpected shape "
                          f"(no `items`): {str(body)[:120]}")
    return body


class _KindUnavailable(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _list_all(cluster: str, list_fn: Callable[..., Any], spec: _Kind, page_size: int,
              stats: dict[str, Any], timeout: tuple[float, float] = REQUEST_TIMEOUT_S) -> list[dict[str, Any]]:
    """All items of one kind, page by page; an expired continue token restarts the list once."""
    restarted = False
    throttled = 0
    while True:
        items: list[dict[str, Any]] = []
        token: str | None = None
        try:
            while True:
                try:
                    kwargs: dict[str, Any] = {"limit": page_size, "_preload_content": False,
                                              "_request_timeout": timeout}
                    if token:
                        kwargs["_continue"] = token
                    resp = list_fn(**kwargs)
                except ApiException as exc:
                    if exc.status in RETRY_STATUSES and throttled < MAX_THROTTLE_RETRIES:
                        throttled += 1
                        wait = _retry_after(exc, throttled)
                        stats["throttled_s"] = stats.get("throttled_s", 0.0) + wait
                        _sleep(wait)
                        continue  # same page, same token
                    raise
                stats["pages"] = stats.get("pages", 0) + 1
                body = _list_body(cluster, spec, resp.data)
                items.extend(body.get("items") or [])
                meta = body.get("metadata") or {}
                stats["resourceVersion"] = meta.get("resourceVersion")
                token = meta.get("continue") or None
                if not token:
                    return items
        except ApiException as exc:
            if exc.status == 410 and not restarted:
                # A consistent snapshot needs a fresh list; the 410's own token would mix snapshots.
                restarted = True
                stats["restarted"] = True
                continue
            if exc.status in (403, 404):
                raise _KindUnavailable(exc.status, _status_message(exc)) from exc
            raise SourceError(
                f"cluster {cluster}: GET {spec.path} failed with HTTP {exc.status}: {_status_message(exc)}"
            ) from exc


def extract_kubernetes_snapshot(
    cluster: ClusterSettings,
    hour: datetime,
    api_client: client.ApiClient | None = None,
) -> ExtractResult:
    """Snapshot the cluster's objects for `hour` into raw.k8s_objects.

    A kind the service account may not list (403) or the apiserver does not serve (404) is skipped with a
    warning in metadata; 401, connection failures, repeated 410/429 or 5xx raise SourceError.
    A caller-supplied `api_client` keeps its own urllib3 retry policy (the default one already sleeps
    through a few 429 Retry-After answers before ours sees them).
    """
    hour_ts = hour_floor(hour)
    owns_client = api_client is None
    api = api_client or build_api_client(cluster)
    apis = {"core": client.CoreV1Api(api), "apps": client.AppsV1Api(api), "batch": client.BatchV1Api(api),
            "policy": client.PolicyV1Api(api), "autoscaling": client.AutoscalingV2Api(api)}
    page_size = max(1, int(cluster.kubernetes.page_size))
    warnings: list[str] = []
    skipped: list[str] = []
    requests: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        for spec in KINDS:
            stats: dict[str, Any] = {"path": spec.path}
            requests[spec.kind] = stats
            list_fn = getattr(apis[spec.api], spec.method)
            try:
                timeout = (min(10.0, cluster.kubernetes.timeout_s), cluster.kubernetes.timeout_s)
                items = _list_all(cluster.name, list_fn, spec, page_size, stats, timeout)
            except _KindUnavailable as exc:
                hint = f" ({spec.rbac_hint()})" if exc.status == 403 else ""
                warnings.append(f"cluster {cluster.name}: skipped {spec.kind}: GET {spec.path} "
                                f"returned HTTP {exc.status}: {exc.message}{hint}")
                skipped.append(spec.kind)
                continue
            except urllib3.exceptions.HTTPError as exc:
                raise SourceError(
                    f"cluster {cluster.name}: GET {api.configuration.host}{spec.path} failed: "
                    f"cannot reach the Kubernetes API: {exc}"
                ) from exc
            stats["items"] = len(items)
            for obj in items:
                rows.append(object_row(spec.kind, obj, warnings))
    finally:
        if owns_client:
            api.close()
    if len(skipped) == len(KINDS):
        raise SourceError(f"cluster {cluster.name}: every kind was refused; first: {warnings[0]}")
    rows.append({"kind": LISTED_KIND, "namespace": None, "name": LISTED_NAME, "uid": f"kubeledger:{LISTED_NAME}",
                 "labels": "{}", "annotations": "{}", "owner_kind": None, "owner_name": None, "owner_uid": None,
                 "spec": _dumps({"listed": [k.kind for k in KINDS if k.kind not in skipped], "skipped": skipped})})
    frame = pd.DataFrame(rows, columns=COLUMNS[2:])
    frame.insert(0, "hour_ts", pd.Series([hour_ts] * len(frame), dtype="datetime64[us]"))
    frame.insert(0, "cluster", cluster.name)
    for w in warnings:
        log.warning(w)
    return ExtractResult(
        batches={TABLE: frame},
        partitions=[{"cluster": cluster.name, "hour_ts": hour_ts}],
        metadata={
            "host": api.configuration.host,
            "requests": requests,
            "skipped_kinds": skipped,
            "warnings": warnings,
            "objects": len(frame) - 1,  # API objects, without the ListedKinds row
            "seconds": round(time.monotonic() - started, 3),
        },
    )




def extract_kubernetes(settings: Settings, con: duckdb.DuckDBPyConnection, hours: list[datetime],
                       clusters: Iterable[ClusterSettings] | None = None,
                       now: datetime | None = None) -> dict[str, Any]:
    """Snapshot the Kubernetes API for the clusters that enable it. Only the hours within the cluster's
    `kubernetes.snapshot_reach_hours` of now are snapshotted; older hours keep what was landed then (metrics carry
    the rest). An API that fails (unreachable, credentials refused, 5xx) never fails the run: that cluster's hours
    keep the metrics' metadata, as hours out of reach do, and the failure is one Problem (source `kubernetes`)."""
    now = utc_now(now)
    summary: dict[str, Any] = {"rows": 0, "skipped_hours": 0, "warnings": [], "problems": [], "days": []}
    for cluster in clusters or settings.clusters:
        if not cluster.kubernetes.enabled:
            continue
        reach = timedelta(hours=cluster.kubernetes.snapshot_reach_hours)
        failed: SourceError | None = None
        missed: list[datetime] = []
        for hour in hours:
            if now - hour > reach:
                summary["skipped_hours"] += 1
                continue
            summary["days"].append(hour.date())
            if failed is not None:  # one failure per cluster and run: the API is not asked again
                missed.append(hour)
                continue
            try:
                result = extract_kubernetes_snapshot(cluster, hour)
            except SourceError as exc:
                failed = exc
                missed.append(hour)
                log.info("kubernetes %s: %s", cluster.name, exc)
                continue
            summary["rows"] += sum(base.land(con, result).values())
            summary["warnings"].extend(result.metadata.get("warnings", []) or [])
        if failed is not None:
            summary["problems"].append(_problem(cluster, failed, missed, settings.clusters.index(cluster)))
    return summary


def _auth_setting(k: KubernetesSettings, key: str) -> str:
    """The key that supplies the credentials the API refused."""
    if k.in_cluster:
        return f"{key}.in_cluster (the pod's service account and its RBAC)"
    if k.kubeconfig or k.context or not k.host:
        return f"{key}.kubeconfig and {key}.context (the kubeconfig's user)"
    return f"{key}.kubeconfig ({key}.host alone sends no credentials)"


def _problem(cluster: ClusterSettings, exc: SourceError, missed: list[datetime], index: int | None = None) -> Problem:
    cause = exc.__cause__
    if isinstance(cause, ApiException) and cause.status:
        kind = kind_of_status(int(cause.status))
    elif "not JSON" in str(exc):
        kind = "not_json"
    elif "unexpected shape" in str(exc):
        kind = "wrong_shape"
    elif "every kind was refused" in str(exc):
        kind = "http_403"
    elif "credentials" in str(exc):
        kind = "http_401"
    elif "timed out" in str(exc).lower() or "timeout" in str(exc).lower():
        kind = "timeout"
    elif "refused" in str(exc).lower():
        kind = "connection_refused"
    else:
        kind = "connection_error"
    key = f"clusters[{cluster.name if index is None else index}].kubernetes"
    what = str(exc)[:200]
    if kind in ("http_401", "http_403"):  # the source, the status and the setting to check, in one line
        what = auth_line("the Kubernetes API", cluster.kubernetes.host or "the kubeconfig's server",
                         int(kind[-3:]), _auth_setting(cluster.kubernetes, key))
    message = (f"the Kubernetes API failed for {len(missed)} hour(s) ({what}); those hours keep the "
               "metadata kube-state-metrics exports (labels, owners), as hours older than the snapshot reach do")
    names = {"url_key": key, "timeout_key": "the API server's health",
             "budget_key": "", "auth": "the service account or kubeconfig credentials"}
    return Problem("kubernetes", kind, message, hint_for(kind, names), [h.isoformat() for h in missed],
                   cluster=cluster.name)
