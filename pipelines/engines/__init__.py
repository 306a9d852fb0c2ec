"""Where dbt runs: `duckdb` (dbt-duckdb on the warehouse file, the default, in the step's process: dbt_runner.py) or
`spark` (dbt-spark in this process over the Parquet lake; spark.py), chosen by the `engine` setting."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipelines.settings import Settings

SPARK = "spark"
DBT_SPARK_TARGET = "spark"  # the output of dbt_project/profiles.yml the spark engine runs

# Which tests a dbt call runs beside the models it selects: only those whose models are all selected or upstream
# of the selection. In an asset backfill the Dagster daemon runs the dbt assets in subsets, each as soon as its
# upstream assets have landed, so one run may build fct_asset_daily and a later one fct_allocation_daily. dbt's
# default ("eager") runs a test when any one of its models is selected: the reconciliation between the two marts
# then ran in the first run, against a mart not yet built for those days, and failed the backfill. A call that
# builds every model (the schedule, the CLI) selects the same tests either way.
INDIRECT_SELECTION = "buildable"
TEST_SELECTION_ENV = {"DBT_INDIRECT_SELECTION": INDIRECT_SELECTION}  # every engine's dbt calls


def uses_spark(settings: Settings) -> bool:
    return settings.engine == SPARK
