"""The Spark group's shared state.

- `spark_dbt`: the group's one dbt runner on the `spark` target (one JVM, one Spark session, its metastore and
  managed tables under one KUBELEDGER_SPARK_DIR), session-scoped: every in-process dbt call of the group uses it.
  The session is the product's (pipelines/engines/spark_session.py, the engine's settings), started before dbt,
  whose `method: session` then finds it: the tests run Spark as configured for users, not as the bare profile.
  The CLI runs of test_spark_kill.py are subprocesses with their own JVM (the SIGKILL needs a process to kill).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pipelines.engines.spark_session import get_session, stop_session
from pipelines.settings import load_settings
from tests.fixtures.pipeline_workdir import CONFIG
from tests.fixtures.spark_dbt import SparkDbt, require_spark


@pytest.fixture(scope="session")
def spark_dbt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkDbt]:
    """The group's one dbt runner on the `spark` target; each day's build points KUBELEDGER_LAKE at its own lake."""
    require_spark()
    tmp = tmp_path_factory.mktemp("spark")
    (tmp / "kubeledger.yaml").write_text("engine: spark\n" + CONFIG)
    settings = load_settings(tmp / "kubeledger.yaml")
    env = {"KUBELEDGER_SPARK_DIR": str(settings.spark_state_dir), "SPARK_LOCAL_IP": "127.0.0.1", "DO_NOT_TRACK": "1"}
    saved = {k: os.environ.get(k) for k in [*env, "KUBELEDGER_LAKE"]}
    os.environ.update(env)
    get_session(settings)
    dbt = SparkDbt(tmp)
    try:
        yield dbt
    finally:
        stop_session()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        print("spark timings (s):", {k: round(v, 1) for k, v in dbt.timings.items()})
