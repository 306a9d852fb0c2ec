"""Environment variables set for one block only.

dbt's profile (dbt_project/profiles.yml) reads the warehouse path, memory limit and Spark settings from the
environment, and dbt runs in the step's process (pipelines/engines/dbt_runner.py): the variables are set for the
duration of each call and restored afterwards, so building or importing the Definitions never changes the process
environment."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

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
