"""`kubeledger lake relocate`: re-register the Spark metastore's tables at the configured `lake.root` and warehouse
folder, after the lake moved (a changed lake.root, its files copied there) or the warehouse folder did (a copied
workdir, a restore from a backup to another path). Every Spark run checks the places first and fails in one line
naming this command (pipelines/engines/spark_metastore.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from pipelines.settings import Settings
from pipelines.settings_models import SettingsError


def add_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    """Register `lake` on the `kubeledger` subparsers (pipelines/cli.py); `common` adds --config/-v."""
    lake = sub.add_parser("lake", help="the Spark engine's Parquet lake (lake relocate -h)")
    actions = lake.add_subparsers(dest="lake_action", required=True, metavar="ACTION", help="relocate")
    p = actions.add_parser(
        "relocate", help="re-register the Spark metastore's tables at the configured lake.root and warehouse folder",
        description="After lake.root changed (move the lake's files there first) or the warehouse folder was copied "
        "or restored to another path: rewrite every table, partition and database location of the Spark metastore "
        "(state/spark/metastore_db) to the configured places, in one transaction. No data is moved. Stop every "
        "Spark run of this warehouse first.")
    common(p)
    return lake


def run_lake(args: argparse.Namespace, settings: Settings) -> int:
    """`kubeledger lake relocate`: 0 when done, 2 (one line) when there is nothing to relocate or it is refused."""
    from pipelines.engines.spark_metastore import relocate

    try:
        relocate(settings, echo=print)
    except SettingsError as exc:  # LakeMoved: nothing to relocate, the files not at the new root, a run using it
        print(f"kubeledger: {exc}", file=sys.stderr)
        return 2
    return 0
