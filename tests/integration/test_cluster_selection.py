"""A cluster selection travels on one channel, the run tag `kubeledger/cluster`, and every asset of the run honours
it: the metrics and Kubernetes extracts, the carbon-intensity extract, and the dbt builds (their `cluster` var)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pandas as pd
import pytest

from pipelines.dagster_defs import assets_dbt
from pipelines.dagster_defs.assets_extract import raw_carbon_intensity, raw_kubernetes, raw_metrics
from pipelines.dagster_defs.partitions import with_first_day
from pipelines.dagster_defs.resources import CLUSTER_TAG, KubeledgerResource
from pipelines.days import first_day
from pipelines.settings import load_settings
from pipelines.sources import demo, kubernetes
from pipelines.sources.base import ExtractResult
from pipelines.timeutil import day_key, hour_key, utc_now
from pipelines.warehouse.connection import open_warehouse
from pipelines.warehouse.lookups import LOOKUPS_RELATION

pytestmark = pytest.mark.integration


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "kubeledger.yaml"
    first = utc_now().date() - timedelta(days=3)
    path.write_text(f"""
warehouse: {{path: wh/w.duckdb, serving_path: wh/s.duckdb, parquet_path: wh/parquet}}
clusters:
  - {{name: a, source: demo, demo: {{nodes: 2}}, kubernetes: {{enabled: true, host: "http://127.0.0.1:9"}}}}
  - {{name: b, source: demo, demo: {{nodes: 2}}, kubernetes: {{enabled: true, host: "http://127.0.0.1:9"}}}}
carbon: {{provider: demo}}
schedule: {{start_date: "{first}"}}
""")
    return path


def _run(config: Path, assets: list, partition_key: str, cluster: str, **resources: Any) -> dg.ExecuteInProcessResult:
    first = first_day(load_settings(str(config))).day
    return dg.materialize(with_first_day(assets, first), partition_key=partition_key, tags={CLUSTER_TAG: cluster},
                          resources={"kubeledger": KubeledgerResource(config_path=str(config)), **resources})


def test_every_extract_asset_honours_the_cluster_tag(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshots: list[str] = []

    def snapshot(cluster: Any, hour: Any, api_client: Any = None) -> ExtractResult:
        snapshots.append(cluster.name)
        return ExtractResult(batches={"k8s_objects": pd.DataFrame()}, partitions=[])

    monkeypatch.setattr(kubernetes, "extract_kubernetes_snapshot", snapshot)
    hour = utc_now() - timedelta(hours=1)  # the Kubernetes API is only snapshotted for recent hours
    assert _run(config, [raw_metrics, raw_kubernetes], hour_key(hour), "b").success
    assert snapshots == ["b"]

    topologies: list[str] = []
    demo_zones = demo.demo_zones

    def zones(cluster: Any) -> list[str]:
        topologies.append(cluster.name)
        return demo_zones(cluster)

    monkeypatch.setattr(demo, "demo_zones", zones)
    con = open_warehouse(load_settings(str(config)))
    con.execute("create schema if not exists intermediate")
    con.execute(f"create table {LOOKUPS_RELATION} (lookup_kind varchar, provider varchar, lookup_key varchar)")
    con.close()
    assert _run(config, [raw_carbon_intensity], day_key(hour.date() - timedelta(days=1)), "b").success
    assert topologies == ["b"]

    con = duckdb.connect(str(config.parent / "wh" / "w.duckdb"), read_only=True)
    try:
        assert con.execute("select distinct cluster from raw.node_hours").fetchall() == [("b",)]
    finally:
        con.close()


def test_dbt_builds_take_the_cluster_var_from_the_tag(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def dbt_call(context: Any, args: list[str], settings: Any, asset_name: str):
        calls.append(args)
        yield from ()

    monkeypatch.setattr(assets_dbt, "_dbt_call", dbt_call)
    day = day_key(utc_now().date() - timedelta(days=1))
    for dbt_step in (assets_dbt.dbt_lookups_assets, assets_dbt.dbt_daily_assets):  # the lookups build; the rest
        assert _run(config, [dbt_step], day, "a").success
    assert len(calls) == 2
    for args in calls:
        variables = json.loads(args[args.index("--vars") + 1])
        assert variables["cluster"] == "a"
        assert variables["min_ts"] == f"{day} 00:00:00"
