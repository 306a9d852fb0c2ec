"""Bills in object storage (issue 28): billing.focus_path / cur2_path as s3:// and gs:// URIs, read through fsspec
(pipelines/sources/objectstore.py) from a real S3 API on 127.0.0.1 (moto's server), by the real raw_billing asset.

The bucket holds the FinOps Foundation's FOCUS sample bills (tests/fixtures/focus: one nested two folders down, one
gzipped, a README that is not a bill) and a CUR 2.0 Parquet export; a local folder holds the same files. Both land the
same rows. A missing bucket, refused credentials, an endpoint nobody listens on and a missing extra each degrade the
'billing' source with one problem naming the URI and the fix, keep the rows loaded before, and fail nothing; the
settings refuse an unknown scheme when they are read."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path

import dagster as dg
import duckdb
import pytest

pytest.importorskip("s3fs", reason="the objectstore extra (pip install -e '.[test]' installs it)")
pytest.importorskip("moto.server", reason="moto[s3] and flask (the test extra)")

from moto.server import ThreadedMotoServer  # noqa: E402

from pipelines.settings import BillingSettings, Settings, SettingsError, load_settings  # noqa: E402
from pipelines.sources.focus import describe_bills, load_focus_bills  # noqa: E402
from tests.fixtures.cur2 import write_cur2  # noqa: E402
from tests.fixtures.ports import free_port  # noqa: E402

SAMPLES = Path(__file__).parents[1] / "fixtures" / "focus"
DAY = "2026-02-01"  # the samples' charge day
SECRET = "s3cr3t-never-shown-42"  # a refused secret: in no message, hint or metadata
AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent/aws/config",
           "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws/credentials"}


def _layout(root: Path) -> Path:
    """The bills as the bucket holds them: focus/ (nested, gzipped, a non-bill file) and cur2/ (Parquet)."""
    names = sorted(SAMPLES.glob("*.csv"))
    (root / "focus" / "2026" / "02").mkdir(parents=True)
    (root / "cur2").mkdir()
    shutil.copy(names[0], root / "focus" / names[0].name)
    shutil.copy(names[1], root / "focus" / "2026" / "02" / names[1].name)
    (root / "focus" / (names[2].name + ".gz")).write_bytes(gzip.compress(names[2].read_bytes()))
    shutil.copy(names[3], root / "focus" / names[3].name)
    (root / "focus" / "README.txt").write_text("not a bill\n")
    start = datetime(2026, 2, 1, 3)
    write_cur2(root / "cur2" / "part-0.parquet", [
        {"line_item_usage_start_date": start, "line_item_line_item_type": "Usage", "line_item_unblended_cost": 1.25,
         "line_item_resource_id": "i-0abc", "resource_tags": {"user:team": "web"}}])
    return root


@pytest.fixture(scope="module")
def local_bills(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _layout(tmp_path_factory.mktemp("bills"))


@pytest.fixture(scope="module")
def s3_server(local_bills: Path) -> Iterator[str]:
    """moto's S3 on a free port, bucket 'bills' holding local_bills' files under the same keys."""
    import boto3

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                              aws_secret_access_key="testing", region_name="us-east-1")
        client.create_bucket(Bucket="bills")
        for path in local_bills.rglob("*"):
            if path.is_file():
                client.put_object(Bucket="bills", Key=path.relative_to(local_bills).as_posix(), Body=path.read_bytes())
        yield endpoint
    finally:
        server.stop()


@pytest.fixture()
def aws_env(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server)  # botocore's own setting, honoured by s3fs's client
    return s3_server


def _config(folder: Path, focus: str, cur2: str | None = None) -> Path:
    config = folder / "kubeledger.yaml"
    billing = f"focus_path: '{focus}'" + (f", cur2_path: '{cur2}'" if cur2 else "")
    config.write_text("warehouse: {path: wh/w.duckdb, serving_path: wh/s.duckdb, parquet_path: wh/parquet}\n"
                      f"billing: {{{billing}, reread_days: 0}}\nschedule: {{start_date: '2026-01-01'}}\n")
    return config


def _materialize(config: Path) -> dg.ExecuteInProcessResult:
    """The real raw_billing asset for the samples' day."""
    from pipelines.dagster_defs.assets_extract import raw_billing
    from pipelines.dagster_defs.partitions import with_first_day
    from pipelines.dagster_defs.resources import KubeledgerResource

    (asset,) = with_first_day([raw_billing], date(2026, 1, 1))
    result = dg.materialize([asset], partition_key=DAY,
                            resources={"kubeledger": KubeledgerResource(config_path=str(config))})
    assert result.success
    return result


def _query(config: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(load_settings(str(config)).warehouse_path), read_only=True) as con:
        return con.execute(sql).fetchall()


def _rows(config: Path, table: str) -> list[tuple]:
    return _query(config, f"select * exclude (source_file, _extracted_at) from raw.{table} order by all")  # noqa: S608


def _billing_health(config: Path) -> list[tuple]:
    return _query(config, "select status, message, hint, affected from raw.source_health where source = 'billing'")


def test_an_s3_prefix_lands_the_same_rows_as_the_same_files_in_a_local_folder(tmp_path: Path, local_bills: Path,
                                                                              aws_env: str) -> None:
    (tmp_path / "local").mkdir()
    (tmp_path / "s3").mkdir()
    local = _config(tmp_path / "local", str(local_bills / "focus"), str(local_bills / "cur2"))
    remote = _config(tmp_path / "s3", "s3://bills/focus/", "s3://bills/cur2")
    _materialize(local)
    result = _materialize(remote)
    for table, count in (("focus_charges", 29 + 37 + 28 + 28), ("cur2_line_items", 1)):
        assert len(_rows(remote, table)) == count
        assert _rows(remote, table) == _rows(local, table), table
    files = [r[0] for r in _query(remote, "select distinct source_file from raw.focus_charges order by 1")]
    assert len(files) == 4 and all(f.startswith("s3://bills/focus/") for f in files), files
    assert any(f.startswith("s3://bills/focus/2026/02/") for f in files) and any(f.endswith(".csv.gz") for f in files)
    assert all(status == "ok" for status, *_ in _billing_health(remote)), _billing_health(remote)
    events = {e.asset_key.path[1]: e.metadata for e in result.get_asset_materialization_events()
              for e in [e.event_specific_data.materialization]}
    assert events["focus_charges"]["files"].value == 4 and events["focus_charges"]["rows"].value == 122


def test_a_glob_and_one_object_read_like_local_ones(local_bills: Path, aws_env: str) -> None:
    con = duckdb.connect()
    from pipelines.warehouse.connection import ensure_raw_schema

    ensure_raw_schema(con)
    for uri, files in (("s3://bills/focus/**/*.csv", 3), ("s3://bills/focus/*.csv", 2),
                       (f"s3://bills/focus/{sorted(SAMPLES.glob('*.csv'))[0].name}", 1)):
        summary = load_focus_bills(Settings(billing=BillingSettings(focus_path=uri, reread_days=0)), con,
                                   date(2026, 2, 1), date(2026, 2, 2))
        assert (summary["files"], summary["problems"]) == (files, []), uri
    # kubeledger check-config reads the bill the same way, in a DuckDB of its own
    settings = Settings(billing=BillingSettings(focus_path="s3://bills/focus/"))
    assert describe_bills(settings) == "4 bill file(s), 122 rows, charge days 2026-02-01..2026-02-01"


@pytest.mark.parametrize("fault", ["missing bucket", "refused credentials"])
def test_a_missing_bucket_or_refused_credentials_degrade_and_keep_the_last_good_load(
        tmp_path: Path, aws_env: str, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    config = _config(tmp_path, "s3://bills/focus/")
    _materialize(config)
    good = _rows(config, "focus_charges")
    assert len(good) == 122
    uri = "s3://bills/focus/"
    if fault == "missing bucket":
        uri = "s3://no-such-bucket/focus/"
        _config(tmp_path, uri)
        result = _materialize(config)
    else:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
        _moto_auth(aws_env, on=True)  # moto checks signatures from now on: an unknown key is refused (403)
        try:
            result = _materialize(config)
        finally:
            _moto_auth(aws_env, on=False)
    assert _rows(config, "focus_charges") == good  # the last good load stays
    (health,) = [h for h in _billing_health(config) if h[0] != "ok"]
    status, message, hint, affected = health
    assert status == "degraded" and json.loads(affected) == [uri]
    assert f"{uri}: " in message and "122 bill rows loaded before" in message
    assert ("bucket does not exist" if fault == "missing bucket" else "Access Key Id") in message, message
    assert "AWS_ACCESS_KEY_ID" in hint and "re-run the day" in hint
    metadata = json.dumps([{k: str(v.value) for k, v in e.event_specific_data.materialization.metadata.items()}
                           for e in result.get_asset_materialization_events()])
    assert SECRET not in message + hint + metadata and uri in metadata


def _moto_auth(endpoint: str, on: bool) -> None:
    """moto's server checks credentials only after this many more requests (its INITIAL_NO_AUTH_ACTION_COUNT)."""
    request = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=b"0" if on else b"1000000000",
                                     method="POST", headers={"Content-Type": "text/plain"})
    with urllib.request.urlopen(request, timeout=5) as answer:  # noqa: S310 - the test's own loopback server
        assert answer.status == 200


def _load(uri: str) -> dict:
    con = duckdb.connect()
    from pipelines.warehouse.connection import ensure_raw_schema

    ensure_raw_schema(con)
    return load_focus_bills(Settings(billing=BillingSettings(focus_path=uri, reread_days=0)), con,
                            date(2026, 2, 1), date(2026, 2, 2))


def test_an_endpoint_nobody_listens_on_degrades_in_seconds(aws_env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    started = time.monotonic()
    summary = _load("s3://bills/focus/")
    assert time.monotonic() - started < 20  # bounded attempts with a short backoff, not botocore's defaults
    (problem,) = summary["problems"]
    assert "Could not connect to the endpoint URL" in problem.message and "AWS_ENDPOINT_URL" in problem.hint


def test_an_azure_endpoint_nobody_listens_on_degrades_in_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("adlfs")
    port = free_port()
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", (
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + "a2V5" * 22 + "==;"
        f"BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;"))
    started = time.monotonic()
    summary = _load("az://bills/focus/")
    assert time.monotonic() - started < 30  # the Azure SDK's own retry policy waits minutes
    (problem,) = summary["problems"]
    assert "az://bills/focus/" in problem.message and "AZURE_STORAGE_CONNECTION_STRING" in problem.hint
    assert "a2V5a2V5" not in problem.message


def test_without_the_extra_the_bill_degrades_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "s3fs", None)  # `import s3fs` raises ImportError
    (problem,) = _load("s3://bills/focus/")["problems"]
    assert "s3://bills/focus/" in problem.message and "needs s3fs, which is not installed" in problem.message
    assert "kubeledger[objectstore]" in problem.hint


def test_gs_reads_through_the_s3_interoperable_api_with_an_hmac_key(aws_env: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """gs:// speaks Cloud Storage's XML API (S3's): moto stands in for it at GCS_ENDPOINT_URL, with its own key."""
    monkeypatch.setenv("GCS_ENDPOINT_URL", aws_env)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")  # not used for gs://
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA-not-for-google")
    monkeypatch.setenv("GCS_HMAC_KEY_ID", "GOOG1EXAMPLE")
    monkeypatch.setenv("GCS_HMAC_SECRET", "hmac-secret-example")
    summary = _load("gs://bills/focus/")
    assert (summary["files"], summary["rows"], summary["problems"]) == (4, 122, [])
    monkeypatch.delenv("GCS_HMAC_SECRET")
    (problem,) = _load("gs://bills/focus/")["problems"]
    assert "GCS_HMAC_SECRET" in problem.message and "gs://bills/focus/" in problem.affected


@pytest.mark.parametrize(("value", "words"), [
    ("ftp://bills/focus/", ["billing.focus_path", "'ftp://bills/focus/'", "s3://, gs://, az://, abfs://, abfss://"]),
    ("https://bills.example/focus/", ["billing.focus_path", "s3://, gs://"]),
])
def test_an_unknown_scheme_is_refused_when_the_settings_are_read(tmp_path: Path, value: str,
                                                                   words: list[str]) -> None:
    config = _config(tmp_path, value)
    with pytest.raises(SettingsError) as refused:
        load_settings(str(config))
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{config}: ")
    assert all(w in message for w in words), message
