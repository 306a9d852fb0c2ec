"""Where dbt runs: `duckdb` (dbt-duckdb on the warehouse file, the default, in the step's process: dbt_runner.py) or
`spark` (dbt-spark in this process over the Parquet lake; spark.py), chosen by the `engine` setting."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipelines.settings import Settings

SPARK = "spark"
DBT_SPARK_TARGET = "spark"  # the output of dbt_project/profiles.yml the spark engine runs


def uses_spark(settings: Settings) -> bool:
    return settings.engine == SPARK
