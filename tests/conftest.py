"""Suite-wide: no test sees another test's warehouse through the environment.

Importing pipelines.definitions (at collection) exports KUBELEDGER_WAREHOUSE for dbt's profile; tests that build their
own settings must not inherit it."""

import os
import tempfile

import pytest
from hypothesis import settings

# Hypothesis keeps its example database and caches outside the working tree: the suite writes nothing into it
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "kubeledger-hypothesis"))
settings.register_profile("kubeledger", database=None)
settings.load_profile("kubeledger")


@pytest.fixture(autouse=True)
def _isolated_kubeledger_env(monkeypatch):
    for name in ("KUBELEDGER_WAREHOUSE", "KUBELEDGER_SERVING", "KUBELEDGER_CONFIG"):
        monkeypatch.delenv(name, raising=False)
