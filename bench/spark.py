"""`python -m bench --engine spark`: after each scale's DuckDB stages, the same day on the Spark engine (local
mode, one JVM) in the same run, from the same raw tables, and the two engines' marts compared.

The Spark stage runs in its own child process like every stage; inside it, each step is timed (JVM start, lake
export, dbt seed, lookups, transform, marts back into DuckDB) and the peak RSS is sampled over the whole process
tree (the Python process and the JVM it starts: `ru_maxrss` would only give the larger of the two).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.runner import StageResult, run_stage

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def tree_rss_kib(root: int) -> int:
    """Resident KiB of `root` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields[21]) * PAGE_KIB
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total


class TreeRssSampler:
    """Peak resident memory of this process tree, sampled every `interval_s` in a thread."""

    def __init__(self, interval_s: float = 0.25) -> None:
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval_s,), daemon=True)

    def _run(self, interval_s: float) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, tree_rss_kib(os.getpid()))
            self._stop.wait(interval_s)

    def __enter__(self) -> TreeRssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_kib = max(self.peak_kib, tree_rss_kib(os.getpid()))


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*.parquet")) if path.is_dir() else 0


def stage_spark(p: dict[str, Any]) -> dict[str, Any]:
    """The day on Spark: a copy of the DuckDB stages' warehouse (raw tables, seeds) gets the Spark marts."""
    from bench.params import day_hours, dbt_args, paths, settings_for, window
    from pipelines.engines import spark as engine
    from pipelines.engines.marts_load import load_marts
    from pipelines.engines.spark_session import get_session, stop_session
    from pipelines.sources.boavizta import extract_boavizta_impacts
    from pipelines.sources.carbon.extract import extract_carbon
    from pipelines.warehouse.connection import open_warehouse
    from pipelines.warehouse.lookups import LOOKUPS_MODEL

    wd = Path(p["workdir"]) / "spark"
    shutil.rmtree(wd, ignore_errors=True)
    wd.mkdir(parents=True)
    shutil.copyfile(paths(p)["warehouse"], wd / "kubeledger.duckdb")
    base = settings_for(p)
    settings = replace(base, engine="spark", warehouse=replace(base.warehouse, path=str(wd / "kubeledger.duckdb")))
    start, end = window(p)
    target = wd / "dbt_target"
    steps: dict[str, float] = {}

    def timed(name: str, fn: Any) -> Any:
        t = time.perf_counter()
        out = fn()
        steps[name] = round(time.perf_counter() - t, 2)
        return out

    def dbt(command: list[str]) -> engine.DbtCall:
        args = dbt_args(p, command)
        # bench.params.dbt_args names the DuckDB stages' folders: the spark run's own instead
        args[args.index("--target-path") + 1] = args[args.index("--log-path") + 1] = str(target)
        args = [a for a in args if a not in ("--project-dir", "--profiles-dir", str(engine.DBT_PROJECT_DIR))]
        call = engine.run_dbt(settings, args, target)
        if not call.success:
            raise SystemExit(f"dbt on Spark {' '.join(command)} failed: {'; '.join(call.errors[-3:])}")
        return call

    def lookups() -> None:
        call = dbt(["run", "--select", f"+{LOOKUPS_MODEL}", "--exclude", "resource_type:seed"])
        engine.copy_lookups(settings, call)
        with open_warehouse(settings) as con:
            extract_carbon(settings, con, day_hours(p))  # as the DuckDB lookups stage
            extract_boavizta_impacts(settings, con)
        engine.export_window(settings, start, end, None)  # the extracts' tables into the lake

    with TreeRssSampler() as sampler:
        timed("jvm_start", lambda: get_session(settings))
        lake_rows = timed("lake_export", lambda: engine.export_window(settings, start, end, None))
        timed("dbt_seed", lambda: dbt(["seed"]))
        timed("lookups", lookups)
        timed("transform", lambda: dbt(["run", "--select", "staging", "intermediate", "marts"]))
        loaded = timed("marts_load", lambda: load_marts(settings, target / "manifest.json", start, end))
        stop_session()
    lake = Path(settings.lake_root)
    raw_rows = sum(lake_rows.values())
    return {"rows_in": raw_rows, "rows_out": sum(loaded.values()), "seconds": steps["transform"], "steps": steps,
            "tree_peak_rss_mib": sampler.peak_kib / 1024, "lake_raw_bytes": _dir_bytes(lake / "raw"),
            "lake_marts_bytes": _dir_bytes(lake / "marts"), "lake_raw_rows": raw_rows, "loaded": loaded}


def run_spark_scale(params: dict[str, Any], logs: Path) -> StageResult:
    """The Spark stage of one scale (after the DuckDB stages), and its marts compared with DuckDB's."""
    from pipelines import PROJECT_ROOT

    print("  spark (local[2]) ...", end="", flush=True)
    r = run_stage("spark", "spark", params, logs)
    wd = Path(params["workdir"])
    cmp = subprocess.run([sys.executable, str(PROJECT_ROOT / "scripts" / "compare_marts.py"),
                          str(wd / "kubeledger.duckdb"), str(wd / "spark" / "kubeledger.duckdb"), "--abs", "1e-9",
                          "--rel", "1e-9", "--skip", "carbon_intensity_g_per_kwh,pue,evidence"], capture_output=True, text=True, check=False)
    r.data["identical"] = cmp.returncode == 0
    r.data["compare"] = (cmp.stdout + cmp.stderr)[-2000:]
    print(f" {r.wall_s:.1f} s, tree peak {r.data['tree_peak_rss_mib']:,.0f} MiB, marts "
          f"{'identical to DuckDB' if r.data['identical'] else 'DIFFER from DuckDB'}", flush=True)
    return r


def format_side_by_side(nodes: int, duck: list[StageResult], spark: StageResult) -> str:
    """DuckDB's and Spark's stages of one scale in one table: wall, peak RSS, raw rows per transform second."""
    by = {s.name: s for s in duck}
    d = spark.data
    steps = d["steps"]
    transform = by.get("dbt transform")
    raw = transform.rows_in if transform else d["lake_raw_rows"]
    head = f"{'engine / step':<28}{'wall s':>9}{'peak RSS MiB':>14}{'raw rows/s':>12}"
    lines = [f"DuckDB and Spark side by side, {nodes:,} nodes ({raw:,} raw rows in the day)", head, "-" * len(head)]
    for name in ("load", "dbt seed", "lookups", "dbt transform", "publish"):
        if name in by:
            s = by[name]
            rate = f"{raw / s.wall_s:,.0f}" if name == "dbt transform" and s.wall_s else ""
            lines.append(f"{'duckdb ' + name:<28}{s.wall_s:>9.1f}{s.peak_rss_mib:>14,.0f}{rate:>12}")
    for name in ("jvm_start", "lake_export", "dbt_seed", "lookups", "transform", "marts_load"):
        rate = f"{raw / steps[name]:,.0f}" if name == "transform" and steps[name] else ""
        lines.append(f"{'spark ' + name.replace('_', ' '):<28}{steps[name]:>9.1f}{'':>14}{rate:>12}")
    lines.append(f"{'spark stage (all, one JVM)':<28}{spark.wall_s:>9.1f}{d['tree_peak_rss_mib']:>14,.0f}{'':>12}")
    lines.append(f"lake: raw {d['lake_raw_bytes'] / 2**20:,.1f} MiB ({d['lake_raw_bytes'] / max(raw, 1):.1f} bytes/row), "
                 f"marts {d['lake_marts_bytes'] / 2**20:,.1f} MiB; marts "
                 + ("identical to DuckDB's (1e-9)" if d.get("identical") else "DIFFER from DuckDB's:\n" + d["compare"]))
    return "\n".join(lines)
