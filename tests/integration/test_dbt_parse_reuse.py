"""The DuckDB engine's dbt calls run on the project parsed once per process without vars (pipelines/engines/
dbt_runner.py). That is right only while nothing in the project resolves a var at parse time: a var in a
`config()`, a `ref` or `source` chosen by a var, a var in dbt_project.yml. These tests parse the project with two
very different sets of the pipeline's vars and with none, and require the same manifest; and a call on the reused
manifest still compiles each call's own vars."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pipelines import DBT_PROJECT_DIR
from pipelines.dagster_defs.dbt_args import dbt_vars, parse_args
from pipelines.engines.dbt_runner import _PARSED, dbt_cli_args, invoke_dbt
from pipelines.environ import scoped_environ
from pipelines.settings import load_settings

pytestmark = pytest.mark.integration


def _settings(tmp_path: Path, energy: bool) -> Any:
    cfg = tmp_path / f"kubeledger-{energy}.yaml"
    cfg.write_text(
        "warehouse: {path: wh/w.duckdb}\n"
        "clusters: [{name: a, source: demo, provider: aws, region: eu-west-1, pue: 1.3}, {name: b, source: demo}]\n"
        f"energy: {{memory: {str(energy).lower()}, gpu: {str(energy).lower()}, storage: {str(energy).lower()}}}\n"
        f"sharing: {{share_idle: {str(energy).lower()}, shared_namespaces: [kube-system]}}\n")
    return load_settings(cfg)


def _parse(target: Path, variables: dict[str, Any] | None, env: dict[str, str],
           extra: tuple[str, ...] = ()) -> dict[str, Any]:
    from dbt.cli.main import dbtRunner

    args = ["parse", "--no-partial-parse", *(["--vars", json.dumps(variables)] if variables else [])]
    with scoped_environ(env):
        result = dbtRunner().invoke(dbt_cli_args(args, target))
    assert result.success, result.exception
    manifest = result.result
    # what a parse decides per node: its dependencies, configuration and SQL, for every model, test, seed and unit test
    kept = ("depends_on", "config", "unrendered_config", "raw_code", "refs", "sources", "tags", "columns", "given",
            "expect", "overrides", *extra)
    out = {}
    for uid, node in [*manifest.nodes.items(), *manifest.unit_tests.items()]:
        fields = {k: v for k, v in node.to_dict().items() if k in kept}
        # depends_on.macros lists the macros rendering called at parse time (a var set calls sql_string), which
        # only partial parsing reads; execution resolves macros by name
        fields["depends_on"] = fields.get("depends_on", {}).get("nodes")
        out[uid] = json.dumps(fields, sort_keys=True, default=str)
    return out


def test_the_parse_does_not_depend_on_the_vars(tmp_path: Path) -> None:
    env = {"KUBELEDGER_WAREHOUSE": str(tmp_path / "wh" / "w.duckdb"), "DO_NOT_TRACK": "1"}
    one = dbt_vars(_settings(tmp_path, True), datetime(2026, 3, 1), datetime(2026, 3, 2), cluster="a")
    two = dbt_vars(_settings(tmp_path, False), datetime(2025, 1, 5), datetime(2025, 2, 5))
    none = _parse(tmp_path / "none", None, env)
    assert len(none) > 150
    assert _parse(tmp_path / "one", one, env) == none
    assert _parse(tmp_path / "two", two, env) == none


def test_a_call_on_the_reused_manifest_compiles_its_own_vars(tmp_path: Path) -> None:
    env = {"KUBELEDGER_WAREHOUSE": str(tmp_path / "wh" / "w.duckdb"), "DO_NOT_TRACK": "1"}
    (tmp_path / "wh").mkdir()
    compiled = {}
    for day in ("2026-03-01", "2026-04-02"):
        target = tmp_path / day
        variables = {"min_ts": f"{day} 00:00:00", "max_ts": f"{day} 01:00:00", "cluster": None}
        call = invoke_dbt(dbt_cli_args(["compile", "--vars", json.dumps(variables), "--select",
                                        "stg_metrics__node_hours"], target), env,
                          parsed_in=("test-key", target))
        assert call.success, call.errors
        compiled[day] = next(target.rglob("stg_metrics__node_hours.sql")).read_text()
    assert len(_PARSED) == 1  # parsed once, for both calls
    assert "2026-03-01 00:00:00" in compiled["2026-03-01"] and "2026-04-02" not in compiled["2026-03-01"]
    assert "2026-04-02 00:00:00" in compiled["2026-04-02"] and "2026-03-01" not in compiled["2026-04-02"]


def _env(warehouse: Path) -> dict[str, str]:
    return {"KUBELEDGER_WAREHOUSE": str(warehouse), "DO_NOT_TRACK": "1"}


def test_the_parse_does_not_depend_on_the_warehouse_path(tmp_path: Path) -> None:
    """What lets the in-process calls leave the file's path out of dbt's profile comparison (dbt_runner.py): two
    folders, the same file name, the same nodes (their database, the file's name, included)."""
    here = _parse(tmp_path / "here", None, _env(tmp_path / "here" / "kubeledger.duckdb"), ("database", "schema"))
    there = _parse(tmp_path / "there", None, _env(tmp_path / "else" / "where" / "kubeledger.duckdb"),
                   ("database", "schema"))
    assert len(here) > 150 and here == there
    assert '"database": "kubeledger"' in next(iter(here.values()))


def test_a_moved_warehouse_keeps_the_partial_parse(tmp_path: Path) -> None:
    """The manifest's parse (`python -m pipelines.engines.dbt_runner parse`, as assets_dbt._parse runs it) for a
    warehouse in one folder serves an in-process call on a copy elsewhere: no second parse of the whole project."""
    first = tmp_path / "first"
    subprocess.run([sys.executable, "-m", "pipelines.engines.dbt_runner",
                    *parse_args(str(DBT_PROJECT_DIR), str(first))],
                   env={**os.environ, **_env(tmp_path / "one" / "kubeledger.duckdb")}, cwd=tmp_path, check=True,
                   capture_output=True, timeout=300)
    target = tmp_path / "second"
    target.mkdir()
    shutil.copyfile(first / "partial_parse.msgpack", target / "partial_parse.msgpack")
    (tmp_path / "two").mkdir()
    _PARSED.clear()
    call = invoke_dbt(dbt_cli_args(["ls", "--select", "stg_metrics__node_hours"], target),
                      _env(tmp_path / "two" / "kubeledger.duckdb"), parsed_in=("moved-key", target))
    assert call.success and call.parsed, call.errors
    log = (target / "dbt.log").read_text()
    assert "Unable to do partial parsing" not in log, [ln for ln in log.splitlines() if "partial" in ln.lower()]
