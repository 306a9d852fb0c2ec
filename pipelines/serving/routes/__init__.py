"""The API's route table: which path answers what, over a cursor on one serving snapshot (docs/API.md).

One module per API family, each exporting one `<family>_routes(settings) -> {path: Route}`. `build_routes` finds
the modules of this package and joins their tables, so a new endpoint is one route module (and its test): nothing
else registers it. Paths are distinct across families (tests/unit/test_route_table.py), so the join's order never
changes an answer."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from types import ModuleType

from pipelines.serving.http.app import Route
from pipelines.settings import Settings

RouteTable = dict[str, Route]


def family_builder(module: ModuleType) -> Callable[[Settings], RouteTable]:
    """The module's one `<family>_routes` function (defined there, not imported); a module without exactly one is a
    mistake named at start-up, never a silent 404."""
    builders = [fn for name, fn in inspect.getmembers(module, inspect.isfunction)
                if name.endswith("_routes") and fn.__module__ == module.__name__]
    if len(builders) != 1:
        raise RuntimeError(f"{module.__name__}: a route module exports one <family>_routes(settings), "
                           f"found {[fn.__name__ for fn in builders]}")
    return builders[0]


def route_modules() -> list[ModuleType]:
    """Every route module of this package, by name."""
    return [importlib.import_module(f"{__name__}.{info.name}")
            for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)]


def build_routes(settings: Settings) -> RouteTable:
    routes: RouteTable = {}
    for module in route_modules():
        table = family_builder(module)(settings)
        clash = sorted(set(routes) & set(table))
        if clash:
            raise RuntimeError(f"{module.__name__} serves {clash}, which another route module serves already")
        routes.update(table)
    return routes
