"""The console display of a CLI run: one line per stage with its timing, a live progress bar (rich) on a
terminal, plain progress lines at most every PLAIN_PROGRESS_EVERY_S otherwise, and the check results the summary
prints. What feeds it (Dagster events, dbt's lines, landed hours) is progress.py's Observer.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

PLAIN_PROGRESS_EVERY_S = 30.0  # without a terminal, a progress line per long stage at most this often
STAGE_LABELS = {"reference": "reference", "extract": "extract", "transform": "transform", "checks": "checks",
                "publish": "publish"}


@dataclass
class Stage:
    key: str
    started: float
    total: float | None = None
    done: float = 0
    unit: str = ""
    status: str = "ok"
    detail: str = ""
    task: Any = None
    last_plain: float = 0.0


@dataclass
class CheckResult:
    asset: str
    name: str
    passed: bool
    detail: str
    warning: bool = False  # failed at severity WARN: reported, nothing blocked


class Reporter:
    """Stage lines, progress (live on a terminal, plain lines otherwise) and console messages."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, live: bool | None = None) -> None:
        self.out, self.err = out or sys.stdout, err or sys.stderr
        if live is None:
            live = _isatty(self.out) and os.environ.get("TERM") != "dumb"
        self.live = live
        self.stages: dict[str, Stage] = {}
        self.current: str | None = None
        self.timings: dict[str, float] = {}
        self.checks: list[CheckResult] = []
        self.dbt_problems: list[str] = []
        # progress.Observer, attached by progress.start_logging: the display never imports what feeds it
        self.observer: Any = None
        self._progress: Any = None

    # output ----------------------------------------------------------------------------------------------
    def echo(self, text: str, err: bool = False) -> None:
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False, soft_wrap=True)
            return
        stream = self.err if err else self.out
        stream.write(text + "\n")
        stream.flush()

    def _live(self) -> Any:
        if self._progress is None and self.live:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(SpinnerColumn(), TextColumn("  {task.description}"), BarColumn(),
                                      TextColumn("{task.fields[count]}"), TimeElapsedColumn(),
                                      console=Console(file=self.out), transient=True)
            self._progress.start()
        return self._progress

    def close(self) -> None:
        self.finish_stage()
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    # stages ----------------------------------------------------------------------------------------------
    def start_stage(self, key: str, total: float | None = None, unit: str = "") -> Stage:
        if self.current == key:
            return self.stages[key]
        self.finish_stage()
        stage = Stage(key, time.perf_counter(), total, 0, unit, last_plain=time.perf_counter())
        self.stages[key] = stage
        self.current = key
        progress = self._live()
        if progress is not None:
            stage.task = progress.add_task(STAGE_LABELS.get(key, key), total=total, count=_count(stage))
        return stage

    def advance(self, key: str, done: float | None = None, total: float | None = None, unit: str | None = None
                ) -> None:
        stage = self.stages.get(key)
        if stage is None or self.current != key:
            return
        if total is not None:
            stage.total = total
        if done is not None:
            stage.done = done
        if unit is not None:
            stage.unit = unit
        if stage.task is not None and self._progress is not None:
            self._progress.update(stage.task, completed=stage.done, total=stage.total, count=_count(stage))
        elif not self.live:
            now = time.perf_counter()
            if now - stage.last_plain >= PLAIN_PROGRESS_EVERY_S and stage.total:
                stage.last_plain = now
                self.echo(f"  {STAGE_LABELS.get(key, key)}: {stage.done:.0f} of {stage.total:.0f} {stage.unit}")

    def set_status(self, key: str, status: str, detail: str | None = None) -> None:
        stage = self.stages.get(key)
        if stage is not None:
            stage.status = status
            if detail is not None:
                stage.detail = detail

    def finish_stage(self) -> None:
        key, self.current = self.current, None
        if key is None:
            return
        stage = self.stages[key]
        elapsed = time.perf_counter() - stage.started
        self.timings[key] = self.timings.get(key, 0.0) + elapsed
        if stage.task is not None and self._progress is not None:
            self._progress.remove_task(stage.task)
            stage.task = None
        detail = stage.detail or (f"{stage.done:.0f} {stage.unit}" if stage.unit and stage.done else "")
        self.echo(f"  {STAGE_LABELS.get(key, key)}: {stage.status} in {elapsed:.1f} s"
                  + (f" ({detail})" if detail else ""))


def _count(stage: Stage) -> str:
    """'33/145 dbt nodes' when the total is known, else nothing (the bar pulses)."""
    return f"{stage.done:.0f}/{stage.total:.0f} {stage.unit}" if stage.total else ""


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
