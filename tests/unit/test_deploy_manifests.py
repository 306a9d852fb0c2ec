"""deploy/kubernetes and the Dockerfile, checked statically (no cluster, no Docker daemon).

- Every manifest deserializes into the official client's model of its kind, and serializes back to exactly what was
  written: the client's deserializer silently drops keys its model does not know (a typo such as `readOnlyRootFs`
  would be ignored by the test and rejected or ignored by the apiserver), so the round trip is what makes an unknown
  field fail.
- The ClusterRole grants exactly the (API group, resource) pairs the Kubernetes extractor lists, with its verb only.
- The ConfigMap's kubeledger.yaml loads with the real settings loader; its token variables are the Secret's keys and
  reach the container that executes the runs.
- Every container runs as non-root on a read-only root file system; the Dockerfile runs as non-root, enters through
  `kubeledger`, has a HEALTHCHECK and puts the source tree where pipelines/__init__.py resolves it.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

import pipelines
from pipelines.settings import load_settings
from pipelines.sources.kubernetes import KINDS
from tests.fixtures.dockerfile import dockerfile_instructions as _instructions

ROOT = Path(__file__).resolve().parents[2]
K8S_DIR = ROOT / "deploy" / "kubernetes"
DOCKERIGNORE = ROOT / ".dockerignore"
IMAGE = "ghcr.io/kubeledger/kubeledger:0.1.0"
UID = 10001
READ_VERBS = {"get", "list", "watch"}

# kind -> (apiVersion, model of the official client)
MODELS: dict[str, tuple[str, str]] = {
    "Namespace": ("v1", "V1Namespace"),
    "ServiceAccount": ("v1", "V1ServiceAccount"),
    "ConfigMap": ("v1", "V1ConfigMap"),
    "Secret": ("v1", "V1Secret"),
    "PersistentVolumeClaim": ("v1", "V1PersistentVolumeClaim"),
    "Service": ("v1", "V1Service"),
    "Deployment": ("apps/v1", "V1Deployment"),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "V1ClusterRole"),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", "V1ClusterRoleBinding"),
}


# --- loading --------------------------------------------------------------------------------------------------

def _manifest_files() -> list[Path]:
    return sorted(p for p in K8S_DIR.iterdir() if p.suffix in (".yaml", ".yml") and p.name != "kustomization.yaml")


def _load_documents() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in _manifest_files():
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if doc is not None:
                docs.append((f"{path.name}#{i}", doc))
    return docs


DOCUMENTS = _load_documents()


def _of_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in DOCUMENTS if doc.get("kind") == kind]


def _one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in _of_kind(kind) if name is None or d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}{' ' + name if name else ''}, found {len(found)}"
    return found[0]


def _deployment(component: str) -> dict[str, Any]:
    found = [d for d in _of_kind("Deployment")
             if d["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component") == component]
    assert len(found) == 1, f"expected one Deployment of component {component}"
    return found[0]


def _containers(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod_spec.get("initContainers", []), *pod_spec["containers"]]


def _container(pod_spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in _containers(pod_spec) if c["name"] == name)


def _env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


# --- round trip through the official models -------------------------------------------------------------------

def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def _differences(written: Any, rebuilt: Any, path: str = "$") -> list[str]:
    """Where the re-serialized model differs from what was written (a dropped key = a field the model lacks)."""
    if isinstance(written, dict) and isinstance(rebuilt, dict):
        out: list[str] = []
        for key in sorted(written.keys() | rebuilt.keys()):
            if key not in rebuilt:
                out.append(f"{path}.{key}: not a field of the model (dropped)")
            elif key not in written:
                out.append(f"{path}.{key}: added by the model")
            else:
                out.extend(_differences(written[key], rebuilt[key], f"{path}.{key}"))
        return out
    if isinstance(written, list) and isinstance(rebuilt, list):
        if len(written) != len(rebuilt):
            return [f"{path}: {len(written)} items became {len(rebuilt)}"]
        return [d for i, (w, r) in enumerate(zip(written, rebuilt, strict=True))
                for d in _differences(w, r, f"{path}[{i}]")]
    if type(written) is not type(rebuilt) or written != rebuilt:
        return [f"{path}: {written!r} became {rebuilt!r}"]
    return []


@pytest.fixture(scope="module")
def api_client():
    api = client.ApiClient()
    yield api
    api.close()


def _round_trip(api: client.ApiClient, doc: dict[str, Any]) -> list[str]:
    _, model_name = MODELS[doc["kind"]]
    model = api.deserialize(json.dumps(doc), model_name, "application/json")
    assert type(model).__name__ == model_name
    return _differences(_drop_none(doc), api.sanitize_for_serialization(model))


@pytest.mark.parametrize("where,doc", DOCUMENTS, ids=[w for w, _ in DOCUMENTS])
def test_every_manifest_is_a_model_of_its_kind_without_unknown_fields(api_client, where, doc):
    kind = doc.get("kind")
    assert kind in MODELS, f"{where}: kind {kind!r} is not one this test knows; add its model to MODELS"
    assert doc.get("apiVersion") == MODELS[kind][0], f"{where}: {kind} is served as {MODELS[kind][0]}"
    assert doc["metadata"].get("name"), f"{where}: no metadata.name"
    if kind not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
        assert doc["metadata"].get("namespace") == "kubeledger", f"{where}: not in namespace kubeledger"
    problems = _round_trip(api_client, doc)
    assert not problems, f"{where}: " + "; ".join(problems)


def test_the_round_trip_catches_unknown_and_mistyped_fields(api_client):
    """The check above must fail on a misspelt key and on a value of the wrong type."""
    base = _deployment("api")
    assert _round_trip(api_client, base) == []
    misspelt = json.loads(json.dumps(base))
    misspelt["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFs"] = True
    assert any("readOnlyRootFs" in p for p in _round_trip(api_client, misspelt))
    misplaced = json.loads(json.dumps(base))
    misplaced["spec"]["template"]["spec"]["containers"][0]["sizeLimit"] = "1Gi"
    assert any("sizeLimit" in p for p in _round_trip(api_client, misplaced))
    mistyped = json.loads(json.dumps(base))
    mistyped["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "9003"
    with pytest.raises(ValueError):  # pydantic's ValidationError: StrictInt
        _round_trip(api_client, mistyped)


def test_kustomization_lists_every_manifest_and_the_image():
    kustomization = yaml.safe_load((K8S_DIR / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Kustomization"
    assert sorted(kustomization["resources"]) == sorted(p.name for p in _manifest_files())
    image_name, tag = IMAGE.rsplit(":", 1)
    assert {"name": image_name, "newName": image_name, "newTag": tag} in kustomization["images"]
    assert set(MODELS) == {doc["kind"] for _, doc in DOCUMENTS}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_renders_every_document():
    out = subprocess.run(["kubectl", "kustomize", str(K8S_DIR)], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    rendered = [d for d in yaml.safe_load_all(out) if d]
    assert sorted((d["kind"], d["metadata"]["name"]) for d in rendered) == \
        sorted((d["kind"], d["metadata"]["name"]) for _, d in DOCUMENTS)


# --- RBAC ------------------------------------------------------------------------------------------------------

_PATH_RE = re.compile(r"^/(?:api/v1|apis/(?P<group>[a-z0-9.-]+)/[a-z0-9]+)/(?P<resource>[a-z]+)$")


def _extractor_needs() -> tuple[set[tuple[str, str]], set[str]]:
    """(API group, resource) pairs and verbs of the extractor's KINDS: the group and plural from each kind's REST
    path (cross-checked with its `api` field), the verb from its list method."""
    pairs: set[tuple[str, str]] = set()
    verbs: set[str] = set()
    for kind in KINDS:
        m = _PATH_RE.match(kind.path)
        assert m, f"unexpected path {kind.path!r} for {kind.kind}"
        group = m.group("group") or ""
        assert group == ("" if kind.api == "core" else kind.api), kind
        pairs.add((group, m.group("resource")))
        verbs.add(kind.method.split("_", 1)[0])  # list_node, list_pod_for_all_namespaces... -> "list"
    return pairs, verbs


def test_cluster_role_grants_exactly_what_the_kubernetes_extractor_lists():
    needed_pairs, needed_verbs = _extractor_needs()
    assert needed_verbs == {"list"}  # the extractor pages with list calls only
    role = _one("ClusterRole")
    granted: set[tuple[str, str]] = set()
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, f"no resourceNames/nonResourceURLs: {rule}"
        assert set(rule["verbs"]) == needed_verbs <= READ_VERBS, rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                assert "*" not in (group, resource), rule
                assert (group, resource) not in granted, f"granted twice: {group}/{resource}"
                granted.add((group, resource))
    assert granted == needed_pairs
    assert not any(r in {"secrets", "configmaps"} for _, r in granted)


def test_cluster_role_binding_gives_the_role_to_the_pipeline_service_account():
    role, binding, account = _one("ClusterRole"), _one("ClusterRoleBinding"), _one("ServiceAccount")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": account["metadata"]["namespace"]}]
    # the token is mounted only where it is used: the pipeline pod (the extractor), not the API pod
    assert account.get("automountServiceAccountToken") is False
    dagster, api = (_deployment(c)["spec"]["template"]["spec"] for c in ("dagster", "api"))
    assert dagster["serviceAccountName"] == account["metadata"]["name"]
    assert dagster["automountServiceAccountToken"] is True
    assert api["automountServiceAccountToken"] is False


# --- configuration and secrets ---------------------------------------------------------------------------------

def _settings_from_configmap(tmp_path: Path):
    data = _one("ConfigMap")["data"]
    assert set(data) == {"kubeledger.yaml"}
    path = tmp_path / "kubeledger.yaml"
    path.write_text(data["kubeledger.yaml"])
    return load_settings(path)


def test_configmap_kubeledger_yaml_loads_and_reads_the_in_cluster_prometheus(tmp_path):
    settings = _settings_from_configmap(tmp_path)
    assert len(settings.clusters) == 1
    cluster = settings.clusters[0]
    assert cluster.source == "prometheus"
    assert cluster.prometheus.url == "http://prometheus-operated.monitoring.svc:9090"
    assert cluster.kubernetes.enabled and cluster.kubernetes.in_cluster
    for path in (settings.warehouse_path, settings.serving_path, settings.parquet_path):
        assert path.is_absolute() and path.parts[:2] == ("/", "data"), path  # on the PVC, never under /etc


def test_token_variables_are_the_secret_keys_and_reach_the_run_container(tmp_path):
    settings = _settings_from_configmap(tmp_path)
    wanted = {settings.carbon.token_env}
    for cluster in settings.clusters:
        wanted |= {n for n in (cluster.prometheus.bearer_token_env, cluster.prometheus.basic_auth_password_env) if n}
    secret = _one("Secret")
    assert set(secret.get("stringData", {})) | set(secret.get("data", {})) == wanted
    # runs execute in the daemon container (QueuedRunCoordinator + DefaultRunLauncher)
    daemon = _container(_deployment("dagster")["spec"]["template"]["spec"], "dagster-daemon")
    env = _env(daemon)
    for name in wanted:
        assert env[name]["valueFrom"]["secretKeyRef"]["name"] == secret["metadata"]["name"], name
        assert env[name]["valueFrom"]["secretKeyRef"]["key"] == name


def test_every_container_reads_the_configmap_through_kubeledger_config():
    configmap = _one("ConfigMap")
    for component in ("dagster", "api"):
        pod = _deployment(component)["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        for c in _containers(pod):
            config = _env(c)["KUBELEDGER_CONFIG"]["value"]
            mount = next(m for m in c["volumeMounts"] if m["mountPath"] == config)
            assert mount["readOnly"] is True
            assert volumes[mount["name"]]["configMap"]["name"] == configmap["metadata"]["name"]
            assert mount["subPath"] in configmap["data"]


# --- pods: volumes, commands, probes, security -------------------------------------------------------------------

def test_the_pipeline_runs_in_one_pod_with_the_dagster_commands():
    deployment = _deployment("dagster")
    assert deployment["spec"]["replicas"] == 1  # DuckDB: one writer
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["shareProcessNamespace"] is True
    web, daemon = _container(pod, "dagster-webserver"), _container(pod, "dagster-daemon")
    assert web["command"] == ["dagster-webserver", "-h", "0.0.0.0", "-p", "3000", "-w", "/app/workspace.yaml"]
    assert daemon["command"] == ["dagster-daemon", "run", "-w", "/app/workspace.yaml"]
    for c in (web, daemon, *pod["initContainers"]):
        env = _env(c)
        assert env["DAGSTER_HOME"]["value"] == "/data/dagster"
        assert env["KUBELEDGER_DAGSTER_STORAGE"]["value"].startswith("/data/dagster/")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert web[probe]["httpGet"] == {"path": "/server_info", "port": "http"}
    assert web["ports"] == [{"name": "http", "containerPort": 3000}]
    assert daemon["livenessProbe"]["exec"]["command"] == ["dagster-daemon", "liveness-check"]


def test_the_instance_init_script_is_valid_python():
    pod = _deployment("dagster")["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    assert init["command"][:2] == ["python", "-c"]
    compile(init["command"][2], "prepare-instance", "exec")
    assert "open_instance(settings)" in init["command"][2]


def test_the_volume_is_shared_read_write_by_the_pipeline_and_read_only_by_the_api():
    claim = _one("PersistentVolumeClaim")["metadata"]["name"]
    for component, read_only in (("dagster", False), ("api", True)):
        pod = _deployment(component)["spec"]["template"]["spec"]
        (data,) = [v for v in pod["volumes"] if "persistentVolumeClaim" in v]
        assert data["persistentVolumeClaim"]["claimName"] == claim
        assert data["persistentVolumeClaim"].get("readOnly", False) is read_only
        for c in _containers(pod):
            (mount,) = [m for m in c["volumeMounts"] if m["name"] == data["name"]]
            assert mount["mountPath"] == "/data"
            assert mount.get("readOnly", False) is read_only, (component, c["name"])


def test_the_api_serves_9003_with_healthz_probes_behind_its_service():
    deployment = _deployment("api")
    pod = deployment["spec"]["template"]["spec"]
    (api,) = pod["containers"]
    assert api["args"] == ["serve", "--host", "0.0.0.0", "--port", "9003"]
    assert api["ports"] == [{"name": "http", "containerPort": 9003}]
    assert api["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    liveness = api["livenessProbe"]["exec"]["command"]
    assert liveness[:2] == ["python", "-c"] and "/healthz" in liveness[2]
    compile(liveness[2], "liveness", "exec")
    service = _one("Service")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"] == [{"name": "http", "port": 9003, "targetPort": "http", "protocol": "TCP"}]
    # RWO volume: on the pipeline pod's node
    (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    dagster_labels = _deployment("dagster")["spec"]["template"]["metadata"]["labels"]
    assert term["labelSelector"]["matchLabels"].items() <= dagster_labels.items()


@pytest.mark.parametrize("component", ["dagster", "api"])
def test_every_container_is_non_root_read_only_and_bounded(component):
    deployment = _deployment(component)
    assert deployment["spec"]["selector"]["matchLabels"].items() <= \
        deployment["spec"]["template"]["metadata"]["labels"].items()
    pod = deployment["spec"]["template"]["spec"]
    pod_sc = pod["securityContext"]
    assert pod_sc["runAsNonRoot"] is True and pod_sc["runAsUser"] == UID and pod_sc["runAsGroup"] == UID
    assert pod_sc["seccompProfile"] == {"type": "RuntimeDefault"}  # Pod Security "restricted"
    empty_dirs = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    for c in _containers(pod):
        sc = c["securityContext"]
        where = f"{component}/{c['name']}"
        assert sc.get("runAsNonRoot", pod_sc["runAsNonRoot"]) is True, where
        assert sc.get("runAsUser", pod_sc["runAsUser"]) != 0, where
        assert sc["readOnlyRootFilesystem"] is True, where
        assert sc["allowPrivilegeEscalation"] is False, where
        assert sc["capabilities"] == {"drop": ["ALL"]}, where
        assert c["image"] == IMAGE, where
        (tmp,) = [m for m in c["volumeMounts"] if m["mountPath"] == "/tmp"]
        assert tmp["name"] in empty_dirs, f"{where}: /tmp is not an emptyDir"
        assert _env(c)["HOME"]["value"] == "/tmp", where  # the only writable place besides /data
        for kind in ("requests", "limits"):
            assert set(c["resources"][kind]) >= {"cpu", "memory"}, f"{where}: {kind}"


def test_the_namespace_enforces_the_restricted_pod_security_standard():
    labels = _one("Namespace", "kubeledger")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


# --- Dockerfile ---------------------------------------------------------------------------------------------------

def _only(instruction: str) -> str:
    found = [args for ins, args in _instructions() if ins == instruction]
    assert len(found) == 1, f"expected one {instruction}, found {len(found)}"
    return found[0]


def _copies() -> dict[str, str]:
    """Image path -> build-context path of every COPY, resolved against the WORKDIR in effect."""
    workdir, out = "/", {}
    for instruction, args in _instructions():
        if instruction == "WORKDIR":
            workdir = posixpath.join(workdir, args)
        elif instruction in ("COPY", "ADD"):
            parts = [p for p in shlex.split(args) if not p.startswith("--")]
            *sources, dest = parts
            dest_abs = posixpath.join(workdir, dest)
            for src in sources:
                # a folder's content goes to dest; a file goes into dest when dest is a folder
                into_folder = not (ROOT / src).is_dir() and (dest.endswith("/") or len(sources) > 1)
                target = posixpath.join(dest_abs, posixpath.basename(src)) if into_folder else dest_abs
                out[posixpath.normpath(target)] = src.rstrip("/")
    return out


def _env_of_dockerfile() -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction, args in _instructions():
        if instruction == "ENV":
            for pair in shlex.split(args):
                name, _, value = pair.partition("=")
                env[name] = value
    return env


def test_dockerfile_base_user_entrypoint_and_command():
    instruction, base = _instructions()[0]
    # by digest (tests/unit/test_requirements_lock.py checks the form): the tag alone moves with every re-push
    assert instruction == "FROM" and base.startswith("python:3.11-slim@sha256:")
    user = _only("USER")
    assert user.split(":")[0] == str(UID) and user.split(":")[1] == str(UID)
    assert json.loads(_only("ENTRYPOINT")) == ["kubeledger"]
    assert json.loads(_only("CMD")) == ["serve", "--host", "0.0.0.0", "--port", "9003"]
    names = [ins for ins, _ in _instructions()]
    assert names.index("USER") > max(i for i, n in enumerate(names) if n == "RUN")  # nothing runs as root after


def test_dockerfile_healthcheck_asks_healthz_with_python_like_the_liveness_probe():
    healthcheck = _only("HEALTHCHECK")
    command = json.loads(healthcheck[healthcheck.index("CMD") + 3:].strip())
    assert command[:2] == ["python", "-c"] and "/healthz" in command[2] and "9003" in command[2]
    compile(command[2], "healthcheck", "exec")
    (api,) = _deployment("api")["spec"]["template"]["spec"]["containers"]
    assert api["livenessProbe"]["exec"]["command"] == command


def test_dockerfile_puts_the_source_tree_where_the_code_resolves_it():
    copies = _copies()
    sources = set(copies.values())
    assert not any(s in (".", "./") or s.startswith((".venv", ".boavenv", "warehouse", ".git")) for s in sources)
    for src in sources:
        assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
    # pipelines/__init__.py: PROJECT_ROOT is the folder above the package, the other folders hang off it
    root = "/app"
    needed = {
        f"{root}/pipelines": pipelines.PROJECT_ROOT / "pipelines",
        f"{root}/{pipelines.DBT_PROJECT_DIR.name}": pipelines.DBT_PROJECT_DIR,
        f"{root}/{pipelines.SQL_DIR.name}": pipelines.SQL_DIR,
        f"{root}/{pipelines.SEEDS_DIR.name}": pipelines.SEEDS_DIR,
        f"{root}/dagster_home": pipelines.PROJECT_ROOT / "dagster_home",  # dagster_defs/instance.py
        f"{root}/workspace.yaml": pipelines.PROJECT_ROOT / "workspace.yaml",  # cli.py, the manifests
        f"{root}/pyproject.toml": pipelines.PROJECT_ROOT / "pyproject.toml",
    }
    for image_path, local in needed.items():
        assert image_path in copies, f"{image_path} is not copied"
        assert ROOT / copies[image_path] == local
    runs = " ".join(args for ins, args in _instructions() if ins == "RUN")
    # editable: a plain `pip install .` would move pipelines/ into site-packages, away from dbt_project/ and sql/
    assert "pip install --no-deps --no-build-isolation --no-index -e /app" in runs


def test_dockerfile_prepares_the_dbt_manifest_the_assets_accept():
    """ensure_manifest takes dbt_project/target/manifest.json only with the project hash its build-time entry point
    records next to it; a bare `dbt parse` would leave every process parsing at start (read from the source: importing
    the module may parse the project)."""
    source = (pipelines.PROJECT_ROOT / "pipelines" / "dagster_defs" / "assets_dbt.py").read_text()
    assert 'MANIFEST = prepare_manifest_in_project() if __name__ == "__main__" else ensure_manifest()' in source
    prepared = re.search(r'PREPARED_HASH_FILE = "([^"]+)"', source).group(1)
    (step,) = [args for ins, args in _instructions() if ins == "RUN" and "pipelines.dagster_defs.assets_dbt" in args]
    assert "python -m pipelines.dagster_defs.assets_dbt" in step
    assert "DBT_PROFILES_DIR=/app/dbt_project" in step and "KUBELEDGER_WAREHOUSE=" in step
    assert f"/app/dbt_project/target/{prepared}" in step
    names = [ins for ins, _ in _instructions()]
    copied_dbt = max(i for i, (ins, args) in enumerate(_instructions()) if ins == "COPY" and "dbt_project" in args)
    assert names.index("USER") > [a for _, a in _instructions()].index(step) > copied_dbt


def test_dockerfile_keeps_run_time_state_on_the_volume():
    env = _env_of_dockerfile()
    assert env["DAGSTER_HOME"] == "/data/dagster"
    assert env["KUBELEDGER_DAGSTER_STORAGE"].startswith("/data/dagster/")
    assert json.loads(_only("VOLUME")) == ["/data"]
    workdirs = [args for ins, args in _instructions() if ins == "WORKDIR"]
    assert workdirs[-1] == "/data"  # without a kubeledger.yaml, ./warehouse lands on the volume
    dagster_env = _env(_container(_deployment("dagster")["spec"]["template"]["spec"], "dagster-daemon"))
    assert dagster_env["DAGSTER_HOME"]["value"] == env["DAGSTER_HOME"]
    assert dagster_env["KUBELEDGER_DAGSTER_STORAGE"]["value"] == env["KUBELEDGER_DAGSTER_STORAGE"]


def test_dockerignore_keeps_local_state_out_of_the_build_context():
    patterns = {line.strip().rstrip("/") for line in DOCKERIGNORE.read_text().splitlines()
                if line.strip() and not line.startswith("#")}
    for needed in (".venv", ".boavenv", "warehouse", ".git", ".pytest_cache", ".hypothesis", ".ruff_cache",
                   "node_modules", "dbt_project/target", "dbt_project/logs"):
        assert needed in patterns, needed
    # what the image needs must not be ignored
    for kept in ("pipelines", "dbt_project", "seeds", "sql", "dagster_home", "workspace.yaml", "README.md"):
        assert kept not in patterns, kept
