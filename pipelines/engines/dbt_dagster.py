"""A Dagster dbt asset's call run in this process (dbt_runner.py), on either engine: the same selection dagster-dbt
would pass to the dbt CLI, one call, and dbt's node results turned into the same Dagster events (outputs of the
models and seeds, asset check results of the dbt tests) dagster-dbt yields from its CLI resource.

Views and tables hold one window only (the last call's `--vars`); incremental models keep every day. A Dagster
asset backfill builds the dbt assets in subsets, each range as its upstream lands, and other runs may take the
writer between two steps of one run: a call could read a view or table another call left for other days. So every
daily call first rebuilds, for its own window, the views and tables its selection reads but does not build
(`window_ancestors`): a mart is never built from another window's intermediate rows."""

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


# materializations replaced whole by each call (ephemeral: inlined); lean_*: DuckDB's (macros/materializations.sql)
WINDOWED = frozenset({"view", "table", "lean_view", "lean_table"})


def window_ancestors(manifest: dict[str, Any], selected: set[str]) -> list[str]:
    """The names of the views and tables upstream of the `selected` models (unique ids) that they do not include.
    The walk reads through ephemeral models (inlined) and stops at seeds, sources and incremental models: those
    hold every day, and the backfill builds a parent's day before its children's."""
    nodes, parents = manifest["nodes"], manifest["parent_map"]
    found: set[str] = set()
    todo = [uid for uid in selected if uid in nodes]
    seen = set(todo)
    while todo:
        for parent in parents.get(todo.pop(), []):
            node = nodes.get(parent)
            if parent in seen or node is None or node["resource_type"] != "model":
                continue
            seen.add(parent)
            materialized = node["config"].get("materialized")
            if parent in selected or materialized == "ephemeral":  # built (or inlined) by the call: read through
                todo.append(parent)
            elif materialized in WINDOWED:
                found.add(parent)
                todo.append(parent)
    return sorted(nodes[uid]["name"] for uid in found)


def _failure_detail(call: DbtCall) -> str:
    """What a failed call said: its last errors, else its exception (2,000 characters at most)."""
    detail = "; ".join(call.errors[-5:]) or (repr(call.exception) if call.exception else "see the dbt log")
    return detail[:2000]


def _selected_models(context: dg.AssetExecutionContext, manifest: dict[str, Any],
                     translator: DagsterDbtTranslator) -> set[str]:
    keys = context.selected_asset_keys
    return {uid for uid, node in manifest["nodes"].items()
            if node["resource_type"] == "model" and translator.get_asset_key(node) in keys}


def _rebuild_window_ancestors(context: dg.AssetExecutionContext, args: list[str], manifest: dict[str, Any],
                              translator: DagsterDbtTranslator, build: DbtBuild, engine: str) -> None:
    """`dbt run` of the window's ancestors the selection does not build (module docstring); no events: they are
    not this step's assets, and their content is a function of raw and the window alone."""
    if not args or args[0] != "build" or "--vars" not in args:
        return  # only the daily builds carry a window
    names = window_ancestors(manifest, _selected_models(context, manifest, translator))
    if not names:
        return
    variables = args[args.index("--vars") + 1]
    call = build(["run", "--vars", variables, "--select", " ".join(names)], None, {})
    if not call.success:
        raise dg.Failure(f"dbt run of the window's upstream views and tables failed on {engine}: "
                         f"{_failure_detail(call)}")
    context.log.info(f"rebuilt for this window first: {', '.join(names)}")


def dbt_asset_events(context: dg.AssetExecutionContext, args: list[str], target_path: Path, manifest: Path,
                     translator: DagsterDbtTranslator, project: DbtProject, build: DbtBuild,
                     engine: str) -> Iterator[Any]:
    """Run the asset's dbt call through `build` and yield its Dagster events; raise when dbt failed, as
    dagster-dbt's CLI resource does (its failed checks are yielded first, so the run records them)."""
    manifest_blob = json.loads(Path(manifest).read_text())
    _rebuild_window_ancestors(context, args, manifest_blob, translator, build, engine)
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
        raise dg.Failure(f"dbt {args[0] if args else ''} failed on {engine}: {_failure_detail(call)}",
                         metadata={"dbt_log": str(target_path / "dbt.log")})
    if call.loaded:
        context.log.info("loaded into the warehouse from Spark: "
                         + ", ".join(f"{m} {n} rows" for m, n in sorted(call.loaded.items())))
