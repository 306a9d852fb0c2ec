"""A Dagster dbt asset's call run in this process (dbt_runner.py), on either engine: the same selection dagster-dbt
would pass to the dbt CLI, one call, and dbt's node results turned into the same Dagster events (outputs of the
models and seeds, asset check results of the dbt tests) dagster-dbt yields from its CLI resource."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
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

from pipelines.engines.dbt_runner import DbtCall

# (dbt args with the run's selection, the project copy dagster-dbt made for a generated selector, extra env)
DbtBuild = Callable[[list[str], Path | None, dict[str, str]], DbtCall]


def dbt_asset_events(context: dg.AssetExecutionContext, args: list[str], target_path: Path, manifest: Path,
                     translator: DagsterDbtTranslator, project: DbtProject, build: DbtBuild,
                     engine: str) -> Iterator[Any]:
    """Run the asset's dbt call through `build` and yield its Dagster events; raise when dbt failed, as
    dagster-dbt's CLI resource does (its failed checks are yielded first, so the run records them)."""
    manifest_blob = json.loads(Path(manifest).read_text())
    cleaned, selects, excludes = extract_runtime_selection_from_args(args)
    params = get_updated_cli_invocation_params_for_context(
        context=context, manifest=manifest_blob, dagster_dbt_translator=translator,
        runtime_selects=selects, runtime_excludes=excludes)
    env = {DBT_INDIRECT_SELECTION_ENV: params.indirect_selection} if params.indirect_selection else {}
    project_dir = Path(params.dbt_project.project_dir) if params.dbt_project else None
    call = build([*cleaned, *params.selection_args], project_dir, env)
    if call.lake_rows:
        context.log.info(f"lake: wrote {sum(call.lake_rows.values())} raw rows for the window "
                         f"({', '.join(f'{t} {n}' for t, n in sorted(call.lake_rows.items()) if n)})")
    for raw in call.events:
        event = DbtCoreCliEventMessage(raw_event=raw, event_history_metadata={})
        yield from event.to_default_asset_events(manifest=params.manifest, dagster_dbt_translator=translator,
                                                 context=context, target_path=target_path, project=project)
    if not call.success:
        detail = "; ".join(call.errors[-5:]) or (repr(call.exception) if call.exception else "see the dbt log")
        raise dg.Failure(f"dbt {args[0] if args else ''} failed on {engine}: {detail[:2000]}",
                         metadata={"dbt_log": str(target_path / "dbt.log")})
    if call.loaded:
        context.log.info("loaded into the warehouse from Spark: "
                         + ", ".join(f"{m} {n} rows" for m, n in sorted(call.loaded.items())))
