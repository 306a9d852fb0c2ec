"""`python -m bench --demo-e2e`: the small day end to end, through the `kubeledger` command as a user runs it.

Three timings, each a child process (wall from the parent's clock, peak RSS from os.wait4), each with the load
average beside it (the machine is shared):

- demo day cold: `kubeledger demo --date D` into a fresh warehouse and Dagster instance (reference run, dbt parse);
- warm second materialize: `kubeledger materialize --date D` again on that warehouse (issue 25: ≤ 15 s, its
  Dagster setup ≤ 2 s);
- 30-day backfill: `kubeledger backfill` of the 30 days ending at D into another fresh warehouse (≤ 30 s).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from bench.runner import StageError, StageResult
from pipelines import PROJECT_ROOT

DEMO_DAY = date(2026, 11, 28)
BACKFILL_DAYS = 30
# issue 25 (fast feedback): a warm day ≤ 15 s, its Dagster setup ≤ 2 s, the 30-day backfill ≤ 30 s
TARGETS_S = {"warm materialize": 15.0, "30-day backfill": 30.0}
SETUP_TARGET_S = 2.0


def _config(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / "kubeledger.yaml"
    cfg.write_text(f"warehouse:\n  path: {folder}/wh/kubeledger.duckdb\n  serving_path: {folder}/wh/serving.duckdb\n"
                   f"  parquet_path: {folder}/wh/parquet\n")
    return cfg


def _load() -> float:
    return os.getloadavg()[0]


def run_cli(name: str, folder: Path, args: list[str]) -> StageResult:
    """`python -m pipelines.cli --config <folder>/kubeledger.yaml ARGS` with DAGSTER_HOME under the folder."""
    cfg = folder / "kubeledger.yaml"
    env = dict(os.environ, DO_NOT_TRACK="1", DAGSTER_HOME=str(folder / "dh"), PYTHONPATH=os.pathsep.join(
        [str(PROJECT_ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    log_path = folder / f"{name.replace(' ', '_')}.log"
    load_before = _load()
    t = time.perf_counter()
    with log_path.open("w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "--config", str(cfg), *args],
                                stdout=log, stderr=subprocess.STDOUT, cwd=str(folder), env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise StageError(f"{name} failed; log {log_path}:\n{log_path.read_text()[-3000:]}")
    stages = [ln.strip() for ln in log_path.read_text().splitlines() if ": ok in " in ln or ": skipped in " in ln]
    return StageResult(name=name, wall_s=wall, peak_rss_mib=usage.ru_maxrss / 1024.0,
                       data={"load_before": load_before, "load_after": _load(), "stages": stages})


def run_demo_e2e(root: Path, day: date = DEMO_DAY, days: int = BACKFILL_DAYS) -> list[StageResult]:
    one, many = root / "demo-day", root / "demo-backfill"
    for folder in (one, many):
        if folder.exists():
            raise StageError(f"{folder} exists: give --workdir a fresh folder")
        _config(folder)
    start = day - timedelta(days=days - 1)
    return [
        run_cli("demo day cold", one, ["demo", "--date", day.isoformat()]),
        run_cli("warm materialize", one, ["materialize", "--date", day.isoformat()]),
        run_cli(f"{days}-day backfill", many, ["backfill", "--start", start.isoformat(), "--end", day.isoformat()]),
    ]


def format_demo_e2e(results: list[StageResult]) -> str:
    lines = ["The small day (12-node demo, `kubeledger` CLI end to end)",
             f"{'what':<22}{'wall s':>9}{'peak RSS MiB':>14}{'target s':>10}   load (1 min) before → after"]
    for r in results:
        target = TARGETS_S.get(r.name)
        mark = "" if target is None else f"{target:>8.0f} {'ok' if r.wall_s <= target else 'MISS'}"
        lines.append(f"{r.name:<22}{r.wall_s:>9.1f}{r.peak_rss_mib:>14.0f}{mark:>10}   "
                     f"{r.data['load_before']:.2f} → {r.data['load_after']:.2f}")
        lines += [f"    {s}" for s in r.data.get("stages", [])]
        setup = _setup_s(r.data.get("stages", []))
        if r.name == "warm materialize" and setup is not None:
            lines.append(f"    Dagster setup {setup:.1f} s (target ≤ {SETUP_TARGET_S:g} s): "
                         + ("ok" if setup <= SETUP_TARGET_S else "MISS"))
    return "\n".join(lines)


def _setup_s(stages: list[str]) -> float | None:
    """The seconds of the run's `setup: ok in X s` line (the CLI's stage lines), if it printed one."""
    for line in stages:
        if line.startswith("setup: ok in "):
            try:
                return float(line.split()[3])
            except (IndexError, ValueError):
                return None
    return None


def results_json(results: list[StageResult]) -> list[dict[str, Any]]:
    return [vars(r) for r in results]
