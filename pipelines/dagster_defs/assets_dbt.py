"""dbt assets: seeds (reference data) and the daily-partitioned models, one dbt call per run or backfill range.

Nothing is written into the code tree, and nothing grows without bound:

- the manifest Dagster builds the assets from is parsed once per content of the dbt project (its files plus the
  dbt versions: `project_hash`) into `<warehouse folder>/state/dbt/manifest/<hash>/`, with dbt's partial-parse
  file and log; the newest `MANIFESTS_KEPT` such folders are kept (the user's cache folder stands in when no
  warehouse is configured). A manifest prepared at build or install time (`python -m
  pipelines.dagster_defs.assets_dbt` writes `dbt_project/target/manifest.json` and its hash) is used instead
  while the project still has that hash, so a read-only install never parses;
- every dbt call writes its target and log folder to `<warehouse folder>/state/dbt/runs/<asset>/<UTC time>-<run
  id>/` (dagster-dbt's default is a new `dbt_project/target/<asset>-<run>-<uuid>/` per call, never removed);
  after the call only the newest `warehouse.keep_run_folders` (default 3) folders of each asset are kept.
"""


import fcntl
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import AbstractContextManager, suppress
from pathlib import Path

import dagster as dg
import yaml
from dagster_dbt import DbtProject, dbt_assets

from pipelines import DBT_PROJECT_DIR
from pipelines.dagster_defs.dbt_args import (
    DAILY_BUILD_EXCLUDES_UNIT_TESTS,
    daily_build_args,
    dbt_env,
    dbt_vars,
    parse_args,
)
from pipelines.dagster_defs.instance import exclusive_lock, pid_alive
from pipelines.dagster_defs.partitions import daily_partitions
from pipelines.dagster_defs.resources import WRITER_POOL, KubeledgerResource, run_cluster
from pipelines.dagster_defs.translator import KubeledgerDbtTranslator
from pipelines.engines.dbt_dagster import dbt_asset_events
from pipelines.engines.dbt_runner import DbtCall, dbt_cli_args, invoke_dbt
from pipelines.settings import DEFAULT_CONFIG_NAME, Settings, SettingsError, load_settings
from pipelines.warehouse.lookups import LOOKUPS_MODEL

dbt_project = DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR)

PREPARED_HASH_FILE = "kubeledger-manifest.sha256"  # next to a manifest prepared in the project at build time
PARTIAL_PARSE = "partial_parse.msgpack"
MANIFESTS_KEPT = 3
RUN_LOCK = ".kubeledger-dbt-call.lock"
STALE_TMP_S = 3600  # longer than any parse: a folder this old without a live lock holder is left over
PARSE_LOCK = ".kubeledger-parse.lock"  # held by the process parsing into a `.<hash>.<pid>.tmp` folder
_PARSE_TMP_RE = re.compile(r"\.[^.]+\.(\d+)\.tmp")
DAILY_ASSETS = ("dbt_lookups", "dbt_daily")  # the calls with the window's --vars (see _partial_parse_seed)


def dbt_state_dir(warehouse_path: Path) -> Path:
    """`<warehouse folder>/state/dbt`: dbt's manifests and per-run target/log folders."""
    return Path(warehouse_path).absolute().parent / "state" / "dbt"


def _project_files() -> list[Path]:
    """The files dbt reads to parse the project: dbt_project.yml, profiles.yml, packages and every path folder."""
    project_yml = DBT_PROJECT_DIR / "dbt_project.yml"
    config = yaml.safe_load(project_yml.read_text()) or {}
    folders: list[str] = []
    for key, default in (("model-paths", ["models"]), ("seed-paths", ["seeds"]), ("macro-paths", ["macros"]),
                         ("test-paths", ["tests"]), ("analysis-paths", ["analyses"]),
                         ("snapshot-paths", ["snapshots"]), ("docs-paths", [])):
        folders += config.get(key) or default
    files = [DBT_PROJECT_DIR / name for name in ("dbt_project.yml", "profiles.yml", "packages.yml",
                                                 "dependencies.yml", "selectors.yml")]
    files = [f for f in files if f.is_file()]
    for folder in dict.fromkeys(folders):
        root = DBT_PROJECT_DIR / folder
        if root.is_dir():
            files += (p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return sorted(set(files))


def project_hash() -> str:
    """Content hash of the dbt project as dbt parses it (files, where it lives, dbt versions)."""
    digest = hashlib.sha256(str(DBT_PROJECT_DIR).encode() + b"\0")
    for package in ("dbt-core", "dbt-duckdb"):
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "?"
        digest.update(f"{package}=={version}\0".encode())
    for path in _project_files():
        digest.update(os.path.relpath(path, DBT_PROJECT_DIR).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def manifest_warehouse() -> Path | None:
    """The warehouse whose state folder holds the parsed manifests: $KUBELEDGER_WAREHOUSE (the CLI sets it), else
    the one the configuration file names ($KUBELEDGER_CONFIG or ./kubeledger.yaml, as `dagster dev` loads it).
    None without either: then the user's cache folder holds them (a bare import never creates a warehouse
    folder in the working directory)."""
    warehouse = os.environ.get("KUBELEDGER_WAREHOUSE")
    if warehouse:
        return Path(warehouse).absolute()
    if not (os.environ.get("KUBELEDGER_CONFIG") or (Path.cwd() / DEFAULT_CONFIG_NAME).is_file()):
        return None
    try:
        return load_settings().warehouse_path
    except (SettingsError, OSError):
        return None  # the Definitions report the configuration problem


def manifest_root(warehouse: Path | None) -> Path:
    if warehouse is not None:
        return dbt_state_dir(warehouse) / "manifest"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kubeledger" / "dbt-manifest"


def _parse(target: Path, seed_from: Path | None = None, warehouse: Path | None = None) -> None:
    """`dbt parse` into `target`, reusing the partial-parse file of `seed_from` (dbt re-reads what changed)."""
    target.mkdir(parents=True, exist_ok=True)
    if seed_from is not None and (seed_from / PARTIAL_PARSE).is_file():
        shutil.copyfile(seed_from / PARTIAL_PARSE, target / PARTIAL_PARSE)
    env = {**os.environ, "DO_NOT_TRACK": "1", "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    if warehouse is not None:  # the profile names the warehouse (its file name is the manifest's database)
        env["KUBELEDGER_WAREHOUSE"] = str(warehouse)
    # dbt in this venv's Python, with the in-process calls' profile comparison (engines/dbt_runner.py: the
    # partial-parse file left here then serves them); cwd outside the project: nothing relative to it lands in the
    # code tree
    subprocess.run([sys.executable, "-m", "pipelines.engines.dbt_runner",
                    *parse_args(str(DBT_PROJECT_DIR), str(target))], check=True, cwd=target, env=env)


def _lock_held(lock_file: Path) -> bool:
    """Whether a process holds `lock_file`'s flock (the kernel releases it however its holder dies)."""
    try:
        fd = os.open(lock_file, os.O_RDWR)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: count it as held
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases the probe lock
    return False


def _parse_in_progress(folder: Path, now: float) -> bool:
    """Whether a live process may still parse into `folder`: it holds the folder's lock (seen across containers,
    whatever their pids), or the pid in the name is alive and the folder is younger than any parse."""
    if _lock_held(folder / PARSE_LOCK):
        return True
    m = _PARSE_TMP_RE.fullmatch(folder.name)
    try:
        young = now - folder.stat().st_mtime <= STALE_TMP_S
    except OSError:
        return False  # already gone
    return young and (m is None or pid_alive(int(m.group(1))))


def remove_orphaned_parses(root: Path) -> list[Path]:
    """Remove the `.<hash>.<pid>.tmp` folders of parses whose process is gone (a run killed during setup leaves one,
    3 MB, that no later run renames into place); a live parse's folder is kept. Returns the removed folders."""
    if not root.is_dir():
        return []
    now, removed = time.time(), []
    for p in root.iterdir():
        if p.name.startswith(".") and p.is_dir() and not _parse_in_progress(p, now):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def _prune_manifests(root: Path, current: Path) -> None:
    remove_orphaned_parses(root)
    folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and p != current]
    folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in folders[MANIFESTS_KEPT - 1:]:
        shutil.rmtree(old, ignore_errors=True)


def ensure_manifest() -> Path:
    """The manifest for the project as it is now: the one prepared in the project at build time if its hash
    matches, else the one under the state folder for this hash (parsed now when missing), so the assets Dagster
    loads always match the nodes dbt will report."""
    digest = project_hash()
    prepared = dbt_project.manifest_path
    stamp = prepared.parent / PREPARED_HASH_FILE
    if prepared.is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
        return prepared
    warehouse = manifest_warehouse()
    root = manifest_root(warehouse)
    remove_orphaned_parses(root)  # before parsing: the space a killed run left is freed at the next start
    folder = root / digest
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        root.mkdir(parents=True, exist_ok=True)
        previous = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
        seed = max(previous, key=lambda p: p.stat().st_mtime) if previous else None
        tmp = root / f".{digest}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            tmp.mkdir()
            with exclusive_lock(tmp / PARSE_LOCK):  # held until renamed: remove_orphaned_parses keeps it
                _parse(tmp, seed, warehouse)
                try:
                    os.rename(tmp, folder)  # whole folder at once: a concurrent loader sees all of it or nothing
                except OSError:
                    if not manifest.is_file():
                        raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # ours lost the race, or the parse failed
    os.utime(folder)  # the newest used manifests are the ones kept
    _prune_manifests(root, folder)
    return manifest


def prepare_manifest_in_project() -> Path:
    """Build/install time: parse into dbt_project/target and record the project's hash next to the manifest."""
    target = dbt_project.manifest_path.parent
    _parse(target)
    (target / PREPARED_HASH_FILE).write_text(project_hash() + "\n")
    return dbt_project.manifest_path


# --- per-call target/log folders ----------------------------------------------------------------------------

def run_folders_root(settings: Settings, asset_name: str) -> Path:
    return dbt_state_dir(settings.warehouse_path) / "runs" / asset_name


def _in_use(folder: Path) -> AbstractContextManager[None]:
    """Hold the folder's lock while dbt writes there: a prune in another process leaves it alone."""
    return exclusive_lock(folder / RUN_LOCK)


def prune_run_folders(root: Path, keep: int) -> list[Path]:
    """Remove all but the newest `keep` call folders under `root` (names start with the UTC time), skipping any a
    dbt call still holds; returns the removed folders."""
    if not root.is_dir():
        return []
    folders = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.name, reverse=True)
    removed = []
    for old in folders[keep:]:
        try:
            fh = open(old / RUN_LOCK, "a+")
        except OSError:
            continue  # already gone
        with fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old)
    return removed


def kept_parse_file(settings: Settings) -> Path:
    """The DuckDB engine's partial-parse file of this project hash, from the first in-process parse of a process
    on this warehouse (engines/dbt_runner.py: its profile comparison leaves the file's path out), so the next
    process, or a copy of the warehouse folder elsewhere, starts from it instead of the manifest's."""
    return dbt_state_dir(settings.warehouse_path) / "parse" / f"{MANIFEST_HASH}.msgpack"


def keep_parse_file(fresh: Path, kept: Path) -> None:
    """Replace `kept` with `fresh` at once (readers see the old or the new file); other hashes' files go."""
    if not fresh.is_file():
        return
    kept.parent.mkdir(parents=True, exist_ok=True)
    tmp = kept.with_name(f".{kept.stem}.{os.getpid()}.tmp")
    shutil.copyfile(fresh, tmp)
    os.replace(tmp, kept)
    for other in kept.parent.iterdir():
        m = _PARSE_TMP_RE.fullmatch(other.name)
        if other != kept and not (m and pid_alive(int(m.group(1)))):  # not another process's file in writing
            other.unlink(missing_ok=True)


def _partial_parse_seed(settings: Settings) -> Path | None:
    """The partial-parse file a dbt call starts from: the newest one a daily call wrote, else the manifest's.

    dbt throws a partial-parse file away when the `--vars` differ from the ones it was written with, and every
    daily call passes its window as vars; the manifest's file (parsed without vars) never matched, so every call
    parsed the whole project. The lookups and daily calls of one run, and a re-run of the same days, share their
    vars: the newest call's file lets the next one skip the parse. dbt checks the file (project files, vars,
    profile, versions) and parses afresh when anything differs, so an unsuitable file costs nothing extra."""
    candidates: list[tuple[float, Path]] = []
    for asset in DAILY_ASSETS:
        root = run_folders_root(settings, asset)
        if root.is_dir():
            for folder in root.iterdir():
                with suppress(OSError):
                    f = folder / PARTIAL_PARSE
                    candidates.append((f.stat().st_mtime, f))
    if candidates:
        return max(candidates)[1]
    partial = MANIFEST.parent / PARTIAL_PARSE
    return partial if partial.is_file() else None


def _dbt_call(context: dg.AssetExecutionContext, args: list[str], settings: Settings,
              asset_name: str):
    root = run_folders_root(settings, asset_name)
    folder = root / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{context.run_id[:8]}"
    folder.mkdir(parents=True, exist_ok=True)
    # DuckDB: the project parsed once per process, without vars (dbt_runner.py), starts from the manifest's own
    # partial-parse file; Spark parses per call (its configs depend on the lake), from the newest daily call's
    kept = kept_parse_file(settings)
    if settings.engine == "duckdb":
        partial = kept if kept.is_file() else MANIFEST.parent / PARTIAL_PARSE
    else:
        partial = _partial_parse_seed(settings)
    if partial is not None and partial.is_file():  # dbt parses only what changed (dagster-dbt would copy target/'s)
        shutil.copyfile(partial, folder / PARTIAL_PARSE)
    try:
        with _in_use(folder):
            if settings.engine == "spark":  # dbt-spark in this process over the lake (pipelines/engines)
                from pipelines.engines.spark_dagster import spark_asset_events

                yield from spark_asset_events(context, settings, asset_name, args, folder, MANIFEST, TRANSLATOR,
                                              dbt_project, run_cluster(context))
            else:  # dbt-duckdb in this process on the warehouse file: no dbt start-up per call (dbt_runner.py)
                def build(dbt_args: list[str], project_dir: Path | None, env: dict[str, str]) -> DbtCall:
                    call = invoke_dbt(dbt_cli_args(dbt_args, folder, project_dir), {**dbt_env(settings), **env},
                                      parsed_in=(str(MANIFEST), folder))
                    if call.parsed:
                        keep_parse_file(folder / PARTIAL_PARSE, kept)
                    return call

                yield from dbt_asset_events(context, args, folder, MANIFEST, TRANSLATOR, dbt_project, build,
                                            "DuckDB")
    finally:
        prune_run_folders(root, settings.warehouse.keep_run_folders)


MANIFEST = prepare_manifest_in_project() if __name__ == "__main__" else ensure_manifest()
MANIFEST_HASH = project_hash()  # names the kept partial-parse file (kept_parse_file)
TRANSLATOR = KubeledgerDbtTranslator()


@dbt_assets(manifest=MANIFEST, select="resource_type:seed", name="dbt_reference", project=dbt_project,
            dagster_dbt_translator=TRANSLATOR, pool=WRITER_POOL)
def dbt_reference_assets(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource):
    """Reference seeds (prices, power profiles, zones, PUE, intensity defaults)."""
    yield from _dbt_call(context, ["seed"], kubeledger.settings, "dbt_reference")


class DailyBuildConfig(dg.Config):
    # dbt unit tests are CI's and development's (tests/integration/test_dbt_unit_tests.py); False runs them too
    exclude_unit_tests: bool = DAILY_BUILD_EXCLUDES_UNIT_TESTS


def _daily_build(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource,
                 config: DailyBuildConfig, asset_name: str):
    """`dbt build` of the run's partition window (a range in backfills) for the run's cluster selection."""
    window = context.partition_time_window  # never partition_key: a backfill range has no single key
    variables = dbt_vars(kubeledger.settings, window.start, window.end, cluster=run_cluster(context))
    args = daily_build_args(variables, exclude_unit_tests=config.exclude_unit_tests)
    yield from _dbt_call(context, args, kubeledger.settings, asset_name)


# dbt → Python → dbt: the lookups (and the models they derive from) are built first; the carbon-intensity and
# Boavizta extracts read them; the daily build then builds everything else of the window.
LOOKUPS_SELECT = f"+{LOOKUPS_MODEL}"


@dbt_assets(manifest=MANIFEST, select=LOOKUPS_SELECT, exclude="resource_type:seed", name="dbt_lookups",
            project=dbt_project, partitions_def=daily_partitions, backfill_policy=dg.BackfillPolicy.single_run(),
            dagster_dbt_translator=TRANSLATOR, pool=WRITER_POOL)
def dbt_lookups_assets(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource,
                       config: DailyBuildConfig):
    """The enriched nodes of the window and what they need from outside sources (carbon zones, instance keys)."""
    yield from _daily_build(context, kubeledger, config, "dbt_lookups")


@dbt_assets(manifest=MANIFEST, exclude=f"resource_type:seed {LOOKUPS_SELECT}", name="dbt_daily",
            project=dbt_project, partitions_def=daily_partitions, backfill_policy=dg.BackfillPolicy.single_run(),
            dagster_dbt_translator=TRANSLATOR, pool=WRITER_POOL)
def dbt_daily_assets(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource,
                     config: DailyBuildConfig):
    """staging → intermediate → marts for the days of the run's partition window, after the lookups."""
    yield from _daily_build(context, kubeledger, config, "dbt_daily")


if __name__ == "__main__":
    print(f"prepared {MANIFEST} for project hash {project_hash()}")
