"""`python -m bench` / `kubeledger bench`: the daily pipeline at real cluster sizes, stage by stage.

    python -m bench                          # 100, 1,000 and 5,000 nodes (30 pods/node, 2 containers/pod), one day
    python -m bench --scales 100,1000        # a subset
    python -m bench --scales 1000 --days 30  # one real day replicated to 30 in the marts, 30-day query latency
    python -m bench --scales 100 --baseline DIR  # marts compared with a kept earlier run's (before/after a change)
    python -m bench --scales 1000 --rerun    # also the same day transformed again (a re-run replaces its day)
    python -m bench --scales 1000 --history 30  # day 30 of a 30-day backfill vs day 1 (history must not slow it)
    python -m bench --prometheus             # 200-node / 4,000-pod TSDB, extraction seconds and queries per hour
    python -m bench --demo-e2e               # 12-node demo via the CLI: cold day, warm re-run, 30-day backfill

Exit status: 0 when every reconciliation (and --baseline comparison) passes, 1 on a FAIL, 2 on a stage error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from bench import SCALES
from bench.report import (
    RERUN,
    format_history,
    format_models,
    format_queries,
    format_reconciliation,
    format_table,
    history_ratios,
    reconcile,
    summary_row,
)
from bench.runner import StageError, StageResult, run_stage
from bench.stages import layer_rows
from pipelines import PROJECT_ROOT
from pipelines.sources.demo_shapes import DEMO_FEATURE_NODES

DEFAULT_DAY = date(2025, 3, 3)  # the day scripts/gen_prom_scale.py writes
TRANSFORM_LAYERS = ("staging", "intermediate", "marts")
# the targets as the issues write them: issue 26 (speed, third round) for the day at scale, issue 17 for the
# queries, the backfill's history and the Prometheus extraction
TARGETS = {
    "day_5000_s": 60.0,  # load + seed + lookups + transform + publish
    "day_5000_rss_mib": 3 * 1024.0,
    "model_1000_s": 5.0,  # dbt model time of the 1,000-node day
    "scan_ratio": 8.0,  # transform model time ÷ one scan-and-group of the container-hours
    "landing_rows_per_s": 2_000_000.0,
    "query_1000_30d_s": 0.25,  # p95, both shapes (issue 17)
    "query_5000_30d_s": 1.0,
    "prom_s_per_hour": 2.0,  # at 200 nodes / 4,000 pods (issue 17)
    "history_ratio": 1.2,  # day 30 of a 30-day backfill vs day 1 (issue 17)
}


def _scale_list(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip().replace("_", "")
        if not part:
            continue
        try:
            out.append(int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(f"--scales: {part!r} is not a node count") from None
    if not out:
        raise argparse.ArgumentTypeError("--scales: give node counts, e.g. 100,1000")
    return out


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", type=_scale_list, default=None,
                    help="node counts, comma separated (default 100,1000,5000; 30 pods per node, 2 containers "
                    "per pod unless --pods-per-node/--containers-per-pod)")
    ap.add_argument("--pods-per-node", type=int, default=None)
    ap.add_argument("--containers-per-pod", type=int, default=None)
    ap.add_argument("--hours", type=int, default=24, help="hours of the day to generate (default 24)")
    ap.add_argument("--days", type=int, default=1,
                    help="days in the warehouse: day 1 is built by the pipeline, days 2..N are SQL copies of it in "
                    "the marts (usage_date and timestamps shifted); queries then cover all N days")
    ap.add_argument("--history", type=int, default=0, metavar="N",
                    help="day N of an N-day backfill vs day 1: after day 1, days 2..N-1 are SQL copies of it (raw, "
                    "the recommendations' hourly history, marts), then day N is generated, loaded and transformed "
                    "by the same stages; prints day N ÷ day 1 (target <= 1.2x). Not with --days")
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="a workdir kept from an earlier run with the same options (--workdir DIR --keep): each "
                    "scale's marts are compared with it, rows and doubles to 1e-9 (FAIL when they differ)")
    ap.add_argument("--rerun", action="store_true",
                    help="transform the same day a second time, as a re-run, `kubeledger rebuild` or a backfill over "
                    "built days does (every incremental model replaces its day); prints re-run ÷ first build")
    ap.add_argument("--date", type=date.fromisoformat, default=DEFAULT_DAY, help="the day (default 2025-03-03)")
    ap.add_argument("--workdir", type=Path, help="where warehouses and caches go (default: a temp dir, removed)")
    ap.add_argument("--keep", action="store_true", help="keep the temp workdir")
    ap.add_argument("--memory-limit", default=os.environ.get("KUBELEDGER_DUCKDB_MEMORY", "4GB"),
                    help="DuckDB memory_limit for load and dbt (default $KUBELEDGER_DUCKDB_MEMORY or 4GB)")
    ap.add_argument("--threads", type=int, default=2, help="DuckDB threads for load/query (default 2)")
    ap.add_argument("--queries", type=int, default=20, help="queries per shape (default 20)")
    ap.add_argument("--query-budget-s", type=float, default=120.0,
                    help="stop repeating a query shape once its queries took this long (default 120 s; the table "
                    "shows how many ran)")
    ap.add_argument("--test", action="store_true", help="also time `dbt test` after the build")
    ap.add_argument("--per-layer", action="store_true",
                    help="run staging, intermediate and marts as separate dbt processes (default: one, as the pipeline)")
    ap.add_argument("--prometheus", action="store_true",
                    help="only the Prometheus extraction benchmark (200 nodes / 4,000 pods, one day)")
    ap.add_argument("--prom-nodes", type=int, default=200)
    ap.add_argument("--prom-pods-per-node", type=int, default=20)
    ap.add_argument("--prom-hours", type=int, default=24,
                    help="hours of the Prometheus day to build and extract (default 24; e.g. 6 at 1,000 nodes)")
    ap.add_argument("--demo-e2e", action="store_true",
                    help="the 12-node demo end to end through the CLI: cold day, warm re-run, 30-day backfill "
                    "(bench/demo_e2e.py); alone unless --scales is given")
    ap.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb",
                    help="spark: after each scale's DuckDB stages, the same day on the Spark engine (local[2], one "
                    "JVM) from the same raw tables, side by side, marts compared (needs `pip install -e '.[spark]'` "
                    "and Java 17)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    return ap


# --- demo scales -----------------------------------------------------------------------------------------


def scale_dirname(args: argparse.Namespace, nodes: int) -> str:
    return (f"scale-{nodes}" + (f"-{args.days}d" if args.days > 1 else "")
            + (f"-history{args.history}" if args.history else ""))


# the marts of a run against an earlier run's (--baseline): rows matched on their keys, doubles to 1e-9; intensity
# and PUE are energy-weighted means, ill-conditioned on idle rows whose energy is a round-off residue (~1e-17 kWh)
BASELINE_COMPARE = ["--rel", "1e-9", "--abs", "1e-9", "--json", "evidence", "--skip", "carbon_intensity_g_per_kwh,pue",
                    "--show", "1"]


def compare_to_baseline(baseline: Path, wd_name: str, root: Path) -> tuple[bool, str]:
    """scripts/compare_marts.py on this scale's warehouse and the same scale's in a kept earlier workdir."""
    before, after = baseline / wd_name / "kubeledger.duckdb", root / wd_name / "kubeledger.duckdb"
    if not before.is_file():
        return False, f"marts vs baseline: no {before} (run the baseline with --workdir DIR --keep, same options)"
    res = subprocess.run([sys.executable, str(PROJECT_ROOT / "scripts" / "compare_marts.py"), str(before), str(after),
                          *BASELINE_COMPARE], capture_output=True, text=True, check=False)
    lines = [ln[:300] for ln in res.stdout.splitlines()]
    verdict = "IDENTICAL" if res.returncode == 0 else "DIFFERENT"
    return res.returncode == 0, "\n".join([f"marts vs baseline {before.parent}: {verdict} (1e-9)", *lines])


def run_scale(args: argparse.Namespace, root: Path, nodes: int
              ) -> tuple[list[StageResult], StageResult | None, Any, list[StageResult]]:
    ppn, cpp = SCALES.get(nodes, (30, 2))
    ppn = args.pods_per_node or ppn
    cpp = args.containers_per_pod or cpp
    wd = root / scale_dirname(args, nodes)
    shutil.rmtree(wd, ignore_errors=True)
    wd.mkdir(parents=True)
    params: dict[str, Any] = {"workdir": str(wd), "nodes": nodes, "ppn": ppn, "cpp": cpp,
                              "day": args.date.isoformat(), "hours": args.hours, "days": 1,
                              "memory_limit": args.memory_limit, "threads": args.threads, "queries": args.queries,
                              "query_budget_s": args.query_budget_s}
    logs = wd / "logs"
    stages: list[StageResult] = []

    def step(name: str, stage: str, into: list[StageResult] | None = None, **extra: Any) -> StageResult:
        print(f"  {name} ...", end="", flush=True)
        r = run_stage(name, stage, {**params, **extra}, logs)
        if stage == "dbt" and extra.get("layer") != "test":
            r.data["rows_in"], r.data["rows_out"] = layer_rows({**params, **extra}, extra["layer"])
            r.data["seconds"] = sum((r.data.get("models") or {}).values())
        print(f" {r.wall_s:.1f} s, {r.peak_rss_mib:,.0f} MiB", flush=True)
        (stages if into is None else into).append(r)
        return r

    print(f"scale {nodes:,} nodes / {nodes * ppn:,} pods / {cpp} containers per pod -> {wd}", flush=True)
    step("generate", "generate")
    step("load", "load")
    step("dbt seed", "dbt", layer="seed")
    step("lookups", "lookups")
    if args.per_layer:
        for layer in TRANSFORM_LAYERS:
            step(f"dbt {layer}", "dbt", layer=layer)
    else:
        r = step("dbt transform", "dbt", layer="transform")
        by_layer: dict[str, float] = {}
        for model, secs in (r.data.get("models") or {}).items():
            name = {"stg": "staging", "int": "intermediate", "fct": "marts"}.get(model.split("_")[0], "other")
            by_layer[name] = by_layer.get(name, 0.0) + secs
        print("    model time by layer: " + ", ".join(f"{k} {v:.2f} s" for k, v in by_layer.items()), flush=True)
    step("scan pass", "scanpass")
    if args.rerun and not args.per_layer:
        again = step(RERUN, "dbt", layer="transform")
        print(f"    re-run ÷ first build: {again.wall_s / r.wall_s:.2f}× wall, "
              f"{again.data['seconds'] / max(r.data['seconds'], 1e-9):.2f}× model time", flush=True)
    if args.test:
        step("dbt test", "dbt", layer="test")
    if args.days > 1:
        step("replicate", "replicate", days=args.days)
        params["days"] = args.days
    history: list[StageResult] = []
    if args.history > 1:
        # day N's build is a real one, over a warehouse holding N-1 days of raw, history and marts
        step("history fill", "history", history, history=args.history)
        day_n = {"day": (args.date + timedelta(days=args.history - 1)).isoformat()}
        for name, stage, extra in (("generate", "generate", {}), ("load", "load", {}), ("lookups", "lookups", {}),
                                   ("dbt transform", "dbt", {"layer": "transform"})):
            step(f"day {args.history} {name}", stage, history, **day_n, **extra)
        params["days"] = args.history
    step("publish", "publish")
    print("  query ...", end="", flush=True)
    queries = run_stage("query", "query", params, logs)
    print(f" {queries.wall_s:.1f} s", flush=True)
    if args.engine == "spark":
        from bench.spark import run_spark_scale

        stages.append(run_spark_scale(params, logs))
    rec = reconcile(wd / "kubeledger.duckdb", args.date, args.date + timedelta(days=params["days"]),
                    allow_clamped=nodes <= DEMO_FEATURE_NODES)
    return stages, queries, rec, history


# --- Prometheus ------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_tsdb(root: Path, nodes: int, ppn: int, hours: int = 24) -> Path:
    """Build (once; cached under the workdir) the scale TSDB with scripts/gen_prom_scale.py."""
    from pipelines import PROJECT_ROOT

    tsdb = root / "prom" / (f"tsdb-{nodes}x{ppn}" + ("" if hours == 24 else f"-{hours}h"))
    marker = tsdb / ".kubeledger-bench-complete"
    if marker.exists():
        print(f"prometheus: cached TSDB {tsdb}", flush=True)
        return tsdb
    shutil.rmtree(tsdb, ignore_errors=True)
    print(f"prometheus: building {hours} hours of {nodes} nodes / {nodes * ppn:,} pods into {tsdb} "
          "(promtool; several minutes) ...", flush=True)
    # promtool holds a whole OpenMetrics file in memory: one-hour files above 200 nodes' worth of series
    window_h = 6 if nodes * ppn <= 4000 and hours % 6 == 0 else 1
    t = time.perf_counter()
    subprocess.run([sys.executable, str(PROJECT_ROOT / "scripts" / "gen_prom_scale.py"), "--tsdb", str(tsdb),
                    "--hours", str(hours), "--window-hours", str(window_h), "--nodes", str(nodes),
                    "--pods-per-node", str(ppn), "--workdir", str(root / "prom" / "om")], check=True)
    marker.write_text(f"built in {time.perf_counter() - t:.0f} s\n")
    return tsdb


def run_prometheus(args: argparse.Namespace, root: Path) -> tuple[StageResult, dict[str, Any]]:
    prom = shutil.which("prometheus")
    if not prom:
        raise StageError("prometheus binary not found (apt-get install prometheus)")
    tsdb = ensure_tsdb(root, args.prom_nodes, args.prom_pods_per_node, args.prom_hours)
    cfg = root / "prom" / "prom.yml"
    cfg.write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n")
    port = _free_port()
    log = (root / "prom" / "prometheus.log").open("w")
    proc = subprocess.Popen([prom, f"--config.file={cfg}", f"--storage.tsdb.path={tsdb}",
                             "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:  # noqa: S310 - local
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise StageError(f"prometheus did not become ready; see {log.name}")
            time.sleep(0.25)
        params = {"workdir": str(root / "prom"), "prometheus_url": url, "day": DEFAULT_DAY.isoformat(),
                  "hours": args.prom_hours}
        print(f"prometheus: pid {proc.pid} on {url}; extracting {args.prom_hours} hours ...", flush=True)
        res = run_stage("prom extract", "prometheus", params, root / "prom" / "logs")
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    res.data["nodes"] = args.prom_nodes
    return res, {"nodes": args.prom_nodes, "pods": args.prom_nodes * args.prom_pods_per_node}


def format_prometheus(res: StageResult, shape: dict[str, Any]) -> str:
    d = res.data
    head = (f"{'prometheus extract':<26}{'hours':>6}{'queries':>9}{'queries/h':>11}{'s/hour':>9}{'total s':>9}"
            f"{'rows':>11}{'peak RSS MiB':>14}")
    return "\n".join([
        f"Prometheus extraction: {shape['nodes']} nodes / {shape['pods']:,} pods, 60 s scrape "
        "(scripts/gen_prom_scale.py TSDB, Prometheus 2.42 on 127.0.0.1)", head, "-" * len(head),
        f"{'extract_prometheus_hours':<26}{d['hours']:>6}{d['queries']:>9}{d['queries_per_hour']:>11.2f}"
        f"{d['seconds_per_hour']:>9.2f}{d['seconds_extract']:>9.1f}{d['rows_out']:>11,}{res.peak_rss_mib:>14,.0f}",
    ])


# --- main ------------------------------------------------------------------------------------------------


def target_lines(summaries: list[dict[str, Any]], prom: StageResult | None, days: int) -> list[str]:
    out = []
    by = {s["scale"]: s for s in summaries}

    def mark(ok: bool) -> str:
        return "met" if ok else "NOT MET"

    if 5000 in by:
        s = by[5000]
        if s["day_s"] is None:
            out.append("5,000-node day (load → publish): not measured (a stage of the day did not run)")
        else:
            out.append(f"5,000-node day (load → publish) {s['day_s']:.1f} s, peak RSS {s['day_peak_rss_mib'] / 1024:.2f} "
                       f"GiB (target ≤ {TARGETS['day_5000_s']:.0f} s, ≤ {TARGETS['day_5000_rss_mib'] / 1024:.0f} GiB, "
                       "no spill: see the DuckDB profile in BENCHMARKS.md): "
                       + mark(s["day_s"] <= TARGETS["day_5000_s"] and s["day_peak_rss_mib"] <= TARGETS["day_5000_rss_mib"]))
    if 1000 in by:
        s = by[1000]
        out.append(f"1,000-node model time {s['model_s']:.1f} s (target ≤ {TARGETS['model_1000_s']:g} s): "
                   + mark(s["model_s"] <= TARGETS["model_1000_s"]))
    for s in summaries:
        if s.get("scan_ratio") is not None:
            out.append(f"{s['scale']:,}-node transform ÷ scan pass {s['scan_ratio']:.1f}× model time "
                       f"(target ≤ {TARGETS['scan_ratio']:g}×): " + mark(s["scan_ratio"] <= TARGETS["scan_ratio"]))
        if s.get("landing_rows_per_s"):
            out.append(f"{s['scale']:,}-node landing {s['landing_rows_per_s'] / 1e6:.2f} M rows/s "
                       f"(target ≥ {TARGETS['landing_rows_per_s'] / 1e6:g} M): "
                       + mark(s["landing_rows_per_s"] >= TARGETS["landing_rows_per_s"]))
    for nodes, target in ((1000, TARGETS["query_1000_30d_s"]), (5000, TARGETS["query_5000_30d_s"])):
        s = by.get(nodes)
        if s and days >= 30 and s["queries"]:
            worst = max(q["p95"] for q in s["queries"].values())
            # an empty answer is not a measurement, and a rollup's answer must be the detail rows'
            answered = all(q["keys"] > 0 for q in s["queries"].values())
            same = all(q.get("same_as_detail") is not False for q in s["queries"].values())
            out.append(f"{nodes:,}-node query over {days} days p95 {worst * 1000:.0f} ms (target <= {target:g} s): "
                       + mark(worst <= target and answered and same) + ("" if answered else " (a shape answered nothing)")
                       + ("" if same else " (rollup and detail answers differ)"))
    for s in summaries:
        h = s.get("history")
        if h:
            out.append(f"{s['scale']:,}-node day {h['day']} of a {h['day']}-day backfill ÷ day 1: transform "
                       f"{h['transform_wall']:.2f}× wall, {h['transform_models']:.2f}× model time; load "
                       f"{h['load_wall']:.2f}× (target <= {TARGETS['history_ratio']:g}×): "
                       + mark(max(h["transform_wall"], h["transform_models"], h["load_wall"])
                              <= TARGETS["history_ratio"]))
    if prom is not None:
        sph, nodes = prom.data["seconds_per_hour"], prom.data.get("nodes", 200)
        target = TARGETS["prom_s_per_hour"]
        out.append(f"Prometheus extraction {sph:.2f} s/hour at {nodes:,} nodes (target <= {target:g} s at 200): "
                   + (mark(sph <= target) if nodes == 200 else "no target at this scale"))
    return out


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.days < 1 or args.hours < 1 or args.hours > 24:
        print("bench: --days must be >= 1 and --hours 1..24", file=sys.stderr)
        return 2
    if args.history and (args.history < 2 or args.days > 1):
        print("bench: --history N needs N >= 2 and no --days", file=sys.stderr)
        return 2
    temp = args.workdir is None
    root = Path(args.workdir or tempfile.mkdtemp(prefix="kubeledger-bench-")).resolve()
    root.mkdir(parents=True, exist_ok=True)
    scales = args.scales or ([] if args.prometheus or args.demo_e2e else sorted(SCALES))
    summaries: list[dict[str, Any]] = []
    reports: list[str] = []
    failed = False
    prom: StageResult | None = None
    results: dict[str, Any] = {"scales": [], "prometheus": None}
    try:
        if args.demo_e2e:  # --- the small day (bench/demo_e2e.py) ---
            from bench.demo_e2e import format_demo_e2e, results_json, run_demo_e2e

            e2e = run_demo_e2e(root)
            reports.append(format_demo_e2e(e2e))
            print("\n" + reports[-1] + "\n", flush=True)
            results["demo_e2e"] = results_json(e2e)
        for nodes in scales:
            stages, queries, rec, history = run_scale(args, root, nodes)
            ppn, cpp = SCALES.get(nodes, (30, 2))
            ppn = args.pods_per_node or ppn
            cpp = args.containers_per_pod or cpp
            title = (f"{nodes:,} nodes / {nodes * ppn:,} pods / {cpp} containers per pod, {args.hours} h of "
                     f"{args.date}" + (f", marts replicated to {args.days} days" if args.days > 1 else "")
                     + (f", then day {args.history} over {args.history - 1} days of history" if history else ""))
            spark = [s for s in stages if s.name == "spark"]
            stages = [s for s in stages if s.name != "spark"]
            text = "\n".join(x for x in (format_table(title, stages), format_queries(queries),
                                         format_reconciliation(f"{nodes:,} nodes", rec), format_models(stages),
                                         format_history(stages, history)) if x)
            if spark:
                from bench.spark import format_side_by_side

                text += "\n\n" + format_side_by_side(nodes, stages, spark[0])
                failed |= not spark[0].data.get("identical")
            if args.baseline:
                same, compared = compare_to_baseline(args.baseline.resolve(), scale_dirname(args, nodes), root)
                text += "\n" + compared
                failed |= not same
            print("\n" + text + "\n", flush=True)
            reports.append(text)
            failed |= not rec.passed
            summaries.append(summary_row(nodes, stages, queries, rec))
            if history:
                summaries[-1]["history"] = history_ratios(stages, history)
            results["scales"].append({"nodes": nodes, "pods": nodes * ppn, "containers_per_pod": cpp,
                                      "stages": [vars(s) for s in stages + spark], "queries": vars(queries),
                                      "history": [vars(s) for s in history],
                                      "reconciliation": vars(rec)})
        if args.prometheus:
            prom, shape = run_prometheus(args, root)
            text = format_prometheus(prom, shape)
            print("\n" + text + "\n", flush=True)
            reports.append(text)
            results["prometheus"] = vars(prom)
    except StageError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    finally:
        if temp and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("=" * 100)
    print("\n\n".join(reports))
    lines = target_lines(summaries, prom, args.days)
    if lines:
        print("\ntargets:\n  " + "\n  ".join(lines))
    for s in summaries:
        print(f"reconciliation {s['scale']:,} nodes: {'PASS' if s['reconciliation'] else 'FAIL'}")
    if args.json:
        results["targets"] = lines
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
