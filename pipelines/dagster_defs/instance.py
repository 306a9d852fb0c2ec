"""The local Dagster instance the CLI runs on: created under a file lock, checked, repaired on request.

Two `kubeledger materialize` started at the same instant on a new warehouse used to create Dagster's SQLite
storages together, each stamping its own `alembic_version` row; every later start then failed with "more than one
head". Creation, migration and the release of orphaned runs now happen under an exclusive lock on
`<DAGSTER_HOME>/.kubeledger-instance.lock`, and a storage found inconsistent is reported with the repair command
(`kubeledger repair-instance`).

Storage: SQLite files under DAGSTER_HOME by default; PostgreSQL in production (`dagster.storage: postgres`, the
URL in the environment variable `dagster.postgres_url_env` names). The instance file is copied from
`dagster_home/dagster.yaml` or `dagster_home/dagster.postgres.yaml`. After a good publish, runs are compacted after
a week and deleted past `warehouse.raw_retention_days` (`prune_runs`, run_retention.py), so the storage stays
bounded.
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from pipelines import PROJECT_ROOT
from pipelines.dagster_defs.run_retention import PRUNE_BATCH as PRUNE_BATCH  # re-exported
from pipelines.dagster_defs.run_retention import (
    prune_runs as prune_runs,  # re-exported (run retention lives there)
)
from pipelines.redaction import remember
from pipelines.settings import Settings

RUN_PID_TAG = "kubeledger/pid"
RUN_HOST_TAG = "kubeledger/host"
LOCK_NAME = ".kubeledger-instance.lock"


class InstanceError(RuntimeError):
    """The Dagster instance cannot be used as it is; the message says how to repair it."""


def dagster_home(settings: Settings) -> Path:
    return Path(os.environ.get("DAGSTER_HOME") or settings.warehouse_path.parent / "dagster")


TEMPLATES = {"sqlite": "dagster.yaml", "postgres": "dagster.postgres.yaml"}
PG_URL_ENV_DEFAULT = "KUBELEDGER_DAGSTER_PG_URL"  # the name written in dagster.postgres.yaml
_PG_URL_ENV_RE = re.compile(r"(postgres_url:\s*\n\s*env:\s*)([A-Za-z_][A-Za-z0-9_]*)")


def _template_text(storage: str, url_env: str = PG_URL_ENV_DEFAULT) -> str:
    text = (PROJECT_ROOT / "dagster_home" / TEMPLATES[storage]).read_text()
    return _PG_URL_ENV_RE.sub(lambda m: m.group(1) + url_env, text)


def configured_storage(text: str) -> str:
    """`postgres` or `sqlite`: the storage a dagster.yaml configures (Dagster's default is SQLite)."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return "sqlite"
    if not isinstance(data, dict):
        return "sqlite"
    storage = data.get("storage")
    if isinstance(storage, dict) and "postgres" in storage:
        return "postgres"
    legacy = [data.get(k) for k in ("run_storage", "event_log_storage", "schedule_storage")]
    if any(isinstance(v, dict) and "postgres" in str(v.get("module", "")) for v in legacy):
        return "postgres"
    return "sqlite"


def postgres_url_problem(settings: Settings) -> str | None:
    """Why the configured PostgreSQL URL cannot be used (never quotes it: it may hold a password), or None."""
    name = settings.dagster.postgres_url_env
    value = os.environ.get(name, "").strip()
    example = "postgresql://user:password@host:5432/dagster"
    if not value:
        return (f"dagster.storage is postgres but the environment variable {name} (dagster.postgres_url_env) is "
                f"not set; set it to a URL like {example}")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return f"the environment variable {name} is not a valid URL ({exc}); use a URL like {example}"
    if parts.scheme.split("+")[0] not in ("postgresql", "postgres") or not parts.hostname \
            or not parts.path.strip("/"):
        return (f"the environment variable {name} must hold a postgresql:// URL with a host and a database name, "
                f"like {example}")
    return None


def _use_psycopg2(name: str) -> None:
    """A URL without a driver (postgresql://, postgres://) gets psycopg2, the driver dagster-postgres installs and
    is tested with (SQLAlchemy 2.1 would pick psycopg 3, not installed). Set for this process and its children
    (`kubeledger dev`'s Dagster processes)."""
    value = os.environ[name].strip()
    remember(value)  # the whole URL and its password: an error that quotes either is redacted
    remember(urlsplit(value).password)
    scheme, sep, rest = value.partition("://")
    if sep and scheme in ("postgresql", "postgres"):
        os.environ[name] = f"postgresql+psycopg2://{rest}"


def prepare_dagster_home(settings: Settings) -> Path:
    """Run storage under the warehouse folder (SQLite) or in PostgreSQL, with the repo's instance defaults
    (telemetry off, one writer).

    `<DAGSTER_HOME>/dagster.yaml` is written from the template `dagster.storage` selects when it is missing or is
    an unedited copy of a shipped template (so switching storage takes effect); an edited file is kept, unless it
    configures the other storage, which is an error naming the file."""
    home = dagster_home(settings)
    home.mkdir(parents=True, exist_ok=True)
    storage = settings.dagster.storage
    if storage == "postgres":
        problem = postgres_url_problem(settings)
        if problem:
            raise InstanceError(problem)
        _use_psycopg2(settings.dagster.postgres_url_env)
    wanted = _template_text(storage, settings.dagster.postgres_url_env)
    target = home / "dagster.yaml"
    try:
        current: str | None = target.read_text()
    except FileNotFoundError:
        current = None
    shipped = {_template_text(kind) for kind in TEMPLATES}
    normalised = _PG_URL_ENV_RE.sub(lambda m: m.group(1) + PG_URL_ENV_DEFAULT, current or "")
    if current != wanted and (current is None or normalised in shipped):
        tmp = home / f".dagster.yaml.{os.getpid()}.tmp"
        tmp.write_text(wanted)
        os.replace(tmp, target)  # never a half-written file for a concurrent reader
    elif current != wanted and configured_storage(current or "") != storage:
        raise InstanceError(f"{target} configures {configured_storage(current or '')} storage but dagster.storage is "
                            f"{storage}; move the file aside (kubeledger writes the {TEMPLATES[storage]} template "
                            "there) or edit its storage section")
    os.environ["DAGSTER_HOME"] = str(home)
    os.environ.setdefault("KUBELEDGER_DAGSTER_STORAGE", str(home / "storage"))
    os.environ.setdefault("DO_NOT_TRACK", "1")
    return home


@contextmanager
def exclusive_lock(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive flock on `lock_file` (created if missing) for the block; waits for another holder."""
    with open(lock_file, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def instance_lock(home: Path) -> Iterator[None]:
    home.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(home / LOCK_NAME):
        yield


def storage_problems(home: Path) -> list[str]:
    """SQLite storages whose alembic version table does not hold exactly one version (none on PostgreSQL)."""
    problems: list[str] = []
    yaml_file = home / "dagster.yaml"
    if yaml_file.exists() and configured_storage(yaml_file.read_text()) == "postgres":
        return problems  # old SQLite files left from before a switch are not used
    for db in sorted(home.rglob("*.db")):
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
            try:
                rows = con.execute("SELECT version_num FROM alembic_version").fetchall()
            finally:
                con.close()
        except sqlite3.Error:
            continue  # no version table (yet): Dagster creates it
        if len(rows) > 1:
            problems.append(f"{db}: {len(rows)} alembic_version rows {sorted(r[0] for r in rows)}")
    return problems


def alembic_head() -> str:
    """The schema version this Dagster writes (its alembic scripts' head; one script folder for all storages)."""
    from alembic.script import ScriptDirectory
    from dagster._core.storage.schedules.sqlite import sqlite_schedule_storage
    from dagster._core.storage.sql import get_alembic_config

    return str(ScriptDirectory.from_config(get_alembic_config(sqlite_schedule_storage.__file__))
               .as_revision_number("head"))


def repair_instance(home: Path, log: Callable[[str], Any] = print) -> int:
    """Keep only the current head in every alembic_version table that holds several versions (what two
    processes creating a storage together leave: one stamps head, the other an older revision). Returns the number
    of storages repaired; one whose versions do not include the head is reported, not touched."""
    head = alembic_head()
    repaired = 0
    with instance_lock(home):
        for db in sorted(home.rglob("*.db")):
            con = sqlite3.connect(str(db), timeout=30)
            try:
                try:
                    versions = [r[0] for r in con.execute("SELECT version_num FROM alembic_version").fetchall()]
                except sqlite3.Error:
                    continue
                if len(versions) <= 1:
                    continue
                if head not in versions:
                    log(f"  {db}: versions {sorted(versions)} do not include this Dagster's head {head}; move the "
                        "file aside to let Dagster recreate it (the run history in it is lost)")
                    continue
                with con:
                    con.execute("DELETE FROM alembic_version WHERE version_num <> ?", [head])
                repaired += 1
                log(f"  {db}: kept the head version {head} (removed {len(versions) - 1} other row(s))")
            finally:
                con.close()
    return repaired


def open_instance(settings: Settings, log: Callable[[str], Any] = print) -> Any:
    """The Dagster instance, created or migrated under the lock, with runs of dead CLI processes released."""
    import dagster as dg

    home = prepare_dagster_home(settings)
    with instance_lock(home):
        problems = storage_problems(home)
        if problems:
            raise InstanceError("Dagster's instance storage is inconsistent: " + "; ".join(problems)
                                + ". Repair it with: kubeledger repair-instance")
        try:
            instance = dg.DagsterInstance.get()
            # touch every storage now, so any creation or migration happens while we hold the lock
            instance.get_runs(limit=1)
            instance.all_instigator_state()
            instance.event_log_storage.get_concurrency_keys()
        except Exception as exc:
            if settings.dagster.storage == "postgres":
                raise InstanceError(f"Dagster's PostgreSQL storage (${settings.dagster.postgres_url_env}) cannot be "
                                    f"used: {type(exc).__name__}: {' '.join(str(exc).split())[:400]}") from exc
            if "more than one head" in str(exc) or "alembic" in str(exc).lower():
                raise InstanceError(f"Dagster's instance storage under {home} is inconsistent ({exc}). "
                                    "Repair it with: kubeledger repair-instance") from exc
            raise
        release_orphaned_runs(instance, log)
    return instance


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def release_orphaned_runs(instance, log=print) -> list[str]:
    """Fail the runs of `kubeledger` processes that are gone and free their pool slots.

    A CLI run killed mid-way (SIGKILL, OOM killer, reboot) stays STARTED in the run storage and keeps its
    `duckdb_writer` pool slot; with no daemon to notice, every later run waits for that slot forever. Runs this CLI
    started on this host (tagged with its pid) whose process no longer exists are marked failed and their slots
    freed, as are the slots still held by any run that has already finished (or no longer exists). Runs of live
    processes and runs launched by `dagster dev` (no pid tag) are left alone."""
    import dagster as dg
    from dagster._core.storage.dagster_run import FINISHED_STATUSES

    released: list[str] = []
    in_progress = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
                   dg.DagsterRunStatus.CANCELING]
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=in_progress)):
        pid, host = run.tags.get(RUN_PID_TAG), run.tags.get(RUN_HOST_TAG)
        if not pid or not pid.isdigit() or host != socket.gethostname() or pid_alive(int(pid)):
            continue
        instance.report_run_failed(run, f"kubeledger: the process that ran this run (pid {pid}) is gone; "
                                        "marked failed so its duckdb_writer slot is freed")
        released.append(run.run_id)
    storage = instance.event_log_storage
    if storage.supports_global_concurrency_limits:
        holders = set(released) | set(storage.get_concurrency_run_ids())
        for key in storage.get_concurrency_keys():
            holders.update(slot.run_id for slot in storage.get_concurrency_info(key).claimed_slots)
        runs = instance.get_runs(filters=dg.RunsFilter(run_ids=list(holders))) if holders else []
        live = {r.run_id for r in runs if r.status not in FINISHED_STATUSES}
        for run_id in sorted(holders - live):  # finished, or deleted from the run storage
            storage.free_concurrency_slots_for_run(run_id)
    if released:
        log(f"  released {len(released)} run(s) left by a killed kubeledger process: {', '.join(released)}")
    return released
