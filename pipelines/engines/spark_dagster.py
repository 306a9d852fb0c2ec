"""The spark engine inside a Dagster dbt asset: one `spark_build` call (the window to the lake, dbt on Spark, the
results back to DuckDB) through the in-process dbt asset call (dbt_dagster.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DbtProject

from pipelines.engines.dbt_dagster import dbt_asset_events
from pipelines.engines.dbt_runner import DbtCall
from pipelines.engines.spark import spark_build
from pipelines.settings import Settings


def spark_asset_events(context: dg.AssetExecutionContext, settings: Settings, asset_name: str, args: list[str],
                       target_path: Path, manifest: Path, translator: DagsterDbtTranslator,
                       project: DbtProject, cluster: str | None) -> Iterator[Any]:
    """Run a dbt asset's call on Spark and yield its Dagster events; raise when dbt failed (as dbt.cli does).
    `cluster` is the run's cluster selection (None = all), read by the caller: engines never import the Dagster
    definitions."""
    window = context.partition_time_window if context.has_partition_key_range or context.has_partition_key else None

    def build(dbt_args: list[str], project_dir: Path | None, env: dict[str, str]) -> DbtCall:
        return spark_build(settings, asset_name, dbt_args, target_path, window.start if window else None,
                           window.end if window else None, cluster, project_dir=project_dir, env=env)

    yield from dbt_asset_events(context, args, target_path, manifest, translator, project, build, "Spark")
