"""Kubernetes snapshot extractor against the local API stand-in (tests/fixtures/k8s_standin.py)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime

import duckdb
import pandas as pd
import pytest
from kubernetes import client

from pipelines.settings import ClusterSettings, KubernetesSettings
from pipelines.sources import kubernetes as k8s
from pipelines.sources.base import SourceError
from pipelines.sources.kubernetes import extract_kubernetes_snapshot, parse_quantity
from pipelines.warehouse.connection import ensure_raw_schema
from pipelines.warehouse.landing import replace_partitions
from tests.fixtures.k8s_standin import K8sStandIn, default_cluster, hpa, pdb, uid_for

pytestmark = pytest.mark.integration

HOUR = datetime(2025, 11, 3, 10, 0)
PODS = "/api/v1/pods"


@pytest.fixture
def standin() -> Iterator[K8sStandIn]:
    with K8sStandIn() as s:
        yield s


def _cluster(url: str, page_size: int = 5) -> ClusterSettings:
    return ClusterSettings(name="eks-prod", kubernetes=KubernetesSettings(enabled=True, host=url,
                                                                          page_size=page_size))


def _rows(result, kind: str) -> pd.DataFrame:
    frame = result.batches["k8s_objects"]
    return frame[frame["kind"] == kind].set_index("name")


# --- quantities -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("250m", 0.25), ("4", 4.0), ("3920m", 3.92), ("16069064Ki", 16069064 * 1024.0), ("256Mi", 256 * 2.0**20),
    ("1Gi", 2.0**30), ("1G", 1e9), ("1e3", 1000.0), ("1.5", 1.5), ("100k", 100_000.0), ("1Ei", 2.0**60),
    ("1E", 1e18), ("1E3", 1000.0), ("2.5e-3", 0.0025), ("500u", 0.0005), ("10n", 1e-8), ("+1M", 1e6),
    ("-1", -1.0), (".5", 0.5), ("1.", 1.0), ("0", 0.0), ("1Ti", 2.0**40), ("3Pi", 3 * 2.0**50), (2, 2.0),
])
def test_parse_quantity_exact(text: str | int, expected: float) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1KB", "1ki", "1e", "1 Gi", "Gi", "1.2.3", "0x10", "1mi"])
def test_parse_quantity_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity(text)


# --- extraction -----------------------------------------------------------------------------------------

def test_pages_with_limit_and_continue(standin: K8sStandIn) -> None:
    result = extract_kubernetes_snapshot(_cluster(standin.url), HOUR)
    reqs = standin.requests_for(PODS)
    assert len(reqs) == 3  # 12 pods at limit=5: 5, 5, 2
    assert [r["query"].get("limit") for r in reqs] == ["5", "5", "5"]
    assert "continue" not in reqs[0]["query"] and all("continue" in r["query"] for r in reqs[1:])
    assert len(_rows(result, "Pod")) == 12
    assert result.metadata["requests"]["Pod"]["pages"] == 3
    counts = result.batches["k8s_objects"]["kind"].value_counts().to_dict()
    assert counts == {"Pod": 12, "Namespace": 4, "Node": 3, "Service": 2, "PersistentVolumeClaim": 1,
                      "PersistentVolume": 1, "ReplicaSet": 1, "Deployment": 1, "StatefulSet": 1,
                      "DaemonSet": 1, "Job": 1, "CronJob": 1, "PodDisruptionBudget": 1, "ListedKinds": 1}
    assert result.metadata["objects"] == 30  # API objects; the ListedKinds marker is not one
    assert result.partitions == [{"cluster": "eks-prod", "hour_ts": HOUR}]
    assert result.metadata["warnings"] == [] and result.metadata["skipped_kinds"] == []


def test_owner_chains_are_rows(standin: K8sStandIn) -> None:
    result = extract_kubernetes_snapshot(_cluster(standin.url), datetime(2025, 11, 3, 10, 42, tzinfo=UTC))
    pods, rs, dep = _rows(result, "Pod"), _rows(result, "ReplicaSet"), _rows(result, "Deployment")
    web = pods.loc["web-7d9f8b6c5d-8x2kq"]
    assert (web.owner_kind, web.owner_name) == ("ReplicaSet", "web-7d9f8b6c5d")
    assert web.owner_uid == rs.loc["web-7d9f8b6c5d"].uid
    assert rs.loc["web-7d9f8b6c5d"].owner_kind == "Deployment"
    assert rs.loc["web-7d9f8b6c5d"].owner_uid == dep.loc["web"].uid == uid_for("Deployment", "shop", "web")
    assert pd.isna(dep.loc["web"].owner_kind)

    job_pod = pods.loc["nightly-report-29410560-x7k2p"]
    jobs, cron = _rows(result, "Job"), _rows(result, "CronJob")
    assert (job_pod.owner_kind, job_pod.owner_uid) == ("Job", jobs.loc["nightly-report-29410560"].uid)
    assert jobs.loc["nightly-report-29410560"].owner_kind == "CronJob"
    assert jobs.loc["nightly-report-29410560"].owner_uid == cron.loc["nightly-report"].uid
    assert pods.loc["db-0"].owner_kind == "StatefulSet" and pods.loc["node-exporter-aq7x0"].owner_kind == "DaemonSet"
    assert pd.isna(pods.loc["debug"].owner_kind)
    # tz-aware input → naive UTC hour start
    assert set(result.batches["k8s_objects"]["hour_ts"]) == {pd.Timestamp(HOUR)}


def _pod_spec(**spec: object) -> dict:
    """A pod spec in the API's JSON shape, built with the official client's models (so the field names are real)."""
    return client.ApiClient().sanitize_for_serialization(client.V1PodSpec(containers=[client.V1Container(
        name="app")], **spec))


def _required(*terms: list[client.V1NodeSelectorRequirement], fields: bool = False) -> client.V1Affinity:
    make = (lambda t: client.V1NodeSelectorTerm(match_fields=t)) if fields else (
        lambda t: client.V1NodeSelectorTerm(match_expressions=t))
    return client.V1Affinity(node_affinity=client.V1NodeAffinity(
        required_during_scheduling_ignored_during_execution=client.V1NodeSelector(
            node_selector_terms=[make(t) for t in terms])))


def _expr(key: str, operator: str = "In", *values: str) -> client.V1NodeSelectorRequirement:
    return client.V1NodeSelectorRequirement(key=key, operator=operator, values=list(values) or None)


ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"


@pytest.mark.parametrize(("spec", "pinned"), [
    (_pod_spec(), []),
    (_pod_spec(node_selector={ZONE: "us-east-1a", "disktype": "ssd"}), ["disktype", ZONE]),
    # terms are alternatives: the zone is fixed only because both terms fix it; the region by one term only
    (_pod_spec(affinity=_required([_expr(ZONE, "In", "us-east-1a"), _expr(REGION, "In", "us-east-1")],
                                  [_expr(ZONE, "In", "us-east-1b")])), [ZONE]),
    (_pod_spec(affinity=_required([_expr(ZONE, "NotIn", "us-east-1a")])), []),  # excludes a zone, pins none
    (_pod_spec(affinity=_required([_expr(ZONE, "Exists")])), []),
    (_pod_spec(affinity=_required([_expr("metadata.name", "In", "node-1")], fields=True)), ["metadata.name"]),
    (_pod_spec(affinity=client.V1Affinity(node_affinity=client.V1NodeAffinity(
        preferred_during_scheduling_ignored_during_execution=[client.V1PreferredSchedulingTerm(
            weight=1, preference=client.V1NodeSelectorTerm(match_expressions=[_expr(ZONE, "In", "a")]))]))), []),
], ids=["none", "node-selector", "affinity-every-term", "not-in", "exists", "match-fields", "preferred-only"])
def test_pinned_node_labels_are_the_keys_required_placement_fixes(spec: dict, pinned: list[str]) -> None:
    assert k8s.pinned_node_labels(spec) == pinned
    row = k8s.object_row("Pod", {"metadata": {"name": "p", "namespace": "n", "uid": "u"}, "spec": spec,
                                 "status": {}}, [])
    assert json.loads(row["spec"])["pinnedNodeLabels"] == pinned


def test_spec_fields_and_quantities(standin: K8sStandIn) -> None:
    result = extract_kubernetes_snapshot(_cluster(standin.url, page_size=500), HOUR)
    assert len(standin.requests_for(PODS)) == 1
    nodes, pods = _rows(result, "Node"), _rows(result, "Pod")
    n1 = json.loads(nodes.loc["ip-10-0-1-10.ec2.internal"].spec)
    assert n1["providerID"] == "aws:///us-east-1a/i-0a1b2c3d4e5f60001"
    assert n1["capacity"]["cpu"] == 4.0 and n1["allocatable"]["cpu"] == 3.92
    assert n1["capacity"]["memory"] == 16069064 * 1024 and n1["allocatable"]["ephemeral-storage"] == 76224326324
    assert json.loads(nodes.loc["ip-10-0-3-12.ec2.internal"].spec)["allocatable"]["nvidia.com/gpu"] == 1.0
    assert json.loads(nodes.loc["ip-10-0-1-10.ec2.internal"].labels)["node.kubernetes.io/instance-type"] == "m5.xlarge"

    web = json.loads(pods.loc["web-7d9f8b6c5d-r2vxs"].spec)
    assert web["containers"] == [{"name": "web", "requests": {"cpu": 0.25, "memory": 268435456.0},
                                  "limits": {"cpu": 1.0, "memory": 1073741824.0}}]
    assert web["containerStatuses"][0]["state"] == "waiting"
    assert web["containerStatuses"][0]["reason"] == "ImagePullBackOff"
    assert web["nodeName"] == "ip-10-0-1-10.ec2.internal" and web["phase"] == "Running"
    assert json.loads(pods.loc["db-0"].spec)["pvcClaimNames"] == ["data-db-0"]
    assert json.loads(pods.loc["debug"].spec)["containers"][0]["requests"] == {"cpu": 0.01, "memory": 1000.0}
    cuda = json.loads(pods.loc["cuda-test"].spec)["containers"][0]
    assert cuda["requests"]["memory"] == 1e9 and cuda["limits"]["nvidia.com/gpu"] == 1.0
    report = json.loads(pods.loc["nightly-report-29410560-x7k2p"].spec)
    assert report["phase"] == "Succeeded" and report["containers"][0]["requests"]["cpu"] == 3.92

    # original label/annotation keys; kubectl's last-applied manifest is dropped
    labels = json.loads(pods.loc["web-7d9f8b6c5d-8x2kq"].labels)
    annotations = json.loads(pods.loc["web-7d9f8b6c5d-8x2kq"].annotations)
    assert labels["CostCenter"] == "CC-1234"
    assert annotations == {"prometheus.io/scrape": "true", "kubeledger.io/Team": "Storefront"}
    assert json.loads(_rows(result, "Namespace").loc["shop"].annotations) == {"kubeledger.io/Owner": "Shop Team"}

    pvc = json.loads(_rows(result, "PersistentVolumeClaim").loc["data-db-0"].spec)
    assert pvc["requestsStorage"] == pvc["capacityStorage"] == 20 * 2.0**30 and pvc["storageClassName"] == "gp3"
    pv = json.loads(_rows(result, "PersistentVolume").iloc[0].spec)
    assert pv["claimRef"] == {"namespace": "shop", "name": "data-db-0"} and pv["csiDriver"] == "ebs.csi.aws.com"
    svc = json.loads(_rows(result, "Service").loc["web"].spec)
    assert svc["type"] == "LoadBalancer" and svc["selector"] == {"app.kubernetes.io/name": "web"}
    assert svc["loadBalancerIngress"][0]["hostname"].endswith(".elb.us-east-1.amazonaws.com")


def test_lands_in_raw_table(standin: K8sStandIn) -> None:
    result = extract_kubernetes_snapshot(_cluster(standin.url), HOUR)
    con = duckdb.connect()
    ensure_raw_schema(con)
    assert replace_partitions(con, result.batches, result.partitions) == {"k8s_objects": 31}
    replace_partitions(con, result.batches, result.partitions)  # idempotent
    assert con.execute("select count(*), count(distinct uid) from raw.k8s_objects").fetchone() == (31, 31)


def test_forbidden_kind_degrades_with_warning(standin: K8sStandIn) -> None:
    standin.forbidden.add("/api/v1/nodes")
    result = extract_kubernetes_snapshot(_cluster(standin.url), HOUR)
    assert result.metadata["skipped_kinds"] == ["Node"]
    assert "Node" not in set(result.batches["k8s_objects"]["kind"])
    assert len(_rows(result, "Pod")) == 12
    (warning,) = result.metadata["warnings"]
    assert "eks-prod" in warning and "/api/v1/nodes" in warning and "403" in warning
    assert 'cannot list resource "nodes"' in warning
    assert 'grant verb "list" on resource "nodes" in API group "" to the ClusterRole' in warning
    assert "get" not in warning.split("(grant", 1)[1]  # list is the only verb the extractor needs


def test_pod_disruption_budgets_are_projected_and_listed_kinds_marked(standin: K8sStandIn) -> None:
    standin.objects["/apis/policy/v1/poddisruptionbudgets"].append(pdb(
        "api", "shop", None, max_unavailable=1, expected=3, healthy=3, allowed=1,
        match_expressions=[{"key": "tier", "operator": "In", "values": ["api", "edge"]},
                           {"key": "canary", "operator": "DoesNotExist"}]))
    result = extract_kubernetes_snapshot(_cluster(standin.url), HOUR)
    pdbs = _rows(result, "PodDisruptionBudget")
    web, api = json.loads(pdbs.loc["web"].spec), json.loads(pdbs.loc["api"].spec)
    assert web == {"minAvailable": "80%", "maxUnavailable": None, "matchLabels": {"app.kubernetes.io/name": "web"},
                   "matchExpressions": {}, "disruptionsAllowed": 0, "expectedPods": 5}
    assert (api["minAvailable"], api["maxUnavailable"], api["matchLabels"]) == (None, 1, {})
    assert api["matchExpressions"] == {"0": {"key": "tier", "operator": "In", "values": ["api", "edge"]},
                                       "1": {"key": "canary", "operator": "DoesNotExist", "values": []}}
    assert pdbs.loc["web"].namespace == "shop"
    listed = json.loads(_rows(result, "ListedKinds").loc["listed-kinds"].spec)
    assert listed == {"listed": [k.kind for k in k8s.KINDS], "skipped": []}


def test_horizontal_pod_autoscalers_are_projected_and_a_refused_list_is_marked_skipped(standin: K8sStandIn) -> None:
    """The HPAs' scale targets reach raw.k8s_objects (hpa_candidate leaves those Deployments out); a refused list
    is a skip in ListedKinds, so the rows say hpa_not_checked, not "none"."""
    standin.objects["/apis/autoscaling/v2/horizontalpodautoscalers"].append(
        hpa("web", "shop", "web", min_replicas=3, max_replicas=12))
    result = extract_kubernetes_snapshot(_cluster(standin.url), HOUR)
    row = _rows(result, "HorizontalPodAutoscaler").loc["web"]
    assert row.namespace == "shop"
    assert json.loads(row.spec) == {"scaleTargetKind": "Deployment", "scaleTargetName": "web", "minReplicas": 3,
                                    "maxReplicas": 12}
    standin.forbidden.add("/apis/autoscaling/v2/horizontalpodautoscalers")
    refused = extract_kubernetes_snapshot(_cluster(standin.url), HOUR)
    assert refused.metadata["skipped_kinds"] == ["HorizontalPodAutoscaler"]
    (warning,) = refused.metadata["warnings"]
    assert 'grant verb "list" on resource "horizontalpodautoscalers" in API group "autoscaling"' in warning
    listed = json.loads(_rows(refused, "ListedKinds").iloc[0].spec)
    assert listed["skipped"] == ["HorizontalPodAutoscaler"] and "HorizontalPodAutoscaler" not in listed["listed"]


def test_no_pod_disruption_budget_is_an_empty_list_not_a_skip() -> None:
    objects = default_cluster()
    del objects["/apis/policy/v1/poddisruptionbudgets"]  # the stand-in answers an empty list, as an apiserver does
    with K8sStandIn(objects) as s:
        result = extract_kubernetes_snapshot(_cluster(s.url), HOUR)
        (req,) = s.requests_for("/apis/policy/v1/poddisruptionbudgets")
    assert req["status"] == 200
    assert "PodDisruptionBudget" not in set(result.batches["k8s_objects"]["kind"])
    assert result.metadata["skipped_kinds"] == []
    assert "PodDisruptionBudget" in json.loads(_rows(result, "ListedKinds").iloc[0].spec)["listed"]


def test_forbidden_pod_disruption_budgets_are_marked_skipped(standin: K8sStandIn) -> None:
    standin.forbidden.add("/apis/policy/v1/poddisruptionbudgets")
    result = extract_kubernetes_snapshot(_cluster(standin.url), HOUR)
    assert result.metadata["skipped_kinds"] == ["PodDisruptionBudget"]
    (warning,) = result.metadata["warnings"]
    assert 'grant verb "list" on resource "poddisruptionbudgets" in API group "policy"' in warning
    listed = json.loads(_rows(result, "ListedKinds").iloc[0].spec)
    assert listed["skipped"] == ["PodDisruptionBudget"] and "PodDisruptionBudget" not in listed["listed"]


def test_rbac_hint_names_the_resource_and_api_group_of_each_kind() -> None:
    hints = {spec.kind: spec.rbac_hint() for spec in k8s.KINDS}
    assert hints["Deployment"] == 'grant verb "list" on resource "deployments" in API group "apps" to the ClusterRole'
    assert hints["CronJob"] == 'grant verb "list" on resource "cronjobs" in API group "batch" to the ClusterRole'
    assert hints["PersistentVolumeClaim"].endswith('resource "persistentvolumeclaims" in API group "" to the '
                                                   "ClusterRole")


def test_every_kind_forbidden_fails(standin: K8sStandIn) -> None:
    standin.forbidden.update(p for p in standin.objects)
    with pytest.raises(SourceError, match="every kind was refused"):
        extract_kubernetes_snapshot(_cluster(standin.url), HOUR)


def test_expired_continue_restarts_the_list(standin: K8sStandIn) -> None:
    standin.expire_once.add(PODS)
    result = extract_kubernetes_snapshot(_cluster(standin.url), HOUR)
    reqs = standin.requests_for(PODS)
    assert [r["status"] for r in reqs] == [200, 410, 200, 200, 200]
    assert "continue" not in reqs[2]["query"]  # restarted from scratch, not from the 410's token
    pods = _rows(result, "Pod")
    assert len(pods) == 12 and pods["uid"].is_unique
    assert result.metadata["requests"]["Pod"]["restarted"] is True


def test_unauthorized_fails_clearly() -> None:
    with K8sStandIn(require_token="s3cr3t") as s, pytest.raises(SourceError) as info:
        extract_kubernetes_snapshot(_cluster(s.url), HOUR)
    message = str(info.value)
    assert "eks-prod" in message and "/api/v1/nodes" in message and "401" in message
    assert "Unauthorized" in message


def test_explicit_api_client_with_token() -> None:
    with K8sStandIn(require_token="s3cr3t") as s:
        cfg = client.Configuration(host=s.url, api_key={"authorization": "s3cr3t"},
                                   api_key_prefix={"authorization": "Bearer"})
        with client.ApiClient(cfg) as api:
            result = extract_kubernetes_snapshot(_cluster("http://unused.invalid"), HOUR, api_client=api)
        assert len(_rows(result, "Pod")) == 12
        assert {r["authorization"] for r in s.requests} == {"Bearer s3cr3t"}


def test_unreachable_api_fails_clearly() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(SourceError, match=rf"eks-prod.*127\.0\.0\.1:{port}/api/v1/nodes.*cannot reach"):
        extract_kubernetes_snapshot(_cluster(f"http://127.0.0.1:{port}"), HOUR)


def test_throttling_honours_retry_after(standin: K8sStandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(k8s, "_sleep", waits.append)
    standin.throttle[PODS] = 2
    standin.retry_after_s = 3
    result = extract_kubernetes_snapshot(_cluster(standin.url), HOUR)
    assert waits == [3.0, 3.0]
    assert [r["status"] for r in standin.requests_for(PODS)] == [429, 429, 200, 200, 200]
    assert len(_rows(result, "Pod")) == 12


def test_throttling_is_bounded(standin: K8sStandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(k8s, "_sleep", lambda s: None)
    standin.throttle[PODS] = 100
    with pytest.raises(SourceError, match=r"/api/v1/pods failed with HTTP 429: TooManyRequests"):
        extract_kubernetes_snapshot(_cluster(standin.url), HOUR)
    assert len(standin.requests_for(PODS)) == k8s.MAX_THROTTLE_RETRIES + 1


def test_standin_objects_deserialize_with_official_models(standin: K8sStandIn) -> None:
    """The v37 pydantic models enforce required fields: this proves the stand-in objects are complete."""
    with client.ApiClient(client.Configuration(host=standin.url)) as api:
        core, apps, batch = client.CoreV1Api(api), client.AppsV1Api(api), client.BatchV1Api(api)
        nodes = core.list_node()
        assert isinstance(nodes, client.V1NodeList) and len(nodes.items) == 3
        info = nodes.items[0].status.node_info
        assert info.boot_id and info.machine_id and info.system_uuid and info.kube_proxy_version
        first = core.list_pod_for_all_namespaces(limit=5)
        assert len(first.items) == 5 and first.metadata.remaining_item_count == 7
        rest = core.list_pod_for_all_namespaces(limit=5, _continue=first.metadata.var_continue)
        assert [p.metadata.name for p in rest.items][0] == "db-0"
        pod = first.items[0]
        assert pod.metadata.owner_references[0].kind == "ReplicaSet"
        assert pod.status.container_statuses[0].image_id
        listed = {
            "Namespace": core.list_namespace(), "PVC": core.list_persistent_volume_claim_for_all_namespaces(),
            "PV": core.list_persistent_volume(), "Service": core.list_service_for_all_namespaces(),
            "ReplicaSet": apps.list_replica_set_for_all_namespaces(),
            "Deployment": apps.list_deployment_for_all_namespaces(),
            "StatefulSet": apps.list_stateful_set_for_all_namespaces(),
            "DaemonSet": apps.list_daemon_set_for_all_namespaces(),
            "Job": batch.list_job_for_all_namespaces(), "CronJob": batch.list_cron_job_for_all_namespaces(),
        }
        assert all(len(v.items) >= 1 for v in listed.values())
        assert listed["ReplicaSet"].items[0].spec.selector.match_labels["pod-template-hash"] == "7d9f8b6c5d"
        assert listed["Job"].items[0].spec.template.spec.containers[0].name == "report"
        assert listed["CronJob"].items[0].spec.job_template.spec.template.spec.restart_policy == "OnFailure"
        # the stand-in's Status bodies are real-shaped too
        standin.forbidden.add("/api/v1/nodes")
        with pytest.raises(client.ApiException) as info_exc:
            core.list_node()
        assert info_exc.value.status == 403
        assert json.loads(info_exc.value.body)["kind"] == "Status"
