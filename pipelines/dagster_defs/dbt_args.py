"""The dbt command lines of the dbt assets, as pure functions (unit-tested without dbt or Dagster)."""

from __future__ import annotations

import json
from typing import Any

# Scheduled, CLI and backfill builds skip the dbt unit tests: formula tests on fixed fixtures belong to CI and
# development (tests/integration/test_dbt_unit_tests.py), and must not stop a production day.
DAILY_BUILD_EXCLUDES_UNIT_TESTS = True


def daily_build_args(variables: dict[str, Any], *,
                     exclude_unit_tests: bool = DAILY_BUILD_EXCLUDES_UNIT_TESTS) -> list[str]:
    """`dbt build` of the daily window: models with their data tests and the singular tests (the blocking asset
    checks run in Dagster after it), without the unit tests unless asked."""
    args = ["build", "--vars", json.dumps(variables)]
    if exclude_unit_tests:
        args += ["--exclude-resource-type", "unit_test"]
    return args


def parse_args(project_dir: str, target_dir: str) -> list[str]:
    """`dbt parse` of the project into `target_dir`: the manifest, its partial-parse file and dbt's log, all
    outside the project folder (which may be read-only)."""
    return ["parse", "--quiet", "--project-dir", project_dir, "--profiles-dir", project_dir,
            "--target-path", target_dir, "--log-path", target_dir]
