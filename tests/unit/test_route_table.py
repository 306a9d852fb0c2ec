"""The API's route table is the union of its route modules, found without a list: every module of
pipelines/serving/routes/ exports one `<family>_routes(settings)`, each path is answered by exactly one family, and
build_routes serves them all (a new route module is served by being there)."""

from __future__ import annotations

import pytest

from pipelines.serving.routes import build_routes, family_builder, route_modules
from pipelines.settings import Settings


def _families() -> dict[str, dict]:
    settings = Settings()
    return {m.__name__.rsplit(".", 1)[1]: family_builder(m)(settings) for m in route_modules()}


def test_every_route_module_is_in_the_route_table() -> None:
    families = _families()
    assert {"allocation", "assets", "cloud_cost", "summary", "savings", "metrics", "decisions"} <= set(families)
    table = build_routes(Settings())
    seen: dict[str, str] = {}
    for family, paths in families.items():
        assert paths, f"routes/{family}.py serves no path"
        for path in paths:
            assert path not in seen, f"{path} is served by routes/{seen[path]}.py and routes/{family}.py"
            seen[path] = family
    assert set(table) == set(seen)
    assert {"/model/allocation", "/allocation", "/model/assets", "/model/cloudCost", "/metrics"} <= set(table)


def test_a_module_without_one_builder_is_named_at_start_up() -> None:
    import types

    module = types.ModuleType("pipelines.serving.routes.broken")
    with pytest.raises(RuntimeError, match=r"routes\.broken: a route module exports one <family>_routes"):
        family_builder(module)
