"""The pipelines package never imports the benchmarks (bench -> pipelines only); `kubeledger bench` still runs
them, as their own program."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pipelines import PROJECT_ROOT
from pipelines.bench_command import main as bench_main


def _imported_modules(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_pipelines_never_imports_bench() -> None:
    offenders = sorted(
        f"{path.relative_to(PROJECT_ROOT)}: {name}"
        for path in (PROJECT_ROOT / "pipelines").rglob("*.py")
        for name in _imported_modules(path)
        if name == "bench" or name.startswith("bench.")
    )
    assert offenders == []


def test_bench_command_runs_the_benchmarks_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # found beside the pipelines package, not through the working directory
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert bench_main(["--help"]) == 0
    assert "usage: python -m bench" in capfd.readouterr().out
    assert bench_main(["--no-such-option"]) == 2  # the program's own exit status comes back
