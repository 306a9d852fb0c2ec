"""dbt in this process (dbtRunner), for both engines: the DuckDB engine's dbt calls and the Spark engine's.

A dbt process per call cost each daily run two dbt start-ups (~3.5 s of imports each, which the run's own process
had already paid: dagster-dbt imports dbt) and a teardown. In process, each call's node events are collected as
the dicts `dbt --log-format json` prints, and dagster-dbt turns them into Dagster events (dbt_dagster.py).

dbt keeps process-wide state (flags, adapters, the invocation context), so calls are serialised. dbt-duckdb keeps
its DuckDB environment (an open database) after a call; `release_duckdb` closes it, so the next connection the run
makes to the warehouse file (the extracts, the checks, publish) opens it with its own configuration.

A call may reuse the project parsed once per process (`parsed_in`, dbt's documented `dbtRunner(manifest=...)`):
dbt throws its partial-parse file away whenever `--vars` change, and every daily call passes its day as vars, so
each new day re-parsed the whole project (8-10 s). The project resolves no var at parse time (no var in a config,
a ref or a source: tests/unit/test_dbt_runner.py checks it), so the manifest parsed without vars is the one every
window's call would parse; the vars still reach each call's compile through its own runtime config.

dbt also throws the partial-parse file away when the profile's connection changes, and dbt-duckdb's includes the
warehouse file's path: every warehouse copied or moved (a Docker image's prepared manifest, each test's copy of a
template) re-parsed the whole project in each process. The path changes nothing dbt parses (the file's name, which
is every relation's database, stays in the comparison), so in-process calls leave it out (`_profile_without_path`),
and the caller keeps the partial-parse file of the first parse (DbtCall.parsed) for the next process.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines import DBT_PROJECT_DIR
from pipelines.environ import scoped_environ

_DBT_LOCK = threading.Lock()
# the events dagster-dbt turns into Dagster events (DbtCoreCliEventMessage.is_result_event); each carries node_info
RESULT_EVENTS = frozenset({"LogSeedResult", "LogModelResult", "LogSnapshotResult", "LogTestResult"})
_PARSED: dict[str, Any] = {}  # the caller's key for the project as it is (its manifest's path) -> dbt's Manifest
_PATH_KEY = "path"  # dbt-duckdb's connection key for the warehouse file (DuckDBCredentials._connection_keys)


@contextmanager
def _profile_without_path() -> Iterator[None]:
    """dbt-duckdb's connection keys without the file's path while dbt runs in this process (module docstring)."""
    try:
        from dbt.adapters.duckdb.credentials import DuckDBCredentials
    except ImportError:  # the Spark-only install
        yield
        return
    original = DuckDBCredentials._connection_keys

    def without_path(self: Any) -> tuple[str, ...]:
        return tuple(k for k in original(self) if k != _PATH_KEY)

    DuckDBCredentials._connection_keys = without_path
    try:
        yield
    finally:
        DuckDBCredentials._connection_keys = original


@dataclass
class DbtCall:
    """One dbt invocation: its success, the structured events of its nodes (the dicts `dbt --log-format json`
    prints) and, on Spark, what came back to DuckDB."""

    success: bool
    events: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    exception: BaseException | None = None
    lake_rows: dict[str, int] = field(default_factory=dict)
    loaded: dict[str, int] = field(default_factory=dict)
    parsed: bool = False  # this call parsed the project: the target path holds a fresh partial-parse file


def dbt_cli_args(args: list[str], target_path: Path, project_dir: Path | None = None,
                 target: str | None = None) -> list[str]:
    """dbt's command line: the project (or the copy dagster-dbt made for a generated selector, profile included),
    the run folder as target and log path, and the profile's target if not the default."""
    project = str(project_dir or DBT_PROJECT_DIR)
    return [*args, "--project-dir", project, "--profiles-dir", project,
            *(["--target", target] if target else []),
            "--target-path", str(target_path), "--log-path", str(target_path), "--no-use-colors"]


def _parsed_manifest(key: str, target_path: Path) -> tuple[Any, bool]:
    """The project (the default target, no vars) parsed once per process, `key` and profile environment, its dbt
    log and partial-parse file in `target_path`, and whether this call parsed it; (None, False) when the parse fails (the
    call then parses itself, and reports what is wrong). Called with the call's environment set."""
    # the profile is part of what dbt parses (the warehouse file's name is every relation's database)
    key = "|".join([key, *(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("KUBELEDGER_"))])
    if key not in _PARSED:
        from dbt.cli.main import dbtRunner

        result = dbtRunner().invoke(dbt_cli_args(["parse", "--no-write-json"], target_path))
        if not result.success:
            return None, False
        _PARSED.clear()  # one project kept: a manifest is tens of MB, and a process runs one warehouse at a time
        _PARSED[key] = result.result
        return result.result, True
    return _PARSED[key], False


def invoke_dbt(args: list[str], env: Mapping[str, str], parsed_in: tuple[str, Path] | None = None) -> DbtCall:
    """`dbt <args>` in this process with `env` set for the call only; with `parsed_in` = (key, target path), on
    the project parsed once per process and key (see the module's docstring) instead of a parse per call, and
    without dbt's JSON artifacts but run_results.json (the nodes' timings): dbt would write the whole manifest
    again after each call (2.5 MB of JSON, 0.3-0.5 s of CPU), which the run has already (assets_dbt.ensure_manifest)."""
    if parsed_in is not None:
        args = [*args, "--no-write-json"]
    from dbt.cli.main import dbtRunner
    from dbt_common.events.functions import msg_to_dict

    call = DbtCall(success=False)

    def collect(msg: Any) -> None:
        # dbt fires thousands of events a build (a debug line per SQL statement); only the node results become
        # Dagster events, so only those are converted to dicts
        info = msg.info
        if info.name in RESULT_EVENTS and msg.data.node_info.unique_id:
            call.events.append(msg_to_dict(msg))
        if info.level == "error":
            call.errors.append(info.msg)

    with _DBT_LOCK, scoped_environ(env), _profile_without_path():
        try:
            manifest, call.parsed = _parsed_manifest(*parsed_in) if parsed_in is not None else (None, False)
            result = dbtRunner(manifest=manifest, callbacks=[collect]).invoke(args)
        finally:
            release_duckdb()
    call.success, call.exception = bool(result.success), result.exception
    if parsed_in is not None and hasattr(result.result, "write"):  # run_results.json: the nodes' timings, kept
        result.result.write(str(parsed_in[1] / "run_results.json"))
    return call


def release_duckdb() -> None:
    """Close dbt-duckdb's database (kept open across calls by its connection manager), if it has one."""
    try:
        from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    except ImportError:  # the Spark-only install
        return
    with DuckDBConnectionManager._LOCK:
        env, DuckDBConnectionManager._ENV = DuckDBConnectionManager._ENV, None
    if env is not None:
        env.close()


def main(argv: list[str]) -> int:
    """`python -m pipelines.engines.dbt_runner <dbt args>`: dbt's command line with the in-process calls' profile
    comparison, so the partial-parse file a `dbt parse` this way leaves (the manifest's) serves those calls."""
    from dbt.cli.main import dbtRunner

    with _profile_without_path():
        result = dbtRunner().invoke(argv)
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
