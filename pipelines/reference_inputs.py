"""When the reference job (seeds + price files) must run: only when one of its inputs changed.

The fingerprint covers the seed files and their YAML, the dbt project file, the price-file loader's code, the
configured price files' content and the pricing settings; and the seeds must be in the warehouse (a new or replaced
warehouse file always runs it). It is written only after a successful reference run, so a failed or interrupted run
is retried next time."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import duckdb

from pipelines import DBT_PROJECT_DIR, PROJECT_ROOT, SEEDS_DIR
from pipelines.settings import Settings


def fingerprint_path(settings: Settings) -> Path:
    return settings.warehouse_path.parent / "state" / "reference.fingerprint"


def reference_fingerprint(settings: Settings) -> str:
    h = hashlib.sha256()
    files = sorted(SEEDS_DIR.rglob("*")) + [DBT_PROJECT_DIR / "dbt_project.yml",
                                                           PROJECT_ROOT / "pipelines" / "sources" / "pricing.py"]
    for name in (settings.pricing.instance_sheet, settings.pricing.node_csv, settings.pricing.custom_file):
        if name:
            files.append(settings.resolve(name))
    for f in files:
        if f.is_file():
            h.update(str(f.relative_to(PROJECT_ROOT) if f.is_relative_to(PROJECT_ROOT) else f.name).encode())
            h.update(hashlib.sha256(f.read_bytes()).digest())
        else:
            h.update(f"missing:{f}".encode())
    h.update(json.dumps(asdict(settings.pricing), sort_keys=True).encode())
    return h.hexdigest()


def _seeds_loaded(settings: Settings) -> bool:
    if settings.engine == "spark":
        return _spark_seeds_loaded(settings)
    if not settings.warehouse_path.exists():
        return False
    try:
        con = duckdb.connect(str(settings.warehouse_path), read_only=True)
    except duckdb.Error:  # held by a writer: cannot tell, so run the job
        return False
    try:
        row = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'seeds'").fetchone()
    finally:
        con.close()
    return bool(row and row[0])


def _spark_seeds_loaded(settings: Settings) -> bool:
    """On local Spark (or a standalone cluster on this machine's loopback) the seeds are managed tables under the
    state folder (metastore and data files): each seed's folder must hold the files of a completed write
    (`_SUCCESS`). A remote cluster's executors write elsewhere, so there the job always runs."""
    from pipelines.settings_rules import on_this_machine

    state = settings.spark_state_dir
    if not on_this_machine(settings.lake.spark.master) or not (state / "metastore_db").is_dir():
        return False
    tables = state / "warehouse" / "seeds.db"
    return all((tables / seed.stem / "_SUCCESS").is_file() for seed in SEEDS_DIR.glob("*.csv"))


def reference_is_current(settings: Settings) -> bool:
    """True when the last successful reference run had exactly these inputs and its tables are there."""
    path = fingerprint_path(settings)
    try:
        recorded = path.read_text().strip()
    except OSError:
        return False
    return recorded == reference_fingerprint(settings) and _seeds_loaded(settings)


def record_reference(settings: Settings) -> None:
    path = fingerprint_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(reference_fingerprint(settings) + "\n")
    tmp.replace(path)
