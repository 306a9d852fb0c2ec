"""The Dagster asset graph matches its committed snapshot, so a change to the graph shows in review.

The snapshot (tests/unit/__snapshots__/asset_graph.txt) lists, for the Definitions of one fixed settings object:
every asset key with its group, upstream keys (and partition mapping when not the default), partitions (type,
start); every asset check with its blocking flag; every job with its partitions and ops; every schedule with its
cron, job and timezone. A difference fails with a unified diff of the two texts.

An intended change: regenerate and commit the new snapshot with
    KUBELEDGER_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest -p no:cacheprovider tests/unit/test_asset_graph_snapshot.py
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import dagster as dg

from pipelines.settings import ScheduleSettings, Settings

SNAPSHOT = Path(__file__).parent / "__snapshots__" / "asset_graph.txt"
UPDATE_ENV = "KUBELEDGER_UPDATE_SNAPSHOTS"


def _partitions(pd: dg.PartitionsDefinition | None) -> str:
    if pd is None:
        return "none"
    if isinstance(pd, dg.TimeWindowPartitionsDefinition):
        return f"{type(pd).__name__}(start={pd.start.isoformat()}, cron={pd.cron_schedule}, tz={pd.timezone})"
    if isinstance(pd, dg.StaticPartitionsDefinition):
        return f"{type(pd).__name__}({', '.join(pd.get_partition_keys())})"
    return type(pd).__name__


def graph_snapshot(defs: dg.Definitions) -> str:
    """One line per asset, dependency, check, job, op and schedule; sorted, so a diff shows exactly what moved."""
    graph = defs.resolve_asset_graph()
    lines = ["# kubeledger asset graph (tests/unit/test_asset_graph_snapshot.py regenerates this file)"]
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        kind = "materializable" if node.is_materializable else "external"
        lines.append(f"asset {key.to_user_string()}  group={node.group_name}  {kind}  "
                     f"partitions={_partitions(node.partitions_def)}")
        mappings = node.partition_mappings
        for parent in sorted(node.parent_keys, key=lambda k: k.to_user_string()):
            mapping = f"  mapping={type(mappings[parent]).__name__}" if parent in mappings else ""
            lines.append(f"    dep {parent.to_user_string()}{mapping}")
    for ck in sorted(graph.asset_check_keys, key=lambda k: (k.asset_key.to_user_string(), k.name)):
        check = graph.get(ck)
        lines.append(f"check {ck.asset_key.to_user_string()}:{ck.name}  blocking={check.blocking}  "
                     f"partitions={_partitions(check.partitions_def)}")
    for job in sorted(defs.resolve_all_job_defs(), key=lambda j: j.name):
        if job.name.startswith("__"):  # Dagster's implicit asset job
            continue
        lines.append(f"job {job.name}  partitions={_partitions(job.partitions_def)}")
        lines += [f"    op {op}" for op in sorted(job.graph.node_names())]
    for name in sorted(s.name for s in defs.schedules or []):
        schedule = defs.resolve_schedule_def(name)
        lines.append(f"schedule {name}  cron={schedule.cron_schedule}  job={schedule.job_name}  "
                     f"tz={schedule.execution_timezone}  status={schedule.default_status.value}")
    return "\n".join(lines) + "\n"


def test_asset_graph_matches_the_snapshot():
    from pipelines.definitions import build_definitions

    defs = build_definitions(Settings(schedule=ScheduleSettings(start_date="2026-10-05")))
    current = graph_snapshot(defs)
    if os.environ.get(UPDATE_ENV) == "1":
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(current)
        return
    assert SNAPSHOT.exists(), f"no snapshot yet: run with {UPDATE_ENV}=1 and commit {SNAPSHOT.name}"
    committed = SNAPSHOT.read_text()
    if committed != current:
        diff = "".join(difflib.unified_diff(committed.splitlines(keepends=True), current.splitlines(keepends=True),
                                            "committed snapshot", "current graph"))
        raise AssertionError(f"the asset graph changed (if intended: {UPDATE_ENV}=1 and commit):\n{diff}")
