"""What the window's nodes need from outside sources, as dbt derived it (model int_nodes_required_lookups).

The dbt lookups asset builds the model for the run's window before the carbon-intensity and Boavizta extracts
read it, so provider, region, zone and instance-key rules live in dbt only."""

from __future__ import annotations

import duckdb

LOOKUPS_MODEL = "int_nodes_required_lookups"
LOOKUPS_RELATION = f"intermediate.{LOOKUPS_MODEL}"
CARBON_ZONE = "carbon_zone"
BOAVIZTA_INSTANCE = "boavizta_instance"


class LookupsMissing(RuntimeError):
    """The lookups model was not built before an extract that reads it."""


def required_lookups(con: duckdb.DuckDBPyConnection, kind: str) -> list[tuple[str | None, str]]:
    """(provider, key) pairs of one lookup kind, sorted; provider is None for carbon zones."""
    try:
        rows = con.execute(f"select provider, lookup_key from {LOOKUPS_RELATION} where lookup_kind = ? "  # noqa: S608
                           "order by provider nulls first, lookup_key", [kind]).fetchall()
    except duckdb.CatalogException:
        raise LookupsMissing(f"{LOOKUPS_RELATION} does not exist: build the dbt model {LOOKUPS_MODEL} for the "
                             "window first (the dbt_lookups asset)") from None
    return [(p, k) for p, k in rows]
