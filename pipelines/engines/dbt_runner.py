"""dbt in this process (dbtRunner), for both engines: the DuckDB engine's dbt calls and the Spark engine's.

A dbt process per call cost each daily run two dbt start-ups (~3.5 s of imports each, which the run's own process
had already paid: dagster-dbt imports dbt) and a teardown. In process, each call's node events are collected as
the dicts `dbt --log-format json` prints, and dagster-dbt turns them into Dagster events (dbt_dagster.py).

dbt keeps process-wide state (flags, adapters, the invocation context), so calls are serialised. dbt-duckdb keeps
its DuckDB environment (an open database) after a call; `release_duckdb` closes it, so the next connection the run
makes to the warehouse file (the extracts, the checks, publish) opens it with its own configuration.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines import DBT_PROJECT_DIR
from pipelines.environ import scoped_environ

_DBT_LOCK = threading.Lock()


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


def dbt_cli_args(args: list[str], target_path: Path, project_dir: Path | None = None,
                 target: str | None = None) -> list[str]:
    """dbt's command line: the project (or the copy dagster-dbt made for a generated selector, profile included),
    the run folder as target and log path, and the profile's target if not the default."""
    project = str(project_dir or DBT_PROJECT_DIR)
    return [*args, "--project-dir", project, "--profiles-dir", project,
            *(["--target", target] if target else []),
            "--target-path", str(target_path), "--log-path", str(target_path), "--no-use-colors"]


def invoke_dbt(args: list[str], env: Mapping[str, str]) -> DbtCall:
    """`dbt <args>` in this process with `env` set for the call only."""
    from dbt.cli.main import dbtRunner
    from dbt_common.events.functions import msg_to_dict

    call = DbtCall(success=False)

    def collect(msg: Any) -> None:
        event = msg_to_dict(msg)
        if event.get("data", {}).get("node_info", {}).get("unique_id"):
            call.events.append(event)
        if event.get("info", {}).get("level") == "error":
            call.errors.append(event["info"].get("msg", ""))

    with _DBT_LOCK, scoped_environ(env):
        try:
            result = dbtRunner(callbacks=[collect]).invoke(args)
        finally:
            release_duckdb()
    call.success, call.exception = bool(result.success), result.exception
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
