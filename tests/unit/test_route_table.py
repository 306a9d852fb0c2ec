"""The API's route table is the union of its route modules: every module of pipelines/serving/routes/ exports one
`<family>_routes(settings)`, each path is answered by exactly one family, and build_routes registers them all (a
new route module that is not added to routes/__init__.py fails here, not in production as a 404)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pipelines.serving.routes as routes_pkg
from pipelines.serving.routes import build_routes
from pipelines.settings import Settings


def _families() -> dict[str, dict]:
    settings = Settings()
    out = {}
    for info in pkgutil.iter_modules(routes_pkg.__path__):
        module = importlib.import_module(f"{routes_pkg.__name__}.{info.name}")
        builders = [fn for name, fn in inspect.getmembers(module, inspect.isfunction)
                    if name.endswith("_routes") and fn.__module__ == module.__name__]
        assert len(builders) == 1, f"routes/{info.name}.py: export one <family>_routes(settings), found {builders}"
        out[info.name] = builders[0](settings)
    return out


def test_every_route_module_is_in_the_route_table() -> None:
    families = _families()
    assert {"allocation", "assets", "summary", "savings", "metrics"} <= set(families)
    table = build_routes(Settings())
    seen: dict[str, str] = {}
    for family, paths in families.items():
        assert paths, f"routes/{family}.py serves no path"
        for path in paths:
            assert path not in seen, f"{path} is served by routes/{seen[path]}.py and routes/{family}.py"
            seen[path] = family
    assert set(table) == set(seen), f"not in build_routes: {sorted(set(seen) - set(table))}"
