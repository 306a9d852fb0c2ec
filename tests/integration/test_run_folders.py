"""Nothing grows without bound and nothing is written into the code tree.

dbt's target and log folders live under `<warehouse folder>/state/dbt/runs/<asset>/`, one per dbt call, and only
the newest `warehouse.keep_run_folders` of each asset are kept; the manifest Dagster loads is parsed under
`state/dbt/manifest/<project hash>/`. Dagster's run storage is pruned past `warehouse.raw_retention_days`, except
the runs that hold a day's latest build.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipelines import DBT_PROJECT_DIR, PROJECT_ROOT
from pipelines.settings import SettingsError, load_settings
from tests.fixtures.pipeline_workdir import CONFIG, D1, cli_args, cli_env, group_alive, run_cli, write_config

pytestmark = pytest.mark.integration

KEEP = 1
RUNS = KEEP + 1  # the first run past KEEP prunes (KEEP 1: the second): each later run would only repeat it
SMALL_CONFIG = (CONFIG.replace("demo: {nodes: 6, pods_per_node: 4}", "demo: {nodes: 3, pods_per_node: 2}")
                .replace("  parquet_path: wh/parquet\n", f"  parquet_path: wh/parquet\n  keep_run_folders: {KEEP}\n"))


# --- fast: the pruning functions ---------------------------------------------------------------------------

def test_prune_run_folders_keeps_the_newest_and_those_in_use(tmp_path: Path, monkeypatch):
    # importing the assets loads the manifest: parsed under this warehouse's state folder if not loaded yet
    monkeypatch.setenv("KUBELEDGER_WAREHOUSE", str(tmp_path / "wh" / "kubeledger.duckdb"))
    from pipelines.dagster_defs.assets_dbt import RUN_LOCK, prune_run_folders

    tmp_path = tmp_path / "runs"
    tmp_path.mkdir()

    names = [f"2026030{d}T010000Z-run{d}" for d in range(1, 7)]
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "dbt.log").write_text("x" * 100)
    with open(tmp_path / names[0] / RUN_LOCK, "a+") as busy:  # the oldest is still being written by a dbt call
        fcntl.flock(busy, fcntl.LOCK_EX)
        removed = prune_run_folders(tmp_path, 2)
    assert sorted(p.name for p in removed) == names[1:4]
    assert sorted(p.name for p in tmp_path.iterdir()) == [names[0], *names[4:]]
    prune_run_folders(tmp_path, 0)
    assert list(tmp_path.iterdir()) == []
    assert prune_run_folders(tmp_path / "missing", 3) == []


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()  # reaped: no process has this pid now
    return proc.pid


def test_parse_folders_of_killed_processes_are_removed_and_live_ones_kept(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("KUBELEDGER_WAREHOUSE", str(tmp_path / "wh" / "kubeledger.duckdb"))
    from pipelines.dagster_defs.assets_dbt import PARSE_LOCK, STALE_TMP_S, remove_orphaned_parses

    root = tmp_path / "manifest"
    digest = "0123abcd"
    dead, live = _dead_pid(), os.getpid()
    folders = {name: root / name for name in (
        f".{digest}.{dead}.tmp",  # killed during setup: removed
        f".{digest}.{dead}.tmp-locked",  # renamed below: a parse in another container (pid not ours) holding its lock
        f".{digest}.{live}.tmp",  # a live run's parse, before it took its lock: kept
        f".{digest}.1.tmp",  # pid 1 is alive, but the folder is older than any parse (a reused pid): removed
        digest,  # a manifest: never touched here
    )}
    for folder in folders.values():
        folder.mkdir(parents=True)
        (folder / "partial_parse.msgpack").write_bytes(b"x" * 1000)
    locked = root / f".{digest}.{_dead_pid()}.tmp"
    folders[f".{digest}.{dead}.tmp-locked"].rename(locked)
    old = time.time() - STALE_TMP_S - 60
    os.utime(root / f".{digest}.1.tmp", (old, old))
    with open(locked / PARSE_LOCK, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        removed = remove_orphaned_parses(root)
    assert sorted(p.name for p in removed) == sorted([f".{digest}.{dead}.tmp", f".{digest}.1.tmp"])
    assert sorted(p.name for p in root.iterdir()) == sorted([locked.name, f".{digest}.{live}.tmp", digest])
    (locked / PARSE_LOCK).touch()  # its holder is gone now: the lock is free, the pid dead
    assert remove_orphaned_parses(root) == [locked]
    assert remove_orphaned_parses(tmp_path / "missing") == []


def test_keep_run_folders_is_validated(tmp_path: Path):
    cfg = tmp_path / "kubeledger.yaml"
    assert load_settings(write_config(tmp_path)).warehouse.keep_run_folders == 3
    for bad in ("101", "-1", "2.5", "yes"):
        cfg.write_text(f"warehouse:\n  keep_run_folders: {bad}\n")
        with pytest.raises(SettingsError) as err:
            load_settings(cfg)
        assert str(err.value).startswith(f"{cfg}: warehouse.keep_run_folders: ") and "0..100" in str(err.value)
        assert "\n" not in str(err.value)


def test_prune_runs_deletes_old_runs_but_never_a_days_latest_build(tmp_path: Path, monkeypatch):
    import dagster as dg

    from pipelines.dagster_defs.instance import prune_runs

    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    day = dg.DailyPartitionsDefinition(start_date="2026-01-01")
    hour = dg.HourlyPartitionsDefinition(start_date="2026-01-01-00:00")

    @dg.asset(partitions_def=day)
    def mart():
        return 1

    @dg.asset(partitions_def=hour)
    def raw():
        return 1

    @dg.asset
    def broken():
        raise RuntimeError("fails on purpose")

    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.get() as instance:
        quiet = {"instance": instance, "raise_on_error": False}
        first = dg.materialize([mart], partition_key="2026-01-02", **quiet).run_id
        rebuild = dg.materialize([mart], partition_key="2026-01-02", **quiet).run_id
        extract = dg.materialize([raw], partition_key="2026-01-02-05:00", **quiet).run_id
        failed = dg.materialize([broken], **quiet).run_id
        other_day = dg.materialize([mart], partition_key="2026-01-03", **quiet).run_id
        shards = tmp_path / "history" / "runs"
        assert (shards / f"{first}.db").exists()

        assert prune_runs(instance, 1) == []  # nothing is older than a day
        later = datetime.now(UTC) + timedelta(days=2)
        assert prune_runs(instance, 1, now=later, limit=1) == [first]  # bounded, oldest first
        assert prune_runs(instance, 1, now=later) == [extract, failed]
        assert [r.run_id for r in instance.get_runs()] == [other_day, rebuild]  # each holds a day's latest build
        assert instance.get_materialized_partitions(mart.key) == {"2026-01-02", "2026-01-03"}
        assert not (shards / f"{first}.db").exists() and not (shards / f"{failed}.db").exists()


# --- slow: KEEP + 1 real materialisations-----------------------------------------------------------------------

def _tracked(folder: Path) -> set[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--", str(folder)], cwd=PROJECT_ROOT, capture_output=True,
                         text=True, check=False)
    return {str(PROJECT_ROOT / p) for p in out.stdout.split("\0") if p} if out.returncode == 0 else set()


def code_tree_listing() -> dict[str, tuple[int, int] | None]:
    """What a run could leave in the code tree: every file or folder under dbt_project/ that git does not track
    (target/, logs/, .user.yml, dbt_packages/...) with its size and mtime, and the repository root's entries.
    Bytecode caches are left out (Python writes them, and other test sessions may, at any time)."""
    tracked = _tracked(DBT_PROJECT_DIR)
    out: dict[str, tuple[int, int] | None] = {}
    for path in DBT_PROJECT_DIR.rglob("*"):
        if "__pycache__" in path.parts or str(path) in tracked:
            continue
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        out[str(path)] = None if path.is_dir() else (st.st_size, st.st_mtime_ns)
    for entry in PROJECT_ROOT.iterdir():
        if entry.name not in (".git", ".pytest_cache", ".ruff_cache", ".hypothesis", "__pycache__"):
            out.setdefault(str(entry), None)
    return out


def disk_use(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


@pytest.mark.slow
def test_run_folders_stay_bounded_and_nothing_lands_in_the_code_tree(tmp_path: Path):
    workdir = tmp_path / "work"
    write_config(workdir).write_text(SMALL_CONFIG)
    state = workdir / "wh" / "state" / "dbt"
    before = code_tree_listing()
    sizes, counts, took = [], [], []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        run_cli(workdir, "materialize", "--date", D1.isoformat())
        took.append(round(time.perf_counter() - t0, 1))
        sizes.append(disk_use(state))
        counts.append({a: len(list((state / "runs" / a).iterdir())) for a in ("dbt_reference", "dbt_daily")})
    print(f"\n{RUNS} materialisations took {took} s; state/dbt bytes after each: {sizes}; folders: {counts}")

    assert all(1 <= n <= KEEP for c in counts for n in c.values()), counts
    # the daily build runs every time and keeps KEEP folders; the reference job runs once (its inputs never change
    # here, pipelines/reference_inputs.py), so it keeps one
    assert all(c == {"dbt_reference": 1, "dbt_daily": KEEP} for c in counts[KEEP - 1:]), counts
    # the same day rebuilt: once KEEP folders exist, every later run replaces one; a few % for logs that differ
    steady = sizes[KEEP - 1]
    assert all(size <= steady * 1.05 for size in sizes[KEEP:]), sizes
    for folder in (state / "runs" / "dbt_daily").iterdir():
        assert (folder / "run_results.json").is_file() and (folder / "dbt.log").is_file()  # target and logs
    assert len(list((state / "manifest").iterdir())) == 1  # parsed once for this project content
    kept = list((state / "parse").iterdir())  # the in-process parse's partial-parse file: one, for this content
    assert len(kept) == 1 and kept[0].suffix == ".msgpack", kept

    after = code_tree_listing()
    added = sorted(set(after) - set(before))
    changed = sorted(p for p in set(after) & set(before) if after[p] != before[p])
    assert not added and not changed, f"written into the code tree: added {added[:20]}, changed {changed[:20]}"


def test_a_run_killed_while_parsing_leaves_a_folder_the_next_run_removes(tmp_path: Path):
    """SIGKILL of a real run's process group during setup, while its `.<hash>.<pid>.tmp` parse folder exists: the
    next run removes it at its start, and keeps the folder of a live process."""
    if (DBT_PROJECT_DIR / "target" / "kubeledger-manifest.sha256").is_file():
        pytest.skip("a manifest prepared in the project is used: no run parses")
    workdir = tmp_path / "work"
    write_config(workdir).write_text(SMALL_CONFIG)
    manifests = workdir / "wh" / "state" / "dbt" / "manifest"

    def parse_folders() -> list[Path]:
        return sorted(manifests.glob(".*.tmp")) if manifests.is_dir() else []

    def start() -> subprocess.Popen:
        return subprocess.Popen(cli_args(workdir, "materialize", "--date", D1.isoformat()), cwd=workdir,
                                env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)

    def kill(proc: subprocess.Popen) -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)

    def wait_for(condition, what: str, proc: subprocess.Popen, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{what}: not seen (run exit code {proc.poll()})")
            time.sleep(0.05)

    first = start()
    try:
        wait_for(lambda: any(f.name.endswith(f".{first.pid}.tmp") for f in parse_folders()), "the first run's parse",
                 first)
    finally:
        kill(first)
    orphan = next(manifests.glob(f".*.{first.pid}.tmp"))  # left behind: nothing of that run is alive
    live = manifests / f".{orphan.name.split('.')[1]}.{os.getpid()}.tmp"  # this test's process: alive
    live.mkdir()

    second = start()
    try:
        wait_for(lambda: not orphan.exists(), "the orphaned parse folder removed by the next run", second)
        assert live.is_dir()  # a live process's folder is never removed
    finally:
        kill(second)


@pytest.mark.slow
def test_manifest_is_parsed_outside_a_read_only_project(tmp_path: Path):
    """At load time the manifest is read from (or parsed into) the state folder, never dbt_project/target: the
    assets load with the project folder untouched."""
    warehouse = tmp_path / "wh" / "kubeledger.duckdb"
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "KUBELEDGER_CONFIG")}
    env.update(KUBELEDGER_WAREHOUSE=str(warehouse), PYTHONDONTWRITEBYTECODE="1", DO_NOT_TRACK="1")
    before = code_tree_listing()
    code = ("import pipelines.dagster_defs.assets_dbt as m; print(m.MANIFEST); "
            "print(m.dbt_daily_assets.keys and len(m.dbt_daily_assets.keys))")
    with tempfile.TemporaryDirectory() as cwd:
        out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                             text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    manifest = Path(out.stdout.splitlines()[0])
    assert manifest.parent.parent == tmp_path / "wh" / "state" / "dbt" / "manifest"
    assert (manifest.parent / "partial_parse.msgpack").is_file() and (manifest.parent / "dbt.log").is_file()
    assert int(out.stdout.splitlines()[1]) > 10
    after = code_tree_listing()
    assert {p: v for p, v in after.items() if before.get(p, "new") != v} == {}
