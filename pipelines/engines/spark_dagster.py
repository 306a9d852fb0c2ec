"""The spark engine inside a Dagster dbt asset: the same selection dagster-dbt would pass to the dbt CLI, one
`spark_build` call, and dbt's node results turned into the same Dagster events (outputs of the models and seeds,
asset check results of the dbt tests) dagster-dbt yields for the duckdb engine."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DbtProject
from dagster_dbt.asset_utils import (
    DBT_INDIRECT_SELECTION_ENV,
    extract_runtime_selection_from_args,
    get_updated_cli_invocation_params_for_context,
)
from dagster_dbt.core.dbt_cli_event import DbtCoreCliEventMessage

from pipelines.dagster_defs.resources import run_cluster
from pipelines.engines.spark import spark_build
from pipelines.settings import Settings


def spark_asset_events(context: dg.AssetExecutionContext, settings: Settings, asset_name: str, args: list[str],
                       target_path: Path, manifest: Path, translator: DagsterDbtTranslator,
                       project: DbtProject) -> Iterator[Any]:
    """Run a dbt asset's call on Spark and yield its Dagster events; raise when dbt failed (as dbt.cli does)."""
    manifest_blob = json.loads(Path(manifest).read_text())
    cleaned, selects, excludes = extract_runtime_selection_from_args(args)
    params = get_updated_cli_invocation_params_for_context(
        context=context, manifest=manifest_blob, dagster_dbt_translator=translator,
        runtime_selects=selects, runtime_excludes=excludes)
    env = {DBT_INDIRECT_SELECTION_ENV: params.indirect_selection} if params.indirect_selection else {}
    project_dir = Path(params.dbt_project.project_dir) if params.dbt_project else None
    window = context.partition_time_window if context.has_partition_key_range or context.has_partition_key else None
    call = spark_build(settings, asset_name, [*cleaned, *params.selection_args], target_path,
                       window.start if window else None, window.end if window else None,
                       run_cluster(context), project_dir=project_dir, env=env)
    if call.lake_rows:
        context.log.info(f"lake: wrote {sum(call.lake_rows.values())} raw rows for the window "
                         f"({', '.join(f'{t} {n}' for t, n in sorted(call.lake_rows.items()) if n)})")
    for raw in call.events:
        event = DbtCoreCliEventMessage(raw_event=raw, event_history_metadata={})
        yield from event.to_default_asset_events(manifest=params.manifest, dagster_dbt_translator=translator,
                                                 context=context, target_path=target_path, project=project)
    if not call.success:
        detail = "; ".join(call.errors[-5:]) or (repr(call.exception) if call.exception else "see the dbt log")
        raise dg.Failure(f"dbt on Spark failed ({' '.join(args[:1])}): {detail[:2000]}",
                         metadata={"dbt_log": str(target_path / "dbt.log")})
    if call.loaded:
        context.log.info("loaded into the warehouse from Spark: "
                         + ", ".join(f"{m} {n} rows" for m, n in sorted(call.loaded.items())))
