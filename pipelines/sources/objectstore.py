"""Bill files in object storage (issue 28): `billing.focus_path` / `billing.cur2_path` as s3://, gs://, az:// or
abfs[s]:// URIs, read by DuckDB through fsspec filesystems registered on its connection.

DuckDB's own httpfs/azure extensions are downloaded at run time (from the extension repository; air-gapped
clusters cannot), and the PyPI wheels that ship them pin another DuckDB release; fsspec's filesystems are ordinary
Python packages (the optional extra `kubeledger[objectstore]`, in the image), so every machine reads the same way:

- s3://bucket/prefix: s3fs over botocore's credential chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/
  AWS_SESSION_TOKEN, AWS_PROFILE and the shared files, web identity (EKS IRSA, Pod Identity), the instance role);
  AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_S3) for an S3-compatible store (MinIO, Ceph, R2...), AWS_CA_BUNDLE for
  its CA.
- gs://bucket/prefix: Cloud Storage's S3-interoperable XML API with an HMAC key (GCS_HMAC_KEY_ID and GCS_HMAC_SECRET,
  or GCS_HMAC_SECRET_FILE), as DuckDB's httpfs reads gs://; GCS_ENDPOINT_URL overrides https://storage.googleapis.com.
- az://container/prefix, abfs[s]://container@account.dfs.core.windows.net/prefix: adlfs over the Azure SDK
  (AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY,
  AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_CLIENT_ID/_SECRET/TENANT_ID or the default credential chain: workload or
  managed identity).

TLS is verified (nothing here turns it off). Every request is bounded: a connect timeout, a read timeout and a few
attempts, so an unreachable endpoint costs seconds. Listing follows the local rules: a prefix means its *.csv,
*.csv.gz and *.parquet objects, recursively; a glob its matches; a key that one object. Any failure is an
ObjectStoreError naming the URI, with a hint saying what to fix; the secrets read here are registered with
pipelines/redaction.py so that no message repeats one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb

from pipelines.redaction import redact, remember

# scheme -> what it reads; the settings refuse any other scheme (pipelines/settings_rules.py focus_path_problem)
SCHEMES = {"s3": "S3 or an S3-compatible store", "gs": "Google Cloud Storage", "az": "Azure Blob Storage",
           "abfs": "Azure Data Lake Storage Gen2", "abfss": "Azure Data Lake Storage Gen2 (TLS)"}
EXTRA = "pip install 'kubeledger[objectstore]'"
CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 30
ATTEMPTS = 3  # per request, the first included
GCS_ENDPOINT = "https://storage.googleapis.com"
_URI_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*)://")
_HINTS = {
    "s3": ("check that the bucket and prefix exist and that the AWS credentials kubeledger finds "
           "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared files, or the pod's IAM role; "
           "AWS_ENDPOINT_URL for an S3-compatible store) may list and read them, then re-run the day"),
    "gs": ("check that the bucket and prefix exist and that GCS_HMAC_KEY_ID and GCS_HMAC_SECRET (or "
           "GCS_HMAC_SECRET_FILE) hold an HMAC key of a service account that may list and read them, then re-run "
           "the day"),
    "az": ("check that the container and prefix exist and that the Azure credentials kubeledger finds "
           "(AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY, "
           "AZURE_STORAGE_SAS_TOKEN or a workload identity) may list and read them, then re-run the day"),
}
_PACKAGES = {"s3": "s3fs", "gs": "s3fs", "az": "adlfs"}


class ObjectStoreError(OSError):
    """A bill location that cannot be listed or read; `hint` says what to fix."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(redact(message))
        self.hint = hint


def scheme(location: str) -> str | None:
    """The URI scheme of a bill location (lowercase), or None for a local path."""
    m = _URI_RE.match(location)
    return m.group(1).lower() if m else None


def _family(name: str) -> str:
    return "az" if name in ("az", "abfs", "abfss") else name


def hint(location: str) -> str:
    return _HINTS[_family(scheme(location) or "s3")]


def _env_secret(name: str) -> str | None:
    return remember(os.environ.get(name) or None)


def _s3(config: dict[str, Any] | None = None, protocol: tuple[str, ...] | None = None, **kwargs: Any) -> Any:
    import s3fs

    class BoundedS3(s3fs.S3FileSystem):  # s3fs's own retries (5 by default) on top of botocore's: one try here
        retries = 1

    if protocol:
        BoundedS3.protocol = protocol
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        _env_secret(name)
    return BoundedS3(skip_instance_cache=True, use_listings_cache=False, config_kwargs={
        "connect_timeout": CONNECT_TIMEOUT_S, "read_timeout": READ_TIMEOUT_S,
        "retries": {"max_attempts": ATTEMPTS, "mode": "standard"}, **(config or {})}, **kwargs)


def _gcs() -> Any:
    key_id = os.environ.get("GCS_HMAC_KEY_ID")
    secret = os.environ.get("GCS_HMAC_SECRET")
    if not secret and os.environ.get("GCS_HMAC_SECRET_FILE"):
        with open(os.environ["GCS_HMAC_SECRET_FILE"], encoding="utf-8") as f:
            secret = f.read().strip()
    remember(secret)
    if not key_id or not secret:
        raise ObjectStoreError("no GCS HMAC key: GCS_HMAC_KEY_ID and GCS_HMAC_SECRET (or GCS_HMAC_SECRET_FILE) are "
                               "not set", _HINTS["gs"])
    # the XML API takes SigV4 with region "auto"; botocore's newer default checksums are S3's own, not sent here
    return _s3({"request_checksum_calculation": "when_required", "response_checksum_validation": "when_required"},
               protocol=("gs",), key=key_id, secret=secret,
               endpoint_url=os.environ.get("GCS_ENDPOINT_URL") or GCS_ENDPOINT, client_kwargs={"region_name": "auto"})


def _azure() -> Any:
    import adlfs
    from azure.storage.blob import ExponentialRetry
    from azure.storage.blob.aio import BlobServiceClient

    for name in ("AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CLIENT_SECRET",
                 "AZURE_STORAGE_CONNECTION_STRING"):
        _env_secret(name)
    for part in (os.environ.get("AZURE_STORAGE_CONNECTION_STRING") or "").split(";"):
        if part.lower().startswith(("accountkey=", "sharedaccesssignature=")):
            remember(part.split("=", 1)[1])
    options = {"retry_policy": ExponentialRetry(initial_backoff=1, increment_base=2, retry_total=ATTEMPTS - 1),
               "connection_timeout": CONNECT_TIMEOUT_S, "read_timeout": READ_TIMEOUT_S}

    class BoundedAzure(adlfs.AzureBlobFileSystem):
        """adlfs's client, with bounded retries and timeouts (the SDK's default waits minutes on a dead endpoint)."""

        def do_connect(self) -> None:
            if self.connection_string:
                self.service_client = BlobServiceClient.from_connection_string(self.connection_string, **options)
                return
            if not self.account_name:
                raise ValueError("no Azure storage account: set AZURE_STORAGE_ACCOUNT_NAME or "
                                 "AZURE_STORAGE_CONNECTION_STRING")
            url = f"https://{getattr(self, 'account_host', None) or self.account_name + '.blob.core.windows.net'}"
            credential = self.credential or self.account_key
            if credential is None and self.sas_token:
                url += self.sas_token if self.sas_token.startswith("?") else "?" + self.sas_token
            self.service_client = BlobServiceClient(url, credential=credential, **options)

    return BoundedAzure(skip_instance_cache=True, use_listings_cache=False,
                        connection_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S)


def filesystem(location: str) -> Any:
    """The fsspec filesystem that reads `location`'s scheme; ObjectStoreError without the extra or credentials."""
    name = _family(scheme(location) or "")
    if name not in _HINTS:
        raise ObjectStoreError(f"{location}: {scheme(location)}:// is not read (use one of "
                               f"{', '.join(s + '://' for s in SCHEMES)} or a local path)", _HINTS["s3"])
    try:
        return {"s3": _s3, "gs": _gcs, "az": _azure}[name]()
    except ImportError as exc:
        raise ObjectStoreError(
            f"{location}: reading {scheme(location)}:// needs {_PACKAGES[name]}, which is not installed ({exc.name})",
            f"install the object-store extra ({EXTRA}; the kubeledger image has it), then re-run the day") from exc
    except ObjectStoreError:
        raise
    except Exception as exc:  # a credential chain that cannot start (a bad file, a bad connection string)
        raise ObjectStoreError(f"{location}: {_cause(exc)}", _HINTS[name]) from exc


def _cause(exc: BaseException) -> str:
    text = re.sub(r"\s+", " ", str(exc)).strip() or type(exc).__name__
    return redact(f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text)[:300]


def list_files(fs: Any, location: str, suffixes: tuple[str, ...]) -> list[str]:
    """The bill objects `location` names, as full URIs, sorted: a glob's matches, a prefix's objects (recursively),
    one object. Raises ObjectStoreError (no such bucket, denied, unreachable, nothing there)."""
    prefix = location[:location.index("://") + 3]
    try:
        if any(ch in location.split("://", 1)[1] for ch in "*?["):
            found = list(fs.glob(location))
        else:
            found = list(fs.find(location))
            if not found and fs.isfile(location):
                found = [location]
    except Exception as exc:  # botocore/azure errors are not all OSErrors: every one degrades the same way
        raise ObjectStoreError(f"{location}: {_cause(exc)}", hint(location)) from exc
    files = sorted({p if "://" in p else prefix + p.lstrip("/") for p in found if p.lower().endswith(suffixes)})
    if not files:
        raise ObjectStoreError(f"{location}: no {', '.join(suffixes)} bill files there", hint(location))
    return files


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, fs: Any) -> Iterator[None]:
    """`fs` registered on the connection for the block (DuckDB names it by its first protocol), then removed."""
    name = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if name in con.list_filesystems():
        con.unregister_filesystem(name)
    con.register_filesystem(fs)
    try:
        yield
    finally:
        con.unregister_filesystem(name)
