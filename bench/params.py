"""What a benchmark stage's parameters (`p`, the JSON each child process gets) stand for: the scale's folders,
settings, day and dbt command line. Shared by the DuckDB stages (stages.py) and the Spark stage (spark.py), which
stages.py dispatches to: both import this module, never each other's helpers."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipelines.settings import Settings

CLUSTER = "bench"


def paths(p: dict[str, Any]) -> dict[str, Path]:
    """The files and folders of the scale's working directory."""
    wd = Path(p["workdir"])
    return {"warehouse": wd / "kubeledger.duckdb", "serving": wd / "serving.duckdb", "parquet": wd / "parquet",
            "target": wd / "dbt_target", "logs": wd / "dbt_logs"}


def settings_for(p: dict[str, Any]) -> Settings:
    """The one cluster of the scale (the demo generator's, or a Prometheus serving the scale TSDB)."""
    from pipelines.settings import (
        CarbonSettings,
        ClusterSettings,
        DemoSettings,
        PrometheusSettings,
        Settings,
        WarehouseSettings,
    )

    pt = paths(p)
    if p.get("prometheus_url"):
        cluster = ClusterSettings(name="scale", source="prometheus", prometheus=PrometheusSettings(
            url=p["prometheus_url"], cluster_label="cluster", cluster_label_value="scale", scrape_interval_s=60,
            timeout_s=300))
    else:
        cluster = ClusterSettings(name=CLUSTER, source="demo", demo=DemoSettings(
            nodes=int(p["nodes"]), pods_per_node=int(p["ppn"]), containers_per_pod=int(p["cpp"]),
            seed=int(p.get("seed", 42))))
    return Settings(
        warehouse=WarehouseSettings(path=str(pt["warehouse"]), serving_path=str(pt["serving"]),
                                    parquet_path=str(pt["parquet"]), memory_limit=p.get("memory_limit", "4GB"),
                                    threads=int(p.get("threads", 2))),
        clusters=(cluster,),
        carbon=CarbonSettings(provider="demo"),
    )


def window(p: dict[str, Any]) -> tuple[datetime, datetime]:
    """[start, end) of the benchmarked day (naive UTC)."""
    day = date.fromisoformat(p["day"])
    start = datetime(day.year, day.month, day.day)
    return start, start + timedelta(hours=int(p.get("hours", 24)))


def day_hours(p: dict[str, Any]) -> list[datetime]:
    """The hours of `window`."""
    start, end = window(p)
    return [start + timedelta(hours=i) for i in range(int((end - start).total_seconds() // 3600))]


def dbt_args(p: dict[str, Any], command: list[str]) -> list[str]:
    """`dbt <command>` on the scale's warehouse, with its own target and log folders and the day's vars."""
    from pipelines import DBT_PROJECT_DIR
    from pipelines.dagster_defs.dbt_args import dbt_vars

    settings = settings_for(p)
    start, end = window(p)
    pt = paths(p)
    return [*command, "--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR),
            "--target-path", str(pt["target"]), "--log-path", str(pt["logs"]), "--quiet",
            "--vars", json.dumps(dbt_vars(settings, start, end))]
