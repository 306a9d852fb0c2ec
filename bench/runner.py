"""Run a stage in a child process and measure it: wall seconds (parent clock) and peak RSS (ru_maxrss of that
child, from os.wait4, so stages never mask each other's peaks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines import PROJECT_ROOT


class StageError(RuntimeError):
    pass


@dataclass
class StageResult:
    name: str
    wall_s: float
    peak_rss_mib: float
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def rows_in(self) -> int:
        return int(self.data.get("rows_in") or 0)

    @property
    def rows_out(self) -> int:
        return int(self.data.get("rows_out") or 0)

    @property
    def work_s(self) -> float:
        return float(self.data.get("seconds") or 0.0)


def run_stage(name: str, stage: str, params: dict[str, Any], log_dir: Path) -> StageResult:
    log_dir.mkdir(parents=True, exist_ok=True)
    fd, result_path = tempfile.mkstemp(prefix=f"{stage}-", suffix=".json", dir=log_dir)
    os.close(fd)
    log_path = log_dir / f"{name.replace(' ', '_')}.log"
    env = dict(os.environ, DO_NOT_TRACK="1", PYTHONPATH=os.pathsep.join(
        [str(PROJECT_ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    t = time.perf_counter()
    with log_path.open("w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "bench.stages", stage, json.dumps(params), result_path],
                                stdout=log, stderr=subprocess.STDOUT, cwd=str(PROJECT_ROOT), env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    rss_mib = usage.ru_maxrss / 1024.0  # Linux: KiB
    if proc.returncode != 0:
        tail = log_path.read_text()[-3000:]
        raise StageError(f"stage {name} failed (exit {proc.returncode}); log {log_path}:\n{tail}")
    data = json.loads(Path(result_path).read_text() or "{}")
    Path(result_path).unlink(missing_ok=True)
    return StageResult(name=name, wall_s=wall, peak_rss_mib=rss_mib, data=data)
