"""Which views and tables a dbt call rebuilds for its window before building its selection
(pipelines/engines/dbt_dagster.window_ancestors)."""

from pipelines.engines.dbt_dagster import window_ancestors


def _manifest(**models: tuple[str, list[str]]) -> dict:
    nodes = {f"model.p.{name}": {"name": name, "resource_type": "model", "config": {"materialized": mat}}
             for name, (mat, _) in models.items()}
    nodes["seed.p.prices"] = {"name": "prices", "resource_type": "seed", "config": {"materialized": "seed"}}
    parents = {f"model.p.{name}": parents for name, (_, parents) in models.items()}
    return {"nodes": nodes, "parent_map": parents}


MANIFEST = _manifest(
    stg=("view", ["source.p.raw.hours"]),
    enriched=("table", ["model.p.stg", "seed.p.prices"]),
    energy=("incremental", ["model.p.enriched"]),
    inline=("ephemeral", ["model.p.enriched"]),
    workload=("table", ["model.p.inline", "model.p.energy"]),
    mart=("incremental", ["model.p.workload", "model.p.energy"]),
)


def test_the_unselected_views_and_tables_upstream_are_rebuilt():
    assert window_ancestors(MANIFEST, {"model.p.mart"}) == ["enriched", "stg", "workload"]


def test_what_the_call_builds_itself_is_not_repeated():
    assert window_ancestors(MANIFEST, {"model.p.mart", "model.p.workload"}) == ["enriched", "stg"]
    assert window_ancestors(MANIFEST, {"model.p.stg", "model.p.enriched", "model.p.energy", "model.p.workload",
                                       "model.p.mart"}) == []


def test_the_walk_stops_at_incremental_models_and_seeds():
    # energy keeps every day: its own upstream need not be this window's
    assert window_ancestors(MANIFEST, {"model.p.energy", "model.p.mart", "model.p.workload"}) == ["enriched", "stg"]
    only_energy = _manifest(energy=("incremental", ["seed.p.prices"]), mart=("incremental", ["model.p.energy"]))
    assert window_ancestors(only_energy, {"model.p.mart"}) == []
