"""What each settings key allows: the choices of text keys, the ranges of numeric keys, and the rules of the
keys with a format of their own (names, zones, URLs, DuckDB sizes, cron expressions, dates, files).

Every rule returns a problem (the "use ..." half of the error message) or None; settings_validation.py turns
a problem into a SettingsError naming the file and the key.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import fields, is_dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import get_args, get_origin, get_type_hints
from urllib.parse import urlsplit

from pipelines.registry import CARBON_PROVIDERS, METRICS_SOURCES
from pipelines.settings_models import ENGINES, RANGE, NumberRange, ScheduleSettings, Settings

# cluster names become partition paths (cluster=<name>/), Dagster tags and dbt vars: DNS-label-like, lowercase so
# two names never collide on a case-insensitive file system
CLUSTER_NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?")
ZONE_RE = re.compile(r"[A-Z]{2}(-[A-Z0-9]{1,8}){0,3}")
LABEL_KEY_RE = re.compile(r"[A-Za-z0-9_.\-/]{1,253}")
PROM_LABEL_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
HEADER_NAME_RE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}")  # RFC 7230 token
# C0, DEL, C1, line separators, and lone surrogates ("\ud800" in YAML: no file name or header can hold one)
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
HEADER_VALUE_BAD_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")  # as CONTROL_RE; HTAB is allowed
# DuckDB size syntax (the units its memory_limit documents), or a share of the machine's memory
MEMORY_RE = re.compile(r"([0-9]{1,12}(?:\.[0-9]{1,6})?) ?(KB|MB|GB|TB|KiB|MiB|GiB|TiB|%)", re.IGNORECASE)
MEMORY_UNITS = {"kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
                "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}
MEMORY_MIN_BYTES = 64 * 1024**2
CRON_ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
CRON_FIELD_RE = re.compile(r"[0-9A-Za-z*?,/#-]{1,64}")
CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))  # minute, hour, day of month, month, day of week
PROVIDERS = ("aws", "gcp", "azure", "alibaba", "oracle", "ovhcloud", "scaleway", "onprem")


# --- choices -----------------------------------------------------------------------------------------------

# Keys below are written with `clusters[]` for any cluster index.
CHOICES: dict[str, tuple[str, ...]] = {
    "clusters[].provider": PROVIDERS,
    "carbon.emission_factor_type": ("lifecycle", "direct"),
    "pricing.custom_convention": ("hourly", "monthly"),
    "sharing.split": ("weighted", "even"),
    "sharing.idle_split": ("weighted", "even"),
    "energy.pue_source": ("greenkube", "ccf"),
    "dagster.storage": ("sqlite", "postgres"),
    "clusters[].demo.scenario": ("default", "recommendations"),
    "engine": ENGINES,
}


def carbon_provider_choices() -> tuple[str, ...]:
    """The allowed values of `carbon.provider`: the names of the carbon provider registry (pipelines/registry.py,
    pure data: reading it imports none of the providers)."""
    return tuple(CARBON_PROVIDERS)


def metrics_source_choices() -> tuple[str, ...]:
    """The allowed values of `clusters[].source`: the names of the metrics source registry (as above)."""
    return tuple(METRICS_SOURCES)


def choices(key: str) -> tuple[str, ...] | None:
    """The allowed values of the text key `key` (written with `clusters[]`), or None when any text goes."""
    if key == "carbon.provider":
        return carbon_provider_choices()
    if key == "clusters[].source":
        return metrics_source_choices()
    return CHOICES.get(key)


# --- numbers -----------------------------------------------------------------------------------------------

def _number_ranges(cls: type, prefix: str = "") -> dict[str, NumberRange]:
    """The NumberRange of every numeric key under the dataclass `cls`, keyed like the error messages' keys with
    `clusters[]` for any cluster index: each declared beside its default (settings_models `ranged`), whole numbers
    for an `int` field. A numeric field declared without one has no entry (a unit test walks the dataclasses)."""
    hints = get_type_hints(cls)
    out: dict[str, NumberRange] = {}
    for f in fields(cls):
        kind, key = hints[f.name], prefix + f.name
        if is_dataclass(kind):
            out.update(_number_ranges(kind, key + "."))
        elif get_origin(kind) is tuple and is_dataclass(get_args(kind)[0]):
            out.update(_number_ranges(get_args(kind)[0], key + "[]."))
        elif RANGE in f.metadata:
            out[key] = f.metadata[RANGE]._replace(integer=int in (kind, *get_args(kind)))
    return out


NUMBER_RANGES: dict[str, NumberRange] = _number_ranges(Settings)


# --- text with a format of its own -------------------------------------------------------------------------

URL_KEYS = ("clusters[].prometheus.url", "clusters[].kubernetes.host", "carbon.base_url", "boavizta.url")
ENV_KEYS = ("clusters[].prometheus.bearer_token_env", "clusters[].prometheus.basic_auth_password_env",
             "carbon.token_env", "dagster.postgres_url_env", "api.decisions_token_env")


def url_problem(value: str) -> str | None:
    allowed = "use an http:// or https:// URL with a host (e.g. http://prometheus:9090)"
    if any(c.isspace() for c in value):
        return allowed + "; spaces are not allowed"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return f"{allowed} ({exc})"
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return allowed
    return None


# URL-valued keys (written with `clusters[]`) and where their credentials go instead: a URL is stored in Dagster's
# run config (the UI shows it) and printed in messages, so user:password@ or ?token= in one is refused
URL_CREDENTIALS_INSTEAD: dict[str, str] = {
    "clusters[].prometheus.url": "put a token in {prefix}.bearer_token_env or {prefix}.bearer_token_file, or a "
                                 "password in {prefix}.basic_auth_password_env or {prefix}.basic_auth_password_file "
                                 "(with the user in {prefix}.basic_auth_username)",
    "clusters[].kubernetes.host": "the Kubernetes API's credentials come from {prefix}.kubeconfig (and "
                                  "{prefix}.context) or {prefix}.in_cluster: true",
    "carbon.base_url": "put the token in the environment variable {prefix}.token_env names",
    "boavizta.url": "the Boavizta API takes no credentials: write the URL without them",
    "lake.root": "give Spark the object store's credentials through the environment (e.g. AWS_ACCESS_KEY_ID and "
                 "AWS_SECRET_ACCESS_KEY)",
    "billing.focus_path": "give kubeledger the object store's credentials through the environment (README, 'Bills "
                          "in object storage')",
    "billing.cur2_path": "give kubeledger the object store's credentials through the environment (README, 'Bills "
                         "in object storage')",
}


def url_credentials_problem(key: str, generic: str, value: str) -> str | None:
    """For a URL-valued key: the one-line refusal of credentials written into the URL (naming the key to use
    instead, without repeating the secret), or None."""
    from pipelines.redaction import redact_url, url_credentials

    instead = URL_CREDENTIALS_INSTEAD.get(generic)
    found = url_credentials(value) if instead and "://" in value else None
    if found == "a user name" and value.lower().startswith(("abfs://", "abfss://")):
        found = None  # abfs[s]://container@account.dfs.core.windows.net/: the container, not a user
    if not found:
        return None
    return (f"{redact_url(value)!r} is not allowed: {found} in a URL would be stored in Dagster's run storage "
            f"and shown in plain text; {instead.format(prefix=key.rsplit('.', 1)[0])}")


def memory_problem(value: str) -> str | None:
    allowed = ("use a DuckDB size: a number and one of KB, MB, GB, TB, KiB, MiB, GiB, TiB (e.g. 4GB, 512MiB), "
               "at least 64MiB, or a percentage of the machine's memory in 1..100 (e.g. 50%)")
    m = MEMORY_RE.fullmatch(value)
    if not m:
        return allowed
    number, unit = float(m.group(1)), m.group(2).lower()
    if unit == "%":
        return None if 1 <= number <= 100 else allowed
    return None if number * MEMORY_UNITS[unit] >= MEMORY_MIN_BYTES else allowed


_VALID_CRONS = {ScheduleSettings.daily_cron}  # known good: spares importing Dagster (~0.7 s) for the default


def cron_problem(value: str) -> str | None:
    allowed = ("use a 5-field cron expression in UTC (minute hour day-of-month month day-of-week, e.g. "
               f"'30 1 * * *') or one of {', '.join(CRON_ALIASES)}")
    if value in _VALID_CRONS:
        return None
    if value.startswith("@"):
        if value not in CRON_ALIASES:
            return allowed
    else:
        parts = [p for p in value.split(" ") if p]
        if len(parts) != 5 or not all(CRON_FIELD_RE.fullmatch(p) for p in parts):
            return allowed
        # fast path for a plain out-of-range number ('61 * * * *') without importing Dagster
        for part, (lo, hi) in zip(parts, CRON_RANGES, strict=True):
            if part.isdigit() and not lo <= int(part) <= hi:
                return allowed
    # the full rules (ranges, names, steps) are Dagster's, which runs the schedule
    from dagster._utils.schedules import is_valid_cron_string

    try:
        valid = is_valid_cron_string(value)
    except Exception:  # noqa: BLE001 - whatever the parser trips on is not a valid cron
        valid = False
    if not valid:
        return allowed
    _VALID_CRONS.add(value)
    return None


# Spark's master URLs (spark-submit --master) and JVM sizes (spark.driver.memory)
SPARK_MASTER_RE = re.compile(r"local(\[([1-9][0-9]{0,3}|\*)\])?|yarn|spark://[A-Za-z0-9.\-]+:[0-9]{1,5}"
                             r"|k8s://https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?")
JVM_SIZE_RE = re.compile(r"([0-9]{1,7})([kmgt])?", re.IGNORECASE)
JVM_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
LAKE_SCHEMES = ("file", "s3a", "gs", "abfss", "hdfs")
SPARK_CONF_KEY_RE = re.compile(r"spark\.[A-Za-z0-9_.\-]{1,250}")
# set by the dedicated keys or by the engine itself (loopback binding, metastore under the state folder)
SPARK_CONF_RESERVED = {"spark.master": "lake.spark.master", "spark.driver.memory": "lake.spark.driver_memory",
                       "spark.sql.warehouse.dir": "the engine (<warehouse folder>/state/spark)"}
# the driver's address: the engine's (127.0.0.1) when the whole cluster is on this machine; with a remote master
# Spark's default (the host's address) or the user's (a pod IP, the interface the executors reach)
SPARK_CONF_LOOPBACK_RESERVED = ("spark.driver.host", "spark.driver.bindAddress")
LOOPBACK_MASTER_RE = re.compile(r"spark://(localhost|127(\.[0-9]{1,3}){3}):[0-9]{1,5}")


def on_this_machine(master: str) -> bool:
    """Local mode, or a standalone master on this machine's loopback (spark://127.0.0.1:7077, spark://localhost:
    7077): the driver, the executors and the files they write share this machine, its loopback and its folders."""
    return master.startswith("local") or bool(LOOPBACK_MASTER_RE.fullmatch(master))


def spark_master_problem(value: str) -> str | None:
    if SPARK_MASTER_RE.fullmatch(value):
        return None
    return "use a Spark master URL: local, local[N], local[*], yarn, spark://host:port or k8s://https://host:port"


def jvm_size_problem(value: str) -> str | None:
    allowed = "use a JVM size: a whole number and k, m, g or t (e.g. 2g, 1536m), at least 512m"
    m = JVM_SIZE_RE.fullmatch(value)
    if not m or int(m.group(1)) * JVM_SIZE_UNITS[(m.group(2) or "").lower()] < 512 * 1024**2:
        return allowed
    return None


def lake_root_problem(value: str) -> str | None:
    if "://" not in value:
        return None if value.strip() == value and value else "use a folder path (no leading or trailing spaces)"
    scheme, _, rest = value.partition("://")
    if scheme.lower() not in LAKE_SCHEMES or not rest or any(c.isspace() for c in value):
        return (f"use a folder or a URI with one of the schemes {', '.join(s + '://' for s in LAKE_SCHEMES)} "
                "(e.g. s3a://bucket/kubeledger), without spaces")
    return None


def start_date_problem(value: str) -> str | None:
    allowed = "use a day as YYYY-MM-DD (UTC), today or earlier, e.g. 2026-01-01"
    try:
        day = date.fromisoformat(value)
    except ValueError:
        return allowed
    if len(value) != 10 or day.year < 2000:
        return allowed
    if day > datetime.now(UTC).date():
        return f"{allowed}; it is in the future"
    return None


def file_problem(path: Path) -> str | None:
    """Why `path` cannot be read as a file ("not found", "is a directory"...), or None when it can."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return "not found"
    except PermissionError:
        return "cannot be read (permission denied)"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a FIFO, socket or device)"
    if not os.access(path, os.R_OK):
        return "cannot be read (permission denied)"
    return None


# --- places kubeledger writes --------------------------------------------------------------------------------

DUCKDB_MAGIC = (8, b"DUCK")  # offset and bytes of DuckDB's file header


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a file"
    return "a device, FIFO or socket"


BILL_URI_SCHEMES = ("s3", "gs", "az", "abfs", "abfss")  # pipelines/sources/objectstore.py SCHEMES


def focus_path_problem(value: str) -> str | None:
    """`billing.focus_path` and `billing.cur2_path`: a local folder, file or glob of bill files (FOCUS or CUR 2.0
    CSV/Parquet), or the same in object storage (pipelines/sources/objectstore.py)."""
    if not value or value != value.strip():
        return "use a non-empty folder, file or glob without leading or trailing spaces"
    if "://" not in value:
        return None
    allowed = ", ".join(f"{s}://" for s in BILL_URI_SCHEMES)
    scheme, _, rest = value.partition("://")
    if scheme.lower() not in BILL_URI_SCHEMES:
        return f"use a local folder, file or glob (e.g. bills/ or bills/*.parquet) or a URI of {allowed}"
    bucket = rest.split("/", 1)[0]
    if not bucket or "?" in value or "#" in value or (":" in bucket and scheme.lower() not in ("abfs", "abfss")):
        return (f"use {scheme}://bucket/prefix/ (a bucket or container, then a prefix or glob), without a query, "
                "a fragment or credentials: they come from the environment (README, 'Bills in object storage')")
    return None


def path_text_problem(value: str, kind: str) -> str | None:
    """A path key's text: not empty, no surrounding spaces, and a file path does not name a folder ('wh/', '.')."""
    if not value or value != value.strip():
        return f"use a non-empty {kind} path without leading or trailing spaces"
    if kind == "file" and (value.endswith(("/", os.sep)) or Path(value).name in ("", ".", "..")):
        return "use a file path (it ends with a folder; add the file name, e.g. warehouse/kubeledger.duckdb)"
    return None


def location_problem(path: Path, kind: str) -> str | None:
    """Why kubeledger could never create or replace `path` ("file": a DuckDB file; "folder"), or None.

    Only what is wrong for every process: a directory where a file is meant (or the reverse), a device, a path
    under a file or device, a file that is not a DuckDB database. Permissions are not checked here: the API reads
    the same settings from a read-only volume (`kubeledger check-config` reports what cannot be written)."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as exc:  # too long a name, a loop of symbolic links...
        return f"cannot be used ({exc.strerror or exc})"
    if st is not None:
        found = _kind(st.st_mode)
        if kind == "folder":
            return None if stat.S_ISDIR(st.st_mode) else f"is {found}, not a folder"
        if not stat.S_ISREG(st.st_mode):
            return f"is {found}, not a file"
        offset, magic = DUCKDB_MAGIC
        try:
            with path.open("rb") as fh:
                head = fh.read(offset + len(magic))
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"
        # shorter: empty, or being created right now by another process (DuckDB writes the header at once)
        if len(head) == offset + len(magic) and head[offset:] != magic:
            return "is a file that is not a DuckDB database (kubeledger would fail to open it, or replace it)"
        return None
    for parent in path.parents:  # missing: the nearest folder that exists must be a folder
        try:
            parent_st = parent.stat()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            return f"cannot be created ({parent}: {exc.strerror or exc})"
        if not stat.S_ISDIR(parent_st.st_mode):
            return f"cannot be created: {parent} is {_kind(parent_st.st_mode)}, not a folder"
        return None
    return None
