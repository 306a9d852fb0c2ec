"""Resources, all configured from the one Settings object — pinned per run.

A run uses the settings it was launched with, even if kubeledger.yaml is edited while it runs: the CLI and the
schedules pass a snapshot (`settings_json`); a run launched without one (the UI's launchpad, a backfill) pins the
file's content at its first step, in `<state>/run-settings/<run id>.json`, and every later step (in any process)
reads that snapshot.
"""

import os
import time
from pathlib import Path

import dagster as dg
import duckdb
from pydantic import PrivateAttr

from pipelines.redaction import remember_configured
from pipelines.settings import ClusterSettings, Settings, load_settings, settings_from_json, settings_to_json
from pipelines.warehouse.connection import open_warehouse

# DuckDB allows one process at a time on the file (a read-only open fails while another process writes): every
# asset and asset check that opens the warehouse takes a slot of this pool (limit 1 in dagster_home/dagster*.yaml).
WRITER_POOL = "duckdb_writer"
SNAPSHOT_DAYS_KEPT = 7
# The one channel of a cluster selection (kubeledger materialize --cluster): a run tag every extract, dbt asset
# and check of the run reads; absent = every configured cluster.
CLUSTER_TAG = "kubeledger/cluster"


def run_cluster(context: dg.OpExecutionContext | dg.AssetExecutionContext) -> str | None:
    """The cluster the run is restricted to, or None for all."""
    return context.run.tags.get(CLUSTER_TAG) or None


def run_clusters(context: dg.OpExecutionContext | dg.AssetExecutionContext, settings: Settings) -> list[ClusterSettings]:
    """The configured clusters the run covers (a selected cluster must be configured)."""
    only = run_cluster(context)
    return [settings.cluster(only)] if only else list(settings.clusters)


def run_settings_dir(settings: Settings) -> Path:
    return settings.warehouse_path.parent / "state" / "run-settings"


def pin_settings(config_path: str | None, settings_json: str | None, run_id: str | None) -> Settings:
    """The run's settings: the snapshot it was launched with, else the one its first step pinned, else the file."""
    if settings_json:
        return settings_from_json(settings_json)
    current = load_settings(config_path)
    if not run_id:
        return current
    folder = run_settings_dir(current)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run_id}.json"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return settings_from_json(path.read_text(), origin=str(path))
    with os.fdopen(fd, "w") as fh:
        fh.write(settings_to_json(current))
    cutoff = time.time() - SNAPSHOT_DAYS_KEPT * 86400
    for old in folder.glob("*.json"):  # bounded: one small file per run, kept a week
        if old.stat().st_mtime < cutoff:
            old.unlink(missing_ok=True)
    return current


class KubeledgerResource(dg.ConfigurableResource):
    """The settings (kubeledger.yaml, pinned per run) and the warehouse connection the Python steps use."""

    config_path: str | None = None
    settings_json: str | None = None  # a snapshot passed at launch; wins over the file
    _pinned: Settings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._pinned = pin_settings(self.config_path, self.settings_json, context.run_id)
        remember_configured(self._pinned)  # runs launched from the UI or a schedule redact them too

    @property
    def settings(self) -> Settings:
        if self._pinned is None:  # used outside a run (direct calls in tests)
            self._pinned = pin_settings(self.config_path, self.settings_json, None)
        return self._pinned

    def connect(self, read_only: bool = False) -> duckdb.DuckDBPyConnection:
        return open_warehouse(self.settings, read_only=read_only)


def pinned_run_config(settings: Settings) -> dict:
    """Run config that pins a run to `settings` (CLI runs, schedule ticks)."""
    return {"resources": {"kubeledger": {"config": {"config_path": settings.source_file,
                                                    "settings_json": settings_to_json(settings)}}}}
