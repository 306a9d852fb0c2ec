"""Resources, all configured from the one Settings object."""


from functools import cached_property

import dagster as dg
import duckdb

from pipelines.settings import Settings, load_settings
from pipelines.steps import open_warehouse


class KubeledgerResource(dg.ConfigurableResource):
    """The settings (kubeledger.yaml) and the warehouse connection the Python steps use."""

    config_path: str | None = None

    @cached_property
    def settings(self) -> Settings:
        return load_settings(self.config_path)

    def connect(self, read_only: bool = False) -> duckdb.DuckDBPyConnection:
        return open_warehouse(self.settings, read_only=read_only)
