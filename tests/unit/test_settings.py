"""Settings: defaults without a file, validation errors naming file, key and what is allowed, secrets from env."""

import math
import os
import re
import time
from pathlib import Path

import pytest

from pipelines.dagster_defs.dbt_args import dbt_vars
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
        ("clusters:\n  - name: a\n    billing_account_id: 111122223333\n",
         ["clusters[0].billing_account_id", "not text", "quote"]),
        ("clusters:\n  - name: a\n    billing_account_id: ' 1111'\n", ["clusters[0].billing_account_id", "spaces"]),
        ("clusters:\n  - name: a\n    billing_account_name: Payer\n",
         ["clusters[0].billing_account_name", "needs billing_account_id"]),
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


# --- checked at load: every bad value is one line naming the file, the key and what is allowed -----------------

BAD_VALUES = [
    # non-finite numbers (YAML .nan/.inf) would otherwise reach dbt as `nan` and fail minutes later
    ("pricing:\n  cluster_management_fee_per_hour: .nan\n",
     ["pricing.cluster_management_fee_per_hour", ".nan", "not a finite number", "0..1000000"]),
    ("sharing:\n  monthly_overhead_usd: .inf\n", ["sharing.monthly_overhead_usd", ".inf", "0..1000000000"]),
    ("energy:\n  default_intensity_g_per_kwh: .NaN\n",
     ["energy.default_intensity_g_per_kwh", "not a finite number", "0..3000"]),
    ("quality:\n  max_estimated_share: .nan\n", ["quality.max_estimated_share", "not a finite number", "0..1"]),
    ("quality:\n  max_estimated_share: -.inf\n", ["quality.max_estimated_share", "-.inf"]),
    ("clusters:\n  - name: a\n    pue: .inf\n", ["clusters[0].pue", "not a finite number", "1..3"]),
    # kinds and ranges
    ("quality:\n  max_estimated_share: on\n", ["quality.max_estimated_share", "on", "boolean"]),
    ("energy:\n  default_intensity_g_per_kwh: '500'\n", ["energy.default_intensity_g_per_kwh", "not a number"]),
    ("energy:\n  default_intensity_g_per_kwh: 3001\n", ["energy.default_intensity_g_per_kwh", "0..3000"]),
    ("warehouse:\n  threads: 1e8\n", ["warehouse.threads", "'1e8'", "whole number in 1.."]),
    ("warehouse:\n  threads: 100000000\n", ["warehouse.threads", "100000000", "whole number in 1.."]),
    ("warehouse:\n  threads: 1.0e+8\n", ["warehouse.threads", "not a whole number"]),
    ("warehouse:\n  threads: 0\n", ["warehouse.threads", "whole number in 1.."]),
    ("warehouse:\n  raw_retention_days: 0\n", ["warehouse.raw_retention_days", "1..3650"]),
    ("warehouse:\n  raw_retention_days: 36500\n", ["warehouse.raw_retention_days", "1..3650"]),
    ("schedule:\n  late_days: 2.5\n", ["schedule.late_days", "not a whole number", "0..31"]),
    ("pricing:\n  ram_discount_pct: -1\n", ["pricing.ram_discount_pct", "0..100"]),
    ("quality:\n  min_hour_coverage: 0\n", ["quality.min_hour_coverage", "above 0 up to 1"]),
    ("carbon:\n  timeout_s: 0\n", ["carbon.timeout_s", "above 0 up to 3600"]),
    ("boavizta:\n  timeout_s: 1.0e+9\n", ["boavizta.timeout_s", "above 0 up to 3600"]),
    ("billing:\n  reread_days: 93\n", ["billing.reread_days", "whole number in 0..92"]),
    ("billing:\n  reread_days: -1\n", ["billing.reread_days", "0..92"]),
    ("billing:\n  focus_path: ftp://bills/focus/\n", ["billing.focus_path", "ftp://bills/focus/", "local folder",
                                                      "s3://, gs://, az://, abfs://, abfss://"]),
    ("billing:\n  focus_path: 's3://bills?x=1'\n", ["billing.focus_path", "s3://bucket/prefix/", "without a query"]),
    ("billing:\n  focus_path: ' bills'\n", ["billing.focus_path", "without leading or trailing spaces"]),
    ("billing:\n  focus_file: bills\n", ["billing.focus_file", "unknown key", "cur2_path, focus_path, reread_days"]),
    ("billing:\n  cur2_path: file:///bills/cur2/\n", ["billing.cur2_path", "file:///bills/cur2/", "local folder"]),
    ("billing:\n  cur2_path: 's3://AKIA1:wJalrXUtnFEMI@bills/'\n", ["billing.cur2_path", "***", "environment"]),
    ("billing:\n  cur2_path: ''\n", ["billing.cur2_path", "non-empty folder, file or glob"]),
    # removed: no model ever read it (METHOD B4 step 2 is not applied); an old file naming it is told so
    ("carbon:\n  carry_forward_hours: 0\n", ["carbon.carry_forward_hours", "unknown key"]),
    ("clusters:\n  - name: a\n    prometheus: {retries: 1000}\n", ["clusters[0].prometheus.retries", "0..20"]),
    ("clusters:\n  - name: a\n    prometheus: {scrape_interval_s: 0}\n",
     ["clusters[0].prometheus.scrape_interval_s", "1..3600"]),
    ("clusters:\n  - name: a\n    prometheus: {max_concurrency: 0}\n",
     ["clusters[0].prometheus.max_concurrency", "1..64"]),
    ("clusters:\n  - name: a\n    kubernetes: {page_size: 0}\n", ["clusters[0].kubernetes.page_size", "1..10000"]),
    ("clusters:\n  - name: a\n    demo: {nodes: 1000000}\n", ["clusters[0].demo.nodes", "1..1000"]),
    ("clusters:\n  - name: a\n    demo: {pods_per_node: 0}\n", ["clusters[0].demo.pods_per_node", "1..500"]),
    ("clusters:\n  - name: a\n    demo: {containers_per_pod: 99}\n", ["clusters[0].demo.containers_per_pod", "0..20"]),
    ("clusters:\n  - name: a\n    demo: {seed: -1}\n", ["clusters[0].demo.seed", "0..4294967295"]),
    # DuckDB memory size
    ("warehouse:\n  memory_limit: banana\n", ["warehouse.memory_limit", "'banana'", "KiB", "4GB"]),
    ("warehouse:\n  memory_limit: 4\n", ["warehouse.memory_limit", "read as a number", "quote"]),
    ("warehouse:\n  memory_limit: '4'\n", ["warehouse.memory_limit", "DuckDB size"]),
    ("warehouse:\n  memory_limit: 10KB\n", ["warehouse.memory_limit", "at least 64MiB"]),
    ("warehouse:\n  memory_limit: 0%\n", ["warehouse.memory_limit", "1..100"]),
    ("warehouse:\n  memory_limit: 1e3MB\n", ["warehouse.memory_limit", "DuckDB size"]),
    ("warehouse:\n  memory_limit: null\n", ["warehouse.memory_limit", "null is not allowed"]),
    # cron
    ("schedule:\n  daily_cron: 'not a cron'\n", ["schedule.daily_cron", "'not a cron'", "5-field cron"]),
    ("schedule:\n  daily_cron: \"every day\"\n", ["schedule.daily_cron", "'every day'", "@daily"]),
    ("schedule:\n  daily_cron: '@reboot'\n", ["schedule.daily_cron", "5-field cron"]),
    ("schedule:\n  daily_cron: '30 1 * * * *'\n", ["schedule.daily_cron", "5-field cron"]),
    ("schedule:\n  daily_cron: \"30 1 \\u0661 * *\"\n", ["schedule.daily_cron", "5-field cron"]),
    # URLs: http(s) with a host
    ("clusters:\n  - name: a\n    source: prometheus\n    prometheus: {url: 'file:///etc/passwd'}\n",
     ["clusters[0].prometheus.url", "'file:///etc/passwd'", "http:// or https://"]),
    ("clusters:\n  - name: a\n    source: prometheus\n    prometheus: {url: 'http://'}\n",
     ["clusters[0].prometheus.url", "with a host"]),
    ("clusters:\n  - name: a\n    source: prometheus\n    prometheus: {url: 'http://prom:99999'}\n",
     ["clusters[0].prometheus.url", "http:// or https://"]),
    ("carbon:\n  base_url: ftp://api.electricitymap.org\n", ["carbon.base_url", "http:// or https://"]),
    ("boavizta:\n  url: 'http://boa vizta:5000'\n", ["boavizta.url", "spaces"]),
    ("clusters:\n  - name: a\n    kubernetes: {host: 'javascript:alert(1)'}\n",
     ["clusters[0].kubernetes.host", "http:// or https://"]),
    # headers
    ("clusters:\n  - name: a\n    prometheus:\n      headers: {X-Scope-OrgID: \"tenant-a\\r\\nX-Evil: 1\"}\n",
     ["clusters[0].prometheus.headers.X-Scope-OrgID", "without CR, LF", "'\\r'"]),
    ("clusters:\n  - name: a\n    prometheus:\n      headers: {X-Scope-OrgID: \"a\\0b\"}\n",
     ["clusters[0].prometheus.headers.X-Scope-OrgID", "control characters"]),
    ("clusters:\n  - name: a\n    prometheus:\n      headers: {\"X Scope\": a}\n",
     ["clusters[0].prometheus.headers", "'X Scope'", "HTTP token"]),
    ("clusters:\n  - name: a\n    prometheus:\n      headers: {\"X:Scope\": a}\n",
     ["clusters[0].prometheus.headers", "HTTP token"]),
    ("clusters:\n  - name: a\n    prometheus:\n      headers: {X-Scope-OrgID: 0123}\n",
     ["clusters[0].prometheus.headers.X-Scope-OrgID", "0123", "quote"]),
    # cluster names and YAML's booleans
    ("clusters:\n  - name: yes\n", ["clusters[0].name", "yes is not allowed", "boolean", "quote"]),
    ("clusters:\n  - name: on\n", ["clusters[0].name", "on is not allowed", "boolean", "quote"]),
    ("clusters:\n  - name: 12:30\n", ["clusters[0].name", "12:30", "number", "quote"]),
    ("clusters:\n  - name: Prod\n", ["clusters[0].name", "lowercase"]),
    ("clusters:\n  - name: prod-\n", ["clusters[0].name", "ending with a letter or digit"]),
    ("clusters:\n  - name: ''\n", ["clusters[0].name", "lowercase"]),
    ("clusters:\n  - name: " + "a" * 64 + "\n", ["clusters[0].name", "1-63"]),
    ("clusters:\n  - name: \"a/../b\"\n", ["clusters[0].name", "lowercase"]),
    ("clusters:\n  - name: \"prod\\n\"\n", ["clusters[0].name", "control characters"]),
    ("clusters:\n  - source: demo\n", ["clusters[0].name", "required"]),
    ("yes: 1\n", ["top level", "key True is not text", "allowed keys"]),
    ("clusters:\n  - name: a\n    region: \"eu\\u2028west\"\n", ["clusters[0].region", "control characters"]),
    ("carbon:\n  token_env: $EM_TOKEN\n", ["carbon.token_env", "environment variable"]),
    ("api:\n  decisions: yes please\n", ["api.decisions", "expected true or false"]),
    ("api:\n  decisions_token_env: \"my token\"\n", ["api.decisions_token_env", "environment variable"]),
    ("api:\n  decision: true\n", ["api.decision", "unknown key", "decisions, decisions_token_env"]),
    ("clusters:\n  - name: a\n    prometheus: {cluster_label: k8s-cluster}\n",
     ["clusters[0].prometheus.cluster_label", "Prometheus label name"]),
    ("sharing:\n  shared_namespaces: [yes]\n", ["sharing.shared_namespaces", "list of strings"]),
    # duplicate keys (PyYAML would keep the last silently)
    ("warehouse:\n  threads: 2\n  threads: 4\n", ["warehouse.threads", "twice", "lines 2 and 3"]),
    ("warehouse: {}\nquality: {}\nwarehouse: {threads: 2}\n", ["warehouse", "twice", "lines 1 and 3"]),
    ("clusters:\n  - name: a\n    source: demo\n    name: b\n", ["clusters[0].name", "twice", "lines 2 and 4"]),
    ("clusters:\n  - name: a\n    prometheus:\n      headers: {X-A: x, X-A: y}\n",
     ["clusters[0].prometheus.headers.X-A", "twice"]),
    ("energy:\n  memory: yes\n  memory: true\n", ["energy.memory", "twice"]),
    # a configured file that is missing
    ("pricing:\n  node_csv: prices/nodes.csv\n", ["pricing.node_csv", "nodes.csv not found", "relative to"]),
    ("pricing:\n  instance_sheet: /nonexistent/sheet.csv\n", ["pricing.instance_sheet", "not found"]),
    ("pricing:\n  custom_file: default.json\n", ["pricing.custom_file", "not found"]),
    ("clusters:\n  - name: a\n    source: prometheus\n    prometheus: {url: 'http://p:9090', "
     "ca_file: /nonexistent/ca.pem}\n", ["clusters[0].prometheus.ca_file", "not found"]),
    ("clusters:\n  - name: a\n    kubernetes: {enabled: true, kubeconfig: /nonexistent/kubeconfig}\n",
     ["clusters[0].kubernetes.kubeconfig", "not found"]),
    # YAML syntax errors stay on one line and give the position
    ("warehouse:\n  path: [1\n", ["line 3, column 1", "not valid YAML"]),
    # control characters: PyYAML's reader refuses the whole file before parsing (was a 20-line ReaderError)
    ("warehouse:\n  path: \"w\x00.duckdb\"\n", ["line 2, column 11", "not valid YAML", "'\\x00'", "remove it"]),
    ("clusters:\n  - name: a\n    region: eu\x07west\n", ["line 3, column 15", "'\\x07'", "printable text"]),
    ("\x7f: 1\n", ["line 1, column 1", "'\\x7f'"]),
    ("warehouse: " + "[" * 3000 + "]" * 3000 + "\n", ["not valid YAML", "nested", "4 levels"]),
    ("clusters:\n  - name: a\n    region: \"\\ud800\"\n", ["clusters[0].region", "control characters"]),
    # the places a run writes: creatable, of the right kind (was: passed, then the run crashed naming no key)
    ("warehouse:\n  path: /dev/null/x.duckdb\n",
     ["warehouse.path", "cannot be created: /dev/null is a device", "not a folder", "e.g. warehouse/kubeledger.duckdb"]),
    ("warehouse:\n  path: /tmp\n", ["warehouse.path", "/tmp is a directory, not a file", "DuckDB file"]),
    ("warehouse:\n  path: kubeledger.yaml\n", ["warehouse.path", "not a DuckDB database"]),
    ("warehouse:\n  path: wh/\n", ["warehouse.path", "'wh/'", "use a file path"]),
    ("warehouse:\n  path: ''\n", ["warehouse.path", "non-empty file path"]),
    ("warehouse:\n  serving_path: /dev/null\n",
     ["warehouse.serving_path", "is a device, FIFO or socket, not a file", "e.g. warehouse/serving.duckdb"]),
    ("warehouse:\n  serving_path: /dev/null/s.duckdb\n", ["warehouse.serving_path", "cannot be created"]),
    ("warehouse:\n  path: w.duckdb\n  serving_path: ./w.duckdb\n",
     ["warehouse.serving_path", "is also warehouse.path", "its own path"]),
    ("warehouse:\n  parquet_path: /etc/passwd\n", ["warehouse.parquet_path", "is a file, not a folder",
                                                   "e.g. warehouse/parquet"]),
    ("warehouse:\n  parquet_path: /dev/null/parquet\n", ["warehouse.parquet_path", "cannot be created"]),
    ("warehouse:\n  parquet_path: ' '\n", ["warehouse.parquet_path", "non-empty folder path"]),
    ("lake:\n  root: /dev/null/lake\n", ["lake.root", "cannot be created", "e.g. warehouse/lake"]),
    ("lake:\n  root: /etc/passwd\n", ["lake.root", "is a file, not a folder"]),
    ("warehouse:\n  path: " + "a" * 300 + "/w.duckdb\n", ["warehouse.path", "cannot be used (File name too long)"]),
]


def test_deep_nesting_fails_the_same_under_a_raised_recursion_limit(tmp_path):
    """The depth bound is the loader's, not the interpreter's: jsonata (imported through Dagster) raises the limit
    to 10,000, and then 3,000 nested lists parsed and failed later as 'expected a mapping' (seen when the test
    order changed)."""
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20000)
    try:
        p = tmp_path / "kubeledger.yaml"
        p.write_text("warehouse: " + "[" * 3000 + "]" * 3000 + "\n")
        with pytest.raises(SettingsError, match=r"not valid YAML for kubeledger: lists or mappings nested more than "
                                                r"100 levels deep; no key of kubeledger.yaml nests more than 4 levels"):
            load_settings(p)
        p.write_text("warehouse: " + "[" * 99 + "]" * 99 + "\n")  # within the bound: the usual type error
        with pytest.raises(SettingsError, match="warehouse: expected a mapping, got list"):
            load_settings(p)
    finally:
        sys.setrecursionlimit(limit)


@pytest.mark.parametrize(("text", "fragments"), BAD_VALUES)
def test_bad_values_fail_at_load_in_one_line(tmp_path, text, fragments):
    p = write(tmp_path, text)
    with pytest.raises(SettingsError) as exc:
        load_settings(p)
    message = str(exc.value)
    assert message.startswith(f"{p}: "), message
    assert "\n" not in message and "\r" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    assert sorted(x.name for x in tmp_path.iterdir()) == ["kubeledger.yaml"]  # nothing written


@pytest.mark.parametrize("text", [
    "pricing:\n  cluster_management_fee_per_hour: .nan\n",
    "sharing:\n  monthly_overhead_usd: .inf\n",
    "energy:\n  default_intensity_g_per_kwh: .nan\n",
    "quality:\n  max_estimated_share: .nan\n",
    "warehouse:\n  memory_limit: banana\n",
    "warehouse:\n  threads: 1e8\n",
    "schedule:\n  daily_cron: 'not a cron'\n",
    "schedule:\n  daily_cron: \"every day\"\n",
    "clusters:\n  - name: a\n    source: prometheus\n    prometheus: {url: 'file:///etc/passwd'}\n",
    "clusters:\n  - name: a\n    prometheus:\n      headers: {X-Scope-OrgID: \"a\\r\\nb\"}\n",
    "clusters:\n  - name: yes\n",
    "warehouse:\n  threads: 2\n  threads: 4\n",
    "pricing:\n  node_csv: nodes.csv\n",
])
def test_cli_refuses_bad_config_fast_and_writes_nothing(tmp_path, capsys, text):
    from pipelines.cli import main

    p = write(tmp_path, text)
    started = time.perf_counter()
    assert main(["--config", str(p), "demo"]) == 2
    assert time.perf_counter() - started < 1.0
    err = capsys.readouterr().err
    assert err.startswith(f"kubeledger: {p}: ") and err.count("\n") == 1, err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["kubeledger.yaml"]


@pytest.mark.parametrize("argv", [["check-config"], ["status"], ["demo"], ["materialize", "--date", "2026-03-01"],
                                  ["backfill", "--start", "2026-03-01", "--end", "2026-03-02"], ["recommend"],
                                  ["serve"], ["dev"], ["repair-instance"], ["allocation", "--window", "1d"]])
@pytest.mark.parametrize("text", ["clusters:\n  - name: a\n    region: eu\x07west\n",
                                  "warehouse:\n  path: /dev/null/x.duckdb\n", "warehouse:\n  path: wh.duckdb\n"])
def test_every_command_refuses_a_bad_config_in_one_line(tmp_path, capsys, argv, text):
    """check-config included: a control character (was a 20-line ReaderError traceback) or a warehouse path that
    can never be written (was "ok ... exists", then a crash in materialize) is one line, exit 2."""
    from pipelines.cli import main

    (tmp_path / "wh.duckdb").mkdir()  # the third config names a directory as the warehouse file
    p = write(tmp_path, text)
    assert main(["--config", str(p), *argv]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"kubeledger: {p}: ") and err.count("\n") == 1 and not out, err
    assert ("line 3, column 15" in err) if "\x07" in text else ("warehouse.path: " in err), err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["kubeledger.yaml", "wh.duckdb"]


def test_the_folders_kept_next_to_the_warehouse_file_are_checked(tmp_path, monkeypatch):
    """state, reports and the Dagster home live next to the warehouse file: a file in their place is named with
    warehouse.path (the key that places them); an override by the environment is named as such."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # set, it places the Dagster home instead (scripts/test.sh sets it)
    (tmp_path / "wh").mkdir()
    p = write(tmp_path, "warehouse:\n  path: wh/kubeledger.duckdb\n")
    assert load_settings(p).warehouse_path == tmp_path / "wh" / "kubeledger.duckdb"
    for name in ("state", "reports", "dagster"):
        (tmp_path / "wh" / name).write_text("")
        with pytest.raises(SettingsError) as exc:
            load_settings(p)
        assert str(exc.value) == (f"{p}: warehouse.path: {tmp_path / 'wh' / name} is a file, not a folder; kubeledger "
                                  "keeps this folder next to the warehouse file: move it away or choose another "
                                  "warehouse.path"), exc.value
        (tmp_path / "wh" / name).unlink()
    (tmp_path / "elsewhere.duckdb").mkdir()
    monkeypatch.setenv("KUBELEDGER_WAREHOUSE", str(tmp_path / "elsewhere.duckdb"))
    with pytest.raises(SettingsError, match=r"KUBELEDGER_WAREHOUSE \(in place of warehouse\.path\): .* is a "
                                            r"directory, not a file"):
        load_settings(p)
    monkeypatch.setenv("KUBELEDGER_WAREHOUSE", str(tmp_path / "wh" / "kubeledger.duckdb"))  # as the CLI sets it
    assert load_settings(p).warehouse_path == tmp_path / "wh" / "kubeledger.duckdb"


def test_a_duckdb_file_or_a_missing_path_is_fine(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    duckdb.connect(str(tmp_path / "w.duckdb")).close()
    (tmp_path / "empty.duckdb").write_bytes(b"")  # being created by another process right now: not judged
    p = write(tmp_path, "warehouse:\n  path: w.duckdb\n  serving_path: empty.duckdb\n  parquet_path: new/a/b\n"
                        "lake:\n  root: s3a://bucket/lake\n")
    s = load_settings(p)
    assert s.warehouse_path == tmp_path / "w.duckdb" and s.parquet_path == tmp_path / "new" / "a" / "b"
    assert not (tmp_path / "new").exists()  # checked, not created


def test_step_errors_name_the_setting_of_the_path_they_mention(tmp_path):
    """A step's error names the key when it mentions a path a setting places (the warehouse file, a folder next to
    it, a price file); other errors are left as they are."""
    from pipelines.runs import setting_named

    (tmp_path / "nodes.csv").write_text("InstanceID,AssetClass,MarketPriceHourly\n")
    p = write(tmp_path, "warehouse:\n  path: wh/kubeledger.duckdb\n  serving_path: wh/serving.duckdb\n"
                        "pricing:\n  node_csv: nodes.csv\n")
    s = load_settings(p)
    wh = tmp_path / "wh"
    cases = {
        f'IOException: IO Error: Could not read from file "{wh}/kubeledger.duckdb": Is a directory': "warehouse.path",
        f"IOException: IO Error: Cannot open file {wh}/kubeledger.duckdb.wal: Permission denied": "warehouse.path",
        f"NotADirectoryError: [Errno 20] Not a directory: '{wh}/state/logs'": "warehouse.path",
        f"PermissionError: [Errno 13] Permission denied: '{wh}/serving.duckdb'": "warehouse.serving_path",
        f"PricingFileError: {tmp_path}/nodes.csv: line 2, column 'MarketPriceHourly': 'x' is not a price":
            "pricing.node_csv",
    }
    for message, key in cases.items():
        assert setting_named(message, s) == f"{message} ({key} in {p})"
    for message in (f"IOException: Could not read from file '{wh}/kubeledger.duckdbx'", "dbt seed failed (exit code 2)",
                    "pricing.node_csv: already named"):
        assert setting_named(message, s) == message
    assert setting_named("anything", None) == "anything"


def test_a_log_folder_that_cannot_be_made_is_one_line_naming_the_key(tmp_path, capsys):
    """Made impossible after the settings loaded (the state folder replaced by a file): one line, not a traceback."""
    import argparse

    from pipelines.cli import EXIT_FAILED, _work

    p = write(tmp_path, "warehouse:\n  path: wh/kubeledger.duckdb\n")
    s = load_settings(p)
    (tmp_path / "wh").mkdir()
    (tmp_path / "wh" / "state").write_text("")
    assert _work(argparse.Namespace(verbose=False), s, ["demo"], "header", lambda _session: None) == EXIT_FAILED
    err = capsys.readouterr().err
    assert err == (f"kubeledger: cannot start the log file: NotADirectoryError: [Errno 20] Not a directory: "
                   f"'{tmp_path}/wh/state/logs' (warehouse.path in {p})\n"), err


def test_a_semantically_bad_cron_is_checked_by_dagster(tmp_path):
    """Ranges, lists, names and impossible dates are Dagster's rules (it runs the schedule); a plain out-of-range
    number is refused before Dagster is imported."""
    for cron in ("61 * * * *", "0 25 * * *", "0 1 * * 8", "0 0 30 2 *", "0 1 * * FOO", "0 1-30 * * *",
                 "0 1,99 * * *", "0 1 * 13-14 *"):
        p = write(tmp_path, f"schedule:\n  daily_cron: '{cron}'\n")
        with pytest.raises(SettingsError, match=r"schedule\.daily_cron: .* is not allowed; use a 5-field cron"):
            load_settings(p)


@pytest.mark.parametrize("cron", ["30 1 * * *", "0 2 * * MON-FRI", "*/15 * * * *", "0 3 1 jan *", "@daily",
                                  "5 4 * * 0,6", "0 1 L * *", "0 1 * * 5#2", "59 23 31 12 7"])
def test_good_crons_load(tmp_path, cron):
    assert load_settings(write(tmp_path, f"schedule:\n  daily_cron: '{cron}'\n")).schedule.daily_cron == cron


@pytest.mark.parametrize("size", ["4GB", "512MiB", "1.5GB", "4 GiB", "2tb", "80%", "100%", "65536KiB"])
def test_memory_limits_load_and_duckdb_agrees(tmp_path, size):
    duckdb = pytest.importorskip("duckdb")
    s = load_settings(write(tmp_path, f"warehouse:\n  memory_limit: '{size}'\n"))
    assert s.warehouse.memory_limit == size
    duckdb.connect(config={"memory_limit": size}).close()  # the same string DuckDB is given


def test_every_numeric_key_has_a_documented_range():
    from dataclasses import fields as dc_fields

    from pipelines import settings as mod

    def walk(cls, prefix):
        for f in dc_fields(cls):
            t = str(f.type)
            key = f"{prefix}{f.name}"
            if t in mod._NESTED:
                yield from walk(mod._NESTED[t], key + ".")
            elif t.startswith("tuple[ClusterSettings"):
                yield from walk(mod.ClusterSettings, key + "[].")
            elif t in ("int", "float", "float | None"):
                yield key

    numeric = set(walk(mod.Settings, ""))
    assert numeric == set(mod.NUMBER_RANGES), (
        f"declare each numeric key with its range, `ranged(default, lo, hi, what)` (pipelines/settings_models.py): "
        f"{sorted(numeric ^ set(mod.NUMBER_RANGES))}")
    for key, spec in mod.NUMBER_RANGES.items():
        assert spec.lo < spec.hi, key
        assert all(math.isfinite(x) for x in (spec.lo, spec.hi)), key


def test_threads_bound_follows_the_machine(tmp_path):
    from pipelines.settings import max_threads

    limit = max_threads()
    assert limit >= 4
    assert load_settings(write(tmp_path, f"warehouse:\n  threads: {limit}\n")).warehouse.threads == limit
    with pytest.raises(SettingsError, match=rf"warehouse\.threads: {limit + 1} is not allowed; use a whole number "
                                            rf"in 1\.\.{limit}"):
        load_settings(write(tmp_path, f"warehouse:\n  threads: {limit + 1}\n"))


def test_quoted_values_and_merge_keys_are_fine(tmp_path):
    p = write(tmp_path, """
clusters:
  - &base {name: "yes", source: demo, region: "0123", demo: {nodes: 2}}
  - <<: *base
    name: prod.eu-1_b
    region: eu-west-1
    prometheus:
      headers: {X-Scope-OrgID: "1234", Authorization-Extra: "a b\\tc"}
energy: {default_intensity_g_per_kwh: 0}
quality: {max_estimated_share: 1, min_hour_coverage: 1}
pricing: {cpu_discount_pct: 100, cluster_management_fee_per_hour: 0.1}
""")
    s = load_settings(p)
    assert [c.name for c in s.clusters] == ["yes", "prod.eu-1_b"]
    assert s.clusters[0].region == "0123" and s.clusters[1].region == "eu-west-1"
    assert s.clusters[1].demo.nodes == 2  # merged from the anchor
    assert s.clusters[1].prometheus.headers == {"X-Scope-OrgID": "1234", "Authorization-Extra": "a b\tc"}


def test_configured_files_are_checked_relative_to_the_config(tmp_path, monkeypatch):
    (tmp_path / "prices").mkdir()
    (tmp_path / "prices" / "nodes.csv").write_text("InstanceID,AssetClass,MarketPriceHourly\n")
    p = write(tmp_path, "pricing:\n  node_csv: prices/nodes.csv\n")
    monkeypatch.chdir(tmp_path.parent)  # not the config's folder
    assert load_settings(p).pricing.node_csv == "prices/nodes.csv"


def test_a_leading_tilde_in_configured_paths_is_the_home_folder(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "prices").mkdir(parents=True)
    (home / "prices" / "nodes.csv").write_text("InstanceID,AssetClass,MarketPriceHourly\n")
    (home / "ca.pem").write_text("x")
    (home / "token").write_text("secret\n")
    monkeypatch.setenv("HOME", str(home))
    cfg = tmp_path / "etc"
    cfg.mkdir()
    p = write(cfg, "warehouse:\n  path: ~/wh/k.duckdb\n  serving_path: ~/wh/s.duckdb\n  parquet_path: ~/lake\n"
                   "pricing:\n  node_csv: ~/prices/nodes.csv\n"
                   "clusters:\n  - name: a\n    source: prometheus\n    prometheus: {url: 'http://p:9090', "
                   "ca_file: ~/ca.pem, bearer_token_file: ~/token}\n")
    s = load_settings(p)  # the pricing and CA files are found under HOME, not under etc/~
    assert s.warehouse_path == home / "wh" / "k.duckdb"
    assert s.serving_path == home / "wh" / "s.duckdb"
    assert s.parquet_path == home / "lake"
    assert s.resolve(s.pricing.node_csv) == home / "prices" / "nodes.csv"
    assert s.clusters[0].prometheus.bearer_token() == "secret"
    assert not (cfg / "~").exists()


def test_a_directory_or_fifo_named_as_a_file_is_not_reported_missing(tmp_path):
    (tmp_path / "sheet.csv").mkdir()
    p = write(tmp_path, "pricing:\n  instance_sheet: sheet.csv\n")
    with pytest.raises(SettingsError, match=r"pricing\.instance_sheet: .*sheet\.csv is a directory"):
        load_settings(p)
    fifo = tmp_path / "nodes.fifo"
    os.mkfifo(fifo)
    p = write(tmp_path, f"pricing:\n  node_csv: {fifo}\n")
    started = time.perf_counter()
    with pytest.raises(SettingsError, match=r"pricing\.node_csv: .*nodes\.fifo is not a regular file"):
        load_settings(p)
    assert time.perf_counter() - started < 1.0  # never opened, so never blocks


def test_config_path_that_is_a_directory_or_fifo(tmp_path):
    with pytest.raises(SettingsError, match="the config file is a directory"):
        load_settings(tmp_path)
    fifo = tmp_path / "kubeledger.yaml"
    os.mkfifo(fifo)
    with pytest.raises(SettingsError, match="the config file is not a regular file"):
        load_settings(fifo)


def test_readme_example_loads(tmp_path):
    readme = Path(__file__).resolve().parents[2] / "README.md"
    block = re.search(r"## Configuration.*?```yaml\n(.*?)```", readme.read_text(), re.S)
    assert block, "README.md has no kubeledger.yaml example"
    s = load_settings(write(tmp_path, block.group(1)))
    assert s.warehouse.memory_limit == "4GB" and s.schedule.daily_cron == "30 1 * * *"


def test_a_clusters_billing_account_reaches_the_dbt_vars(tmp_path):
    """clusters[].billing_account_id / _name (FOCUS out's BillingAccountId when no bill names the account) load as
    text and reach dbt with the cluster's other settings; unset, they are None."""
    p = write(tmp_path, "clusters:\n  - name: a\n    billing_account_id: '111122223333'\n"
                        "    billing_account_name: Payer Inc\n  - name: b\n")
    clusters = dbt_vars(load_settings(p), None, None)["clusters"]
    assert (clusters["a"]["billing_account_id"], clusters["a"]["billing_account_name"]) == ("111122223333", "Payer Inc")
    assert (clusters["b"]["billing_account_id"], clusters["b"]["billing_account_name"]) == (None, None)
