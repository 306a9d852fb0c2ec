"""The `kubeledger` command: demo, materialize, backfill, dev, allocation, serve, bench."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import date, datetime, timedelta
from pathlib import Path

from pipelines import PROJECT_ROOT
from pipelines.settings import Settings, SettingsError, load_settings


def _parse_date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date; use YYYY-MM-DD") from None


def materialize_days(settings: Settings, start: date, end: date, cluster: str | None = None,
                     log=print) -> dict[str, float]:
    """Run reference → hourly extract (one run over the range) → daily build + checks + publish, through the same
    Dagster jobs the schedules use. `end` is inclusive."""

    from pipelines.dagster_defs.instance import RUN_HOST_TAG, RUN_PID_TAG, open_instance
    from pipelines.dagster_defs.partitions import RANGE_END_TAG, RANGE_START_TAG
    from pipelines.dagster_defs.resources import pinned_run_config
    from pipelines.definitions import build_definitions

    if cluster is not None:
        settings.cluster(cluster)  # fail early with the list of configured clusters
    for folder in (settings.warehouse_path.parent, settings.serving_path.parent):
        folder.mkdir(parents=True, exist_ok=True)  # dbt's first seed opens the warehouse file before any step
    instance = open_instance(settings, log)
    defs = build_definitions(settings)
    own_tags = {RUN_PID_TAG: str(os.getpid()), RUN_HOST_TAG: socket.gethostname()}
    timings: dict[str, float] = {}

    pinned = pinned_run_config(settings)  # every run of this command uses the settings it started with

    def run(job_name: str, tags: dict[str, str] | None = None, run_config: dict | None = None,
            partition_key: str | None = None) -> None:
        t0 = time.perf_counter()
        job = defs.resolve_job_def(job_name)
        run_config = {**(run_config or {}), **pinned}
        result = job.execute_in_process(instance=instance, tags={**own_tags, **(tags or {})}, run_config=run_config,
                                        partition_key=partition_key, raise_on_error=False)
        timings[job_name] = time.perf_counter() - t0
        if not result.success:
            failures = [e.message for e in result.all_events if e.is_failure or e.event_type_value == "STEP_FAILURE"]
            checks = [e for e in result.get_asset_check_evaluations() if not e.passed]
            detail = "; ".join(f"{c.asset_key.to_user_string()} {c.check_name}: {c.metadata}" for c in checks)
            raise SystemExit(f"kubeledger: job {job_name} failed: {failures[-1] if failures else ''} {detail}".strip())
        log(f"  {job_name}: ok in {timings[job_name]:.1f} s")

    first, last = start.isoformat(), end.isoformat()
    run("reference")
    run("extract_hourly", tags={RANGE_START_TAG: f"{first}-00:00", RANGE_END_TAG: f"{last}-23:00"},
        run_config={"ops": {"raw_metrics": {"config": {"cluster": cluster}}}})
    config = {"ops": {"dbt_daily": {"config": {"cluster": cluster}}}}
    cluster_tags = {"kubeledger/cluster": cluster} if cluster else {}
    if start == end:
        run("daily_warehouse", partition_key=first, run_config=config, tags=cluster_tags or None)
    else:
        run("daily_warehouse", tags={RANGE_START_TAG: first, RANGE_END_TAG: last, **cluster_tags}, run_config=config)
    return timings


def print_top_namespaces(settings: Settings, day: date, limit: int = 10) -> None:
    import duckdb

    con = duckdb.connect(str(settings.serving_path), read_only=True)
    # the BI view, so the demo, BI tools and the API agree: __idle__ and __unmounted__ are rows of their own
    rows = con.execute(
        """
        select namespace, sum(total_cost), sum(energy_kwh), sum(co2e_total_g), bool_or(is_estimated)
        from bi.namespace_daily where usage_date = ?
        group by 1 order by 2 desc limit ?
        """, [day, limit]).fetchall()
    totals = con.execute(
        "select sum(total_cost), sum(energy_kwh), sum(co2e_total_g), "
        "sum(total_cost) filter (where namespace = '__idle__') from bi.namespace_daily where usage_date = ?",
        [day]).fetchone()
    share = con.execute("select avg(co2e_estimated_share) from marts.fct_cluster_daily where usage_date = ?",
                        [day]).fetchone()
    con.close()
    print(f"\nTop {limit} namespaces on {day} (all clusters; '*' = includes estimated values)")
    print(f"{'namespace':<24}{'cost USD':>12}{'energy kWh':>12}{'CO2e g':>12}")
    for ns, cost, kwh, co2e, est in rows:
        print(f"{ns:<24}{cost:>12.4f}{kwh:>12.4f}{co2e:>12.1f}{' *' if est else ''}")
    if totals and totals[0] is not None:
        print(f"{'all namespaces':<24}{totals[0]:>12.4f}{totals[1]:>12.4f}{totals[2]:>12.1f}")
        print(f"idle cost {totals[3] or 0:.4f} USD; estimated share of CO2e {(share[0] if share else 0) or 0:.1%}")
    print(f"\nwarehouse: {settings.warehouse_path}\nserving copy (for BI tools): {settings.serving_path}")


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    day = args.date or (datetime.utcnow().date() - timedelta(days=1))
    print(f"kubeledger demo: materialising {day} for cluster(s) {', '.join(c.name for c in settings.clusters)}")
    t0 = time.perf_counter()
    materialize_days(settings, day, day)
    print(f"done in {time.perf_counter() - t0:.1f} s")
    print_top_namespaces(settings, day)
    return 0


def cmd_materialize(args: argparse.Namespace, settings: Settings) -> int:
    t0 = time.perf_counter()
    materialize_days(settings, args.date, args.date, cluster=args.cluster)
    print(f"materialised {args.date} in {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_backfill(args: argparse.Namespace, settings: Settings) -> int:
    if args.end < args.start:
        print(f"kubeledger: --end {args.end} is before --start {args.start}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    materialize_days(settings, args.start, args.end, cluster=args.cluster)
    days = (args.end - args.start).days + 1
    print(f"backfilled {days} day(s) {args.start}..{args.end} in {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_repair_instance(settings: Settings) -> int:
    from pipelines.dagster_defs.instance import dagster_home, repair_instance, storage_problems

    home = dagster_home(settings)
    repaired = repair_instance(home)
    left = storage_problems(home)
    print(f"repaired {repaired} storage(s) under {home}; " + ("still inconsistent: " + "; ".join(left) if left
                                                               else "the instance is consistent"))
    return 1 if left else 0


def cmd_dev(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.dagster_defs.instance import prepare_dagster_home

    prepare_dagster_home(settings)
    os.environ["KUBELEDGER_WAREHOUSE"] = str(settings.warehouse_path)
    dagster = Path(sys.executable).parent / "dagster"
    cmd = [str(dagster) if dagster.exists() else "dagster", "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"),
           "-h", args.host, "-p", str(args.port)]
    print("starting:", " ".join(cmd))
    # headless-safe: no browser is opened; dagster dev runs in its own process group (it ignores signals that
    # were ignored when it started), and SIGINT/SIGTERM here stop the whole group, webserver and daemon alike
    env = {**os.environ, "DAGSTER_DISABLE_BROWSER": "1"}
    proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=env, start_new_session=True)

    def stop(signum: int, _frame: object) -> None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    return proc.wait()


def cmd_allocation(args: argparse.Namespace, settings: Settings, rest: list[str]) -> int:
    from pipelines.serving.cli import run_allocation_cli

    return run_allocation_cli(rest, settings)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.serving.server import serve

    serve(settings, args.host, args.port)
    return 0


def cmd_bench(args: argparse.Namespace, settings: Settings, rest: list[str]) -> int:
    from bench.__main__ import main as bench_main

    return bench_main(rest)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubeledger", description="Cost, energy and carbon for every Kubernetes "
                                     "workload: a Dagster + dbt-duckdb daily warehouse.")
    parser.add_argument("--config", help="kubeledger.yaml path (default: $KUBELEDGER_CONFIG or ./kubeledger.yaml)")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="materialise a demo day end to end and print the top-10 namespaces")
    demo.add_argument("--date", type=_parse_date, help="day to materialise (default: yesterday, UTC)")
    mat = sub.add_parser("materialize", help="extract, build and publish one day")
    mat.add_argument("--date", type=_parse_date, required=True)
    mat.add_argument("--cluster", help="only this configured cluster (default: all)")
    back = sub.add_parser("backfill", help="extract, build and publish a range of days (one run per stage)")
    back.add_argument("--start", type=_parse_date, required=True)
    back.add_argument("--end", type=_parse_date, required=True, help="last day, inclusive")
    back.add_argument("--cluster")
    dev = sub.add_parser("dev", help="start the Dagster UI (dagster dev) on this project")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--port", type=int, default=3000)
    sub.add_parser("allocation", help="query allocations like Kubecost/OpenCost (see kubeledger allocation -h)",
                   add_help=False)
    serve = sub.add_parser("serve", help="serve the allocation HTTP API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=9003)
    sub.add_parser("bench", help="run the benchmarks (python -m bench)", add_help=False)
    sub.add_parser("repair-instance", help="repair the local Dagster instance storage (duplicate alembic versions)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    # allocation and bench take their own options
    passthrough: list[str] = []
    for name in ("allocation", "bench"):
        if name in argv:
            i = argv.index(name)
            argv, passthrough = argv[: i + 1], argv[i + 1:]
            break
    args = parser.parse_args(argv)
    try:
        settings = load_settings(args.config)
    except SettingsError as exc:
        print(f"kubeledger: {exc}", file=sys.stderr)
        return 2
    os.environ.setdefault("KUBELEDGER_WAREHOUSE", str(settings.warehouse_path))
    handlers = {
        "demo": lambda: cmd_demo(args, settings),
        "materialize": lambda: cmd_materialize(args, settings),
        "backfill": lambda: cmd_backfill(args, settings),
        "dev": lambda: cmd_dev(args, settings),
        "allocation": lambda: cmd_allocation(args, settings, passthrough),
        "serve": lambda: cmd_serve(args, settings),
        "bench": lambda: cmd_bench(args, settings, passthrough),
        "repair-instance": lambda: cmd_repair_instance(settings),
    }
    from pipelines.dagster_defs.instance import InstanceError

    try:
        return handlers[args.command]()
    except SettingsError as exc:  # e.g. --cluster naming a cluster that is not configured
        print(f"kubeledger: {exc}", file=sys.stderr)
        return 2
    except InstanceError as exc:
        print(f"kubeledger: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
