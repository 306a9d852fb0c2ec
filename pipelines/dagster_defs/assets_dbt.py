"""dbt assets: seeds (reference data) and the daily-partitioned models, one dbt call per run or backfill range."""


import os
import subprocess
from pathlib import Path

import dagster as dg
from dagster_dbt import DbtCliResource, DbtProject, dbt_assets

from pipelines import DBT_PROJECT_DIR, SEEDS_DIR, dbt_executable
from pipelines.dagster_defs.dbt_args import DAILY_BUILD_EXCLUDES_UNIT_TESTS, daily_build_args
from pipelines.dagster_defs.partitions import daily_partitions
from pipelines.dagster_defs.resources import KubeledgerResource
from pipelines.dagster_defs.translator import KubeledgerDbtTranslator
from pipelines.steps import dbt_vars

dbt_project = DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR)


def _newest_source_mtime() -> float:
    roots = [DBT_PROJECT_DIR / d for d in ("models", "macros", "tests")] + [SEEDS_DIR]
    files = [DBT_PROJECT_DIR / "dbt_project.yml", *(p for r in roots if r.exists() for p in r.rglob("*") if p.is_file())]
    return max(p.stat().st_mtime for p in files)


def ensure_manifest() -> Path:
    """Parse the dbt project when the manifest is missing (fresh clone, CI) or older than any project file, so the
    assets Dagster loads always match the nodes dbt will report."""
    manifest = dbt_project.manifest_path
    if (os.environ.get("DAGSTER_IS_DEV_CLI") or not manifest.exists()
            or manifest.stat().st_mtime < _newest_source_mtime()):
        # parse with the venv's dbt (dagster-dbt's preparer looks for `dbt` on PATH)
        subprocess.run([dbt_executable(), "parse", "--quiet", "--project-dir", str(DBT_PROJECT_DIR),
                        "--profiles-dir", str(DBT_PROJECT_DIR)], check=True, cwd=DBT_PROJECT_DIR,
                       env={**os.environ, "DO_NOT_TRACK": "1"})
    return manifest


MANIFEST = ensure_manifest()
TRANSLATOR = KubeledgerDbtTranslator()


@dbt_assets(manifest=MANIFEST, select="resource_type:seed", name="dbt_reference", project=dbt_project,
            dagster_dbt_translator=TRANSLATOR, pool="duckdb_writer")
def dbt_reference_assets(context: dg.AssetExecutionContext, dbt: DbtCliResource):
    """Reference seeds (prices, power profiles, zones, PUE, intensity defaults)."""
    yield from dbt.cli(["seed"], context=context).stream()


class DailyBuildConfig(dg.Config):
    # dbt unit tests are CI's and development's (tests/integration/test_dbt_unit_tests.py); False runs them too
    exclude_unit_tests: bool = DAILY_BUILD_EXCLUDES_UNIT_TESTS
    cluster: str | None = None  # rebuild one cluster only (kubeledger materialize --cluster)


@dbt_assets(manifest=MANIFEST, exclude="resource_type:seed", name="dbt_daily", project=dbt_project,
            partitions_def=daily_partitions, backfill_policy=dg.BackfillPolicy.single_run(),
            dagster_dbt_translator=TRANSLATOR, pool="duckdb_writer")
def dbt_daily_assets(context: dg.AssetExecutionContext, dbt: DbtCliResource, kubeledger: KubeledgerResource,
                     config: DailyBuildConfig):
    """staging → intermediate → marts for the days of the run's partition window (a range in backfills)."""
    window = context.partition_time_window  # never partition_key: a backfill range has no single key
    variables = dbt_vars(kubeledger.settings, window.start, window.end, cluster=config.cluster)
    args = daily_build_args(variables, exclude_unit_tests=config.exclude_unit_tests)
    yield from dbt.cli(args, context=context).stream()
