"""The dbt CLI resource with the environment its profile needs, given per invocation instead of process-wide.

dbt's profile (dbt_project/profiles.yml) reads the warehouse path and memory limit from the environment
(KUBELEDGER_WAREHOUSE, KUBELEDGER_DUCKDB_MEMORY). dagster-dbt's `DbtCliResource.cli` has no `env` parameter: it
copies `os.environ` when it starts the dbt process (and when it loads the profile for its adapter handle). So the
variables are set only for the duration of each `cli()` call, inside the asset's step, and restored afterwards:
building or importing the Definitions never changes the process environment.

It also skips two things dagster-dbt does in the run's own process before every dbt call, which we never use:
`dbt --version` in a subprocess (a whole dbt start-up, once per run: the version is the installed dbt-core's)
and a dbt adapter handle (importing dbt and loading the project and profile in process; dagster-dbt needs it only
for `fetch_row_counts`/`fetch_column_metadata`). Profiled, they were the longest wait before a run's first dbt
call.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from dagster_dbt import DbtCliResource
from packaging import version

_ENV_LOCK = threading.RLock()


@contextmanager
def scoped_environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set `values` in os.environ for the block; put back what was there (or nothing) afterwards."""
    with _ENV_LOCK:
        saved = {name: os.environ.get(name) for name in values}
        os.environ.update(values)
        try:
            yield
        finally:
            for name, old in saved.items():
                if old is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = old


class KubeledgerDbtCliResource(DbtCliResource):
    """`DbtCliResource` whose dbt processes see `env` (the warehouse the settings name), and only they."""

    env: dict[str, str] = {}

    def cli(self, args: Sequence[str], **kwargs: Any):  # type: ignore[override]
        # the dbt process is started inside cli() (DbtCliInvocation.run), so it inherits these variables
        with scoped_environ(self.env):
            return super().cli(args, **kwargs)

    @property
    def _cli_version(self) -> version.Version:  # type: ignore[override]
        # dbt_executable is the venv's dbt (pipelines.dbt_executable): its version is the installed dbt-core's
        return version.parse(importlib.metadata.version("dbt-core"))

    def _initialize_dbt_core_adapter(self, args: Sequence[str]) -> Any:  # type: ignore[override]
        return None  # no fetch_row_counts / fetch_column_metadata in this project: no in-process adapter
