"""Suite-wide: no test sees another test's warehouse through the environment.

Importing pipelines.definitions (at collection) exports KUBELEDGER_WAREHOUSE for dbt's profile; tests that build their
own settings must not inherit it."""

import pytest


@pytest.fixture(autouse=True)
def _isolated_kubeledger_env(monkeypatch):
    for name in ("KUBELEDGER_WAREHOUSE", "KUBELEDGER_SERVING", "KUBELEDGER_CONFIG"):
        monkeypatch.delenv(name, raising=False)
