"""Suite-wide: no test sees another test's warehouse through the environment.

Importing pipelines.definitions (at collection) exports KUBELEDGER_WAREHOUSE for dbt's profile; tests that build their
own settings must not inherit it."""

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# Hypothesis keeps its example database and caches outside the working tree: the suite writes nothing into it
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "kubeledger-hypothesis"))
settings.register_profile("kubeledger", database=None)
settings.load_profile("kubeledger")

# pytest-xdist (scripts/test.sh runs groups with -n 2): each worker its own Dagster instance folder under the suite's
# DAGSTER_HOME, so two workers never share SQLite run/event storage or the instance lock. Set at import, before
# pipelines.definitions is imported by a test module. Temp dirs are per worker already (tmp_path, tmp_path_factory).
_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and os.environ.get("DAGSTER_HOME"):
    os.environ["DAGSTER_HOME"] = os.path.join(os.environ["DAGSTER_HOME"], f"xdist-{_worker}")
    os.makedirs(os.environ["DAGSTER_HOME"], exist_ok=True)


ISOLATED_ENV = ("KUBELEDGER_WAREHOUSE", "KUBELEDGER_SERVING", "KUBELEDGER_CONFIG")


@pytest.fixture(autouse=True)
def _isolated_kubeledger_env():
    """Unset before each test and again after it: an in-process `pipelines.cli.main` exports KUBELEDGER_WAREHOUSE
    for its own run, and a test that called it left it to the next module's fixtures (which run before this one):
    test_carbon_zone_lookups then landed its raw rows in another test's warehouse (a CI failure that depended on
    which modules a pytest-xdist worker ran first). monkeypatch.delenv restores nothing for a variable it found unset."""
    for name in ISOLATED_ENV:
        os.environ.pop(name, None)
    yield
    for name in ISOLATED_ENV:
        os.environ.pop(name, None)


# Where a pytest-xdist worker spends its time: recorded per module by scripts/ci/durations.py from a CI run's JUnit
# XML. scripts/test.sh runs `main` with --dist loadscope --no-loadscope-reorder, so modules are handed out in this
# order: the longest first (longest-processing-time scheduling). xdist's own reorder hands out the modules with the
# most tests first, which put the few long pipeline modules last and left one worker alone for the group's tail.
DURATIONS = Path(__file__).with_name("durations.json")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules by recorded duration, longest first; a module not recorded keeps its place after them. Stable: the
    tests of a module stay together and in their order."""
    try:
        cost: dict[str, float] = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        first.setdefault(item.nodeid.split("::", 1)[0], i)
    items.sort(key=lambda it: (-cost.get(it.nodeid.split("::", 1)[0], 0.0), first[it.nodeid.split("::", 1)[0]]))
