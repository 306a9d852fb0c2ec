"""The import graph of pipelines/ and bench/ runs one way: down the LAYERS below, never round a circle.

Every import counts: at the top of a module, inside a function (a lazy import is still a dependency, only a later
one) and under TYPE_CHECKING. docs/ARCHITECTURE.md says what each room is for.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from pipelines import PROJECT_ROOT

PACKAGES = ("pipelines", "bench")

# room -> its modules: a dotted name is that module; "pkg.**" is a package and everything under it (so the
# serving room keeps whatever subpackages it grows)
ROOMS: dict[str, tuple[str, ...]] = {
    "core": ("pipelines", "pipelines.environ", "pipelines.jsonsafe", "pipelines.redaction", "pipelines.registry",
             "pipelines.timeutil"),
    "settings": ("pipelines.settings", "pipelines.settings_models", "pipelines.settings_rules",
                 "pipelines.settings_validation", "pipelines.days"),
    "warehouse": ("pipelines.warehouse.**",),
    "sources": ("pipelines.sources.**",),
    "engines": ("pipelines.engines.**",),
    "serving": ("pipelines.serving.**",),
    "report": ("pipelines.report.**",),
    "dagster": ("pipelines.dagster_defs.**", "pipelines.definitions"),
    "cli": ("pipelines.cli", "pipelines.bench_command", "pipelines.check_config", "pipelines.demo_faults",
            "pipelines.focus_export_cli", "pipelines.lake_cli", "pipelines.progress", "pipelines.progress_display", "pipelines.recommend_cli",
            "pipelines.reference_inputs", "pipelines.runs", "pipelines.status"),
    "bench": ("bench.**",),
}

# Lowest first. A room imports its own modules and rooms of lower layers only; rooms sharing a layer never import
# each other (sources land into the warehouse, engines transform it, serving reads it: none needs the others).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("settings",),
    ("warehouse",),
    ("sources", "engines", "serving"),
    ("report",),
    ("dagster",),
    ("cli",),
    ("bench",),
)
LAYER_OF = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}


class Import(NamedTuple):
    source: str  # the importing module
    target: str  # the imported module (a name imported from a module counts as that module)
    where: str  # file:line of the import statement


def _modules(root: Path = PROJECT_ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of `name` that is one of our modules (`a.b.attr` -> `a.b`), None when outside them."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in modules else None


def _imports(modules: dict[str, Path], root: Path = PROJECT_ROOT) -> Iterator[Import]:
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        where = path.relative_to(root)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: `from . import x` in a package's __init__ is the package itself
                    base = module.split(".")
                    base = base[:len(base) - node.level + (1 if is_package else 0)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                # `from pkg import sub` imports the submodule; `from pkg import name` the package
                names = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules else prefix
                         for alias in node.names]
            else:
                continue
            for name in dict.fromkeys(names):
                target = _known(name, modules)
                if target is not None and target != module:
                    yield Import(module, target, f"{where}:{node.lineno}")


def _room(module: str) -> str | None:
    for room, members in ROOMS.items():
        for member in members:
            if member.endswith(".**"):
                package = member[:-3]
                if module == package or module.startswith(package + "."):
                    return room
            elif module == member:
                return room
    return None


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of the graph: per strongly connected component (Tarjan), the shortest circle through each of
    its members, each circle once, as a path a -> ... -> a."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    circles: dict[tuple[str, ...], list[str]] = {}
    for component in components:
        for start in sorted(component):
            circle = _circle(graph, component, start)
            turn = circle.index(min(circle[:-1]))  # one spelling per circle, whichever member it was found from
            circles.setdefault(tuple(circle[turn:-1] + circle[:turn]), circle)
    return list(circles.values())


def _circle(graph: dict[str, set[str]], members: set[str], start: str) -> list[str]:
    """A shortest path from `start` back to itself inside its component (breadth first)."""
    paths = {start: [start]}
    todo = [start]
    while todo:
        node = todo.pop(0)
        for nxt in sorted(graph.get(node, ()) & members):
            if nxt == start:
                return [*paths[node], start]
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                todo.append(nxt)
    raise AssertionError("every member of a strongly connected component is on a circle")


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return list(_imports(_modules()))


def test_the_scan_sees_lazy_relative_and_type_checking_imports(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "from .sub import thing\n",
        "pkg/sub/__init__.py": "thing = 1\n",
        "pkg/sub/leaf.py": "from . import sibling\nfrom .. import top\n",
        "pkg/sub/sibling.py": "def f():\n    import pkg.lazy\n",
        "pkg/top.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import thing\n",
        "pkg/lazy.py": "import os\nfrom pkg.top import name\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = {(i.source, i.target, i.where) for i in _imports(_modules(tmp_path, ("pkg",)), tmp_path)}
    assert found == {
        ("pkg", "pkg.sub", "pkg/__init__.py:1"),  # relative, from a package's __init__
        ("pkg.sub.leaf", "pkg.sub.sibling", "pkg/sub/leaf.py:1"),  # `from . import module`
        ("pkg.sub.leaf", "pkg.top", "pkg/sub/leaf.py:2"),  # two dots
        ("pkg.sub.sibling", "pkg.lazy", "pkg/sub/sibling.py:2"),  # inside a function
        ("pkg.top", "pkg.sub", "pkg/top.py:3"),  # under TYPE_CHECKING; a name counts as its module
        ("pkg.lazy", "pkg.top", "pkg/lazy.py:2"),  # outside packages (os, typing) are not ours
    }


def test_every_module_has_one_room() -> None:
    homeless = [m for m in _modules() if _room(m) is None]
    assert not homeless, f"add these modules to a room of ROOMS (and docs/ARCHITECTURE.md): {homeless}"
    assert set(ROOMS) == set(LAYER_OF), "every room has a layer and every layer's room is defined"


def test_imports_go_down_the_layers(imports: list[Import]) -> None:
    wrong = []
    for imp in imports:
        src, dst = _room(imp.source), _room(imp.target)
        if src is None or dst is None or src == dst or LAYER_OF[dst] < LAYER_OF[src]:
            continue
        rule = ("rooms of one layer never import each other" if LAYER_OF[dst] == LAYER_OF[src]
                else "a room imports only lower layers")
        wrong.append(f"{imp.where}: {imp.source} imports {imp.target}: {src} (layer {LAYER_OF[src]}) -> "
                     f"{dst} (layer {LAYER_OF[dst]}); {rule}")
    assert not wrong, "imports against the LAYERS:\n" + "\n".join(wrong)


def _graph(pairs: list[tuple[str, str, str]]) -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    graph: dict[str, set[str]] = {}
    example: dict[tuple[str, str], str] = {}
    for src, dst, where in pairs:
        if src != dst:
            graph.setdefault(src, set()).add(dst)
            example.setdefault((src, dst), where)
    return graph, example


def _describe(circle: list[str], example: dict[tuple[str, str], str]) -> str:
    hops = [f"{a} -> {b} ({example[a, b]})" for a, b in zip(circle, circle[1:], strict=False)]
    return "  circle: " + "; ".join(hops)


def test_no_circle_between_rooms(imports: list[Import]) -> None:
    graph, example = _graph([(_room(i.source) or i.source, _room(i.target) or i.target, i.where) for i in imports])
    circles = _cycles(graph)
    assert not circles, "rooms importing each other:\n" + "\n".join(_describe(c, example) for c in circles)


def test_no_circle_between_modules(imports: list[Import]) -> None:
    graph, example = _graph([(i.source, i.target, i.where) for i in imports])
    circles = _cycles(graph)
    assert not circles, "modules importing each other:\n" + "\n".join(_describe(c, example) for c in circles)
