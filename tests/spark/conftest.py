"""The session's backfilled Prometheus (tests/integration/conftest.py) for the Spark equivalence test's scenario day:
the same fixture, imported, not copied (tests/spark is not under tests/integration, whose conftest pytest loads only
for the tests below it)."""

from tests.integration.conftest import prometheus_scenario  # noqa: F401
