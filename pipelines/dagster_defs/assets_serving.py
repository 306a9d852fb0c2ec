"""Serving: the published copy BI tools and the allocation API read, plus the Parquet export."""


import dagster as dg

from pipelines.dagster_defs.instance import prune_runs
from pipelines.dagster_defs.metadata import safe_metadata
from pipelines.dagster_defs.partitions import daily_partitions
from pipelines.dagster_defs.resources import WRITER_POOL, KubeledgerResource
from pipelines.timeutil import DAY, days_of_window
from pipelines.warehouse.publish import export_parquet, folder_size, publish_serving_copy
from pipelines.warehouse.retention import prune_raw

MART_KEYS = [["marts", name] for name in (
    "fct_allocation_daily", "fct_allocation_shared_daily", "fct_asset_daily", "fct_cluster_daily",
    "fct_node_energy_daily", "fct_focus_allocation_daily")]


@dg.asset(key=["serving", "warehouse"], deps=MART_KEYS, partitions_def=daily_partitions,
          backfill_policy=dg.BackfillPolicy.single_run(), pool=WRITER_POOL, group_name="serving",
          kinds={"duckdb", "parquet"},
          description="Serving copy of the marts (atomic swap, DuckDB storage v1.4.0) and the Parquet export "
          "partitioned by cluster= and date=.")
def serving_warehouse(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource) -> dg.MaterializeResult:
    settings = kubeledger.settings
    window = context.partition_time_window
    days = days_of_window(window.start, window.end)
    published = publish_serving_copy(settings.warehouse_path, settings.serving_path)
    parquet = export_parquet(settings.warehouse_path, settings.parquet_path, days)
    with kubeledger.connect() as con:
        # raw hourly rows past retention go only after a good build has published the marts built from them
        newest = con.execute("select max(hour_ts) from raw.node_hours").fetchone()[0]
        pruned = prune_raw(con, settings.warehouse.raw_retention_days, newest) if newest else {}
        totals = con.execute(
            "select count(*), sum(hours_covered), sum(total_cost), sum(energy_kwh), sum(co2e_total_g), "
            "avg(co2e_estimated_share) from marts.fct_cluster_daily where usage_date >= ? and usage_date < ?",
            [days[0], days[-1] + DAY]).fetchone()
    # Dagster's run storage is bounded the same way: runs past retention go (never a day's latest build)
    runs_pruned = prune_runs(context.instance, settings.warehouse.raw_retention_days)
    return dg.MaterializeResult(metadata=safe_metadata({
        "serving_path": str(published.serving_path),
        "serving_bytes": published.bytes,
        "rows": published.tables,
        "parquet_files": parquet,
        "parquet_bytes": folder_size(settings.parquet_path),
        "cluster_days": totals[0],
        "hours_covered": totals[1],
        "total_cost_usd": totals[2],
        "energy_kwh": totals[3],
        "co2e_total_g": totals[4],
        "estimated_co2e_share": totals[5],
        "raw_rows_pruned": pruned,
        "dagster_runs_pruned": len(runs_pruned),
    }))
