"""Settings: defaults without a file, validation errors naming file, key and what is allowed, secrets from env."""

from pathlib import Path

import pytest

from pipelines.settings import Settings, SettingsError, load_settings


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "kubeledger.yaml"
    p.write_text(text)
    return p


@pytest.fixture(autouse=True)
def _no_env_overrides(monkeypatch):
    for name in ("KUBELEDGER_CONFIG", "KUBELEDGER_WAREHOUSE", "KUBELEDGER_SERVING"):
        monkeypatch.delenv(name, raising=False)


def test_defaults_without_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KUBELEDGER_CONFIG", raising=False)
    s = load_settings()
    assert isinstance(s, Settings)
    assert [c.name for c in s.clusters] == ["demo"] and s.clusters[0].source == "demo"
    assert s.warehouse_path == tmp_path / "warehouse" / "kubeledger.duckdb"
    assert s.carbon.provider == "demo" and s.sharing.split == "weighted"


def test_config_env_var_and_relative_paths(tmp_path, monkeypatch):
    p = write(tmp_path, "warehouse:\n  path: data/w.duckdb\n")
    monkeypatch.setenv("KUBELEDGER_CONFIG", str(p))
    s = load_settings()
    assert s.warehouse_path == tmp_path / "data" / "w.duckdb"


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("clusters:\n  - name: a\n    source: prom\n", ["clusters[0].source", "'prom'", "demo, prometheus"]),
        ("clusters:\n  - name: a\n    source: prometheus\n", ["clusters[0].prometheus.url", "required"]),
        ("carbon:\n  provider: watttime\n", ["carbon.provider", "electricitymaps, wattnet"]),
        ("sharing:\n  split: fair\n", ["sharing.split", "weighted, even"]),
        ("sharing:\n  shared_labels: [app]\n", ["sharing.shared_labels", "label:value"]),
        ("pricing:\n  cpu_discount_pct: 120\n", ["pricing.cpu_discount_pct", "0..100"]),
        ("pricing:\n  custom_convention: weekly\n", ["pricing.custom_convention", "hourly, monthly"]),
        ("warehouse:\n  pathh: x\n", ["warehouse.pathh", "unknown key", "path"]),
        ("clusters:\n  - name: a\n  - name: a\n", ["clusters[1].name", "twice"]),
        ("clusters:\n  - name: 'bad name'\n", ["clusters[0].name", "letters"]),
        ("clusters:\n  - name: a\n    carbon_zone: france\n", ["clusters[0].carbon_zone", "zone code"]),
        ("energy:\n  memory: yes please\n", ["energy.memory", "true or false"]),
        ("clusters: []\n", ["clusters", "non-empty"]),
        ("quality: [1, 2]\n", ["quality", "mapping"]),
        ("warehouse: {path: [1\n", ["not valid YAML"]),
    ],
)
def test_validation_errors_name_file_key_and_fix(tmp_path, text, fragments):
    p = write(tmp_path, text)
    with pytest.raises(SettingsError) as exc:
        load_settings(p)
    message = str(exc.value)
    assert str(p) in message
    for fragment in fragments:
        assert fragment in message, message


def test_missing_explicit_file(tmp_path):
    with pytest.raises(SettingsError, match="config file not found"):
        load_settings(tmp_path / "nope.yaml")


def test_secrets_come_from_environment_and_files(tmp_path, monkeypatch):
    token_file = tmp_path / "token"
    token_file.write_text("file-token\n")
    p = write(tmp_path, f"""
clusters:
  - name: prod
    source: prometheus
    prometheus:
      url: https://prom.example:9090
      bearer_token_env: PROM_TOKEN
      bearer_token_file: {token_file}
      basic_auth_username: reader
      basic_auth_password_env: PROM_PASSWORD
      headers: {{X-Scope-OrgID: tenant-a}}
carbon:
  provider: electricitymaps
  token_env: EM_TOKEN
""")
    monkeypatch.delenv("PROM_TOKEN", raising=False)
    s = load_settings(p)
    prom = s.cluster("prod").prometheus
    assert prom.verify_tls is True  # on unless disabled explicitly
    assert prom.bearer_token() == "file-token"
    monkeypatch.setenv("PROM_TOKEN", "env-token")
    monkeypatch.setenv("PROM_PASSWORD", "pw")
    monkeypatch.setenv("EM_TOKEN", "em")
    assert prom.bearer_token() == "env-token"
    assert prom.basic_auth() == ("reader", "pw")
    assert prom.headers == {"X-Scope-OrgID": "tenant-a"}
    assert s.carbon.token() == "em"
    with pytest.raises(SettingsError, match="configured clusters: prod"):
        s.cluster("other")
