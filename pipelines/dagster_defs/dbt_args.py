"""The dbt command lines, vars and environment of the dbt assets, as pure functions (unit-tested without dbt or
Dagster)."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

# which tests a dbt call runs is every engine's concern: defined (and explained) in pipelines/engines
from pipelines.engines import TEST_SELECTION_ENV

if TYPE_CHECKING:
    from pipelines.settings import Settings

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


def dbt_vars(settings: Settings, start: datetime | None, end: datetime | None,
             cluster: str | None = None) -> dict[str, Any]:
    """The dbt vars for a build of [start, end) (naive UTC): the window, the one cluster selected (None = all) and
    the configured policy. Every var of dbt_project.yml, by the same name, but the dbt-only ones
    (dbt_project_vars.DBT_ONLY_VARS); that file's values (what a dbt call without vars uses, e.g. the dbt unit
    tests) are generated from these for the default settings (dbt_project_vars.py)."""
    return {
        "min_ts": start.strftime("%Y-%m-%d %H:%M:%S") if start else None,
        "max_ts": end.strftime("%Y-%m-%d %H:%M:%S") if end else None,
        "cluster": cluster,
        "clusters": {
            c.name: {"provider": c.provider, "region": c.region, "carbon_zone": c.carbon_zone, "pue": c.pue,
                     "billing_account_id": c.billing_account_id, "billing_account_name": c.billing_account_name}
            for c in settings.clusters
        },
        "carbon_provider": settings.carbon.provider,
        "carbon_zone_label": settings.energy.carbon_zone_label,
        "default_intensity_g_per_kwh": settings.energy.default_intensity_g_per_kwh,
        "pue_source": settings.energy.pue_source,
        "default_pue": settings.energy.default_pue,
        "energy_memory": settings.energy.memory,
        "energy_gpu": settings.energy.gpu,
        "energy_storage": settings.energy.storage,
        "cpu_discount_pct": settings.pricing.cpu_discount_pct,
        "ram_discount_pct": settings.pricing.ram_discount_pct,
        "cluster_management_fee_per_hour": settings.pricing.cluster_management_fee_per_hour,
        # whole sections as the settings hold them (lists for tuples): the models read the same names
        "sharing": {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(settings.sharing).items()},
        "recommendations": dataclasses.asdict(settings.recommendations),
    }


def dbt_env(settings: Settings) -> dict[str, str]:
    """Environment for dbt: the profile reads the warehouse path from it; the tests' indirect selection."""
    return {
        **TEST_SELECTION_ENV,
        "KUBELEDGER_WAREHOUSE": str(settings.warehouse_path),
        "KUBELEDGER_DUCKDB_MEMORY": settings.warehouse.memory_limit,
        "DO_NOT_TRACK": "1",
    }
