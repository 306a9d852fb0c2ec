"""The `kubeledger` command: demo, materialize, backfill, rebuild, status, check-config, dev, allocation, serve,
bench, repair-instance.

It fails fast and speaks plainly: dates and settings are checked before any work (one line, exit 2, nothing
written); a run prints one line per stage with its timing, a progress display for long stages and a summary, and
writes everything (Dagster events, dbt's output) to a log file under `<warehouse folder>/state/logs/`.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

from pipelines import PROJECT_ROOT, cli_version
from pipelines.days import DateError, check_range, format_ranges, newest_day, raw_hours, record_first_day
from pipelines.demo_faults import DEMO_FAULTS, with_fault
from pipelines.redaction import redact
from pipelines.report.cli import add_report_parser, cmd_report, report_path_for
from pipelines.runs import RunFailed, error_line, materialize_days, setting_named
from pipelines.settings import Settings, SettingsError, load_settings
from pipelines.timeutil import days_inclusive

EXIT_USAGE = 2  # bad arguments, dates or settings: nothing was done
EXIT_FAILED = 1  # the work started and failed


def _parse_date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date; use YYYY-MM-DD") from None


# --- commands -----------------------------------------------------------------------------------------------

class Session:
    """A command that does pipeline work: the console reporter and the log file."""

    def __init__(self, args: argparse.Namespace, settings: Settings, argv: list[str]) -> None:
        from pipelines.progress import Reporter, start_logging

        self.reporter = Reporter()
        self.log = start_logging(settings, self.reporter, bool(getattr(args, "verbose", False)), argv)
        self.t0 = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def close(self, error: str | None = None) -> None:
        """Finish the display; on failure, the failed checks (or dbt's errors), the one-line error, then the
        log file's path."""
        self.reporter.close()
        ok = error is None
        failed = [c for c in self.reporter.checks if not c.passed]
        for check in failed[:10]:
            self.reporter.echo(f"  check {'warning' if check.warning else 'failed'}: {check.asset} {check.name}"
                               + (f" ({check.detail})" if check.detail else ""), err=not ok)
        if not ok and not failed:
            for line in self.reporter.dbt_problems[-10:]:
                self.reporter.echo(f"  dbt: {line}", err=True)
        self.log.close()
        if error:
            self.reporter.echo(f"kubeledger: {redact(error)}", err=True)
        self.reporter.echo(f"log: {self.log.path}", err=not ok)


def _work(args: argparse.Namespace, settings: Settings, argv: list[str], header: str, body: Any) -> int:
    """Run `body(session)` with the reporter and log file; failures become one line plus the log's path."""
    import logging

    try:
        session = Session(args, settings, argv)
    except OSError as exc:  # the log folder under the warehouse folder cannot be made: one line naming the key
        print(f"kubeledger: cannot start the log file: {setting_named(f'{type(exc).__name__}: {exc}', settings)}",
              file=sys.stderr)
        return EXIT_FAILED
    session.reporter.echo(header)
    try:
        body(session)
    except RunFailed as exc:
        session.close(str(exc))
        return EXIT_FAILED
    except (SettingsError, DateError) as exc:
        session.close(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        session.close("interrupted")
        return 130
    except Exception as exc:
        from pipelines.dagster_defs.instance import InstanceError

        logging.getLogger("kubeledger.cli").exception("failed")
        what = error_line(str(exc)) if str(exc).strip() else type(exc).__name__
        session.close(setting_named(what if isinstance(exc, InstanceError) else f"{type(exc).__name__}: {what}",
                                    settings))
        return EXIT_FAILED
    session.close()
    return 0


def _cluster_label(settings: Settings, cluster: str | None) -> str:
    return cluster or ", ".join(c.name for c in settings.clusters)


def cmd_demo(args: argparse.Namespace, settings: Settings, argv: list[str]) -> int:
    settings = with_fault(settings, args.fault)
    day = args.date or newest_day()
    check_range(settings, day, day, flags=("--date", "--date"))

    def body(session: Session) -> None:
        materialize_days(settings, day, day, reporter=session.reporter)
        session.reporter.echo(f"done in {session.elapsed():.1f} s")
        print_top_namespaces(settings, day, echo=session.reporter.echo)
        session.reporter.echo(f"report: {report_path_for(settings, day)}")
        if args.fault:
            session.reporter.echo(f"fault {args.fault}: see `kubeledger status` for the degraded source; rows that "
                                  "used a fallback are marked '*' above and carry its reason code")

    return _work(args, settings, argv, f"kubeledger demo: materialising {day} for cluster(s) "
                                       f"{_cluster_label(settings, None)}", body)


def _materialize_range(args: argparse.Namespace, settings: Settings, argv: list[str], start: date, end: date,
                       flags: tuple[str, str], header: str, done: str) -> int:
    """`materialize` and `backfill`: build start..end for --cluster (or every cluster); `header` and `done` (the
    closing line, before " in N s") name the days as each command does."""
    check_range(settings, start, end, flags=flags)
    if args.cluster:
        settings.cluster(args.cluster)

    def body(session: Session) -> None:
        materialize_days(settings, start, end, cluster=args.cluster, reporter=session.reporter)
        session.reporter.echo(f"{done} in {session.elapsed():.1f} s")

    return _work(args, settings, argv, f"{header} for cluster(s) {_cluster_label(settings, args.cluster)}", body)


def cmd_materialize(args: argparse.Namespace, settings: Settings, argv: list[str]) -> int:
    return _materialize_range(args, settings, argv, args.date, args.date, ("--date", "--date"),
                              f"kubeledger materialize: {args.date}", f"materialised {args.date}")


def cmd_backfill(args: argparse.Namespace, settings: Settings, argv: list[str]) -> int:
    days = f"{(args.end - args.start).days + 1} day(s) {args.start}..{args.end}"
    return _materialize_range(args, settings, argv, args.start, args.end, ("--start", "--end"),
                              f"kubeledger backfill: {days}", f"backfilled {days}")


def cmd_rebuild(args: argparse.Namespace, settings: Settings, argv: list[str]) -> int:
    """Re-run the daily build, checks and publish from the raw rows already landed: no extraction."""
    import duckdb

    check_range(settings, args.start, args.end)
    clusters = [settings.cluster(args.cluster).name] if args.cluster else [c.name for c in settings.clusters]
    try:
        landed = raw_hours(settings, args.start, args.end, args.cluster)
    except duckdb.Error as exc:
        raise DateError(f"cannot read the raw rows in {settings.warehouse_path} ({str(exc).splitlines()[0]}); "
                        "is another kubeledger run writing? try again when it is done") from exc
    wanted = days_inclusive(args.start, args.end)
    missing = {c: [d for d in wanted if not (landed or {}).get((c, d))] for c in clusters}
    missing = {c: days for c, days in missing.items() if days}
    if missing:
        where = "; ".join(f"cluster {c}: {format_ranges(days)}" for c, days in missing.items())
        raise DateError(f"no raw rows to rebuild from ({where}); extract those days with kubeledger backfill "
                        f"--start {args.start} --end {args.end}, or rebuild only days that were extracted")
    days = len(wanted)

    def body(session: Session) -> None:
        materialize_days(settings, args.start, args.end, cluster=args.cluster, reporter=session.reporter,
                         extract=False)
        session.reporter.echo(f"rebuilt {days} day(s) {args.start}..{args.end} from raw rows in "
                              f"{session.elapsed():.1f} s (no extraction)")

    return _work(args, settings, argv, f"kubeledger rebuild: {days} day(s) {args.start}..{args.end} for "
                                       f"cluster(s) {', '.join(clusters)} from the raw rows already landed", body)


def print_top_namespaces(settings: Settings, day: date, limit: int = 10, echo: Any = print) -> None:
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
    echo(f"\nTop {limit} namespaces on {day} (all clusters; '*' = includes estimated values)")
    echo(f"{'namespace':<24}{'cost USD':>12}{'energy kWh':>12}{'CO2e g':>12}")
    for ns, cost, kwh, co2e, est in rows:
        echo(f"{ns:<24}{cost:>12.4f}{kwh:>12.4f}{co2e:>12.1f}{' *' if est else ''}")
    if totals and totals[0] is not None:
        echo(f"{'all namespaces':<24}{totals[0]:>12.4f}{totals[1]:>12.4f}{totals[2]:>12.1f}")
        echo(f"idle cost {totals[3] or 0:.4f} USD; estimated share of CO2e {(share[0] if share else 0) or 0:.1%}")
    echo(f"\nwarehouse: {settings.warehouse_path}\nserving copy (for BI tools): {settings.serving_path}")


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.status import print_status

    return print_status(settings)


def cmd_check_config(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.check_config import print_checks

    return print_checks(settings, timeout_s=args.timeout)


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
    settings.warehouse_path.parent.mkdir(parents=True, exist_ok=True)
    record_first_day(settings)
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
    from pipelines.serving.http.app import ServerLimits
    from pipelines.serving.http.server import serve

    serve(settings, args.host, args.port, serve_limits(args, ServerLimits()))
    return 0


def serve_limits(args: argparse.Namespace, base: Any) -> Any:
    """The server's limits with the command line's connection bounds (behind an ingress every client shares the
    ingress's address: its per-address cap is the one to raise)."""
    from dataclasses import replace

    return replace(base, max_connections_per_client=args.max_connections_per_client or base.max_connections_per_client,
                   request_timeout_s=args.request_timeout or base.request_timeout_s)


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not 0 < value < float("inf"):  # NaN fails too
            raise argparse.ArgumentTypeError(f"{text!r} is not a positive {'integer' if kind is int else 'number'}")
        return value
    return parse


def cmd_bench(args: argparse.Namespace, settings: Settings, rest: list[str]) -> int:
    from pipelines.bench_command import main as bench_main

    return bench_main(rest)


# --- arguments ----------------------------------------------------------------------------------------------

CONFIG_HELP = "kubeledger.yaml path (default: $KUBELEDGER_CONFIG, else ./kubeledger.yaml, else built-in defaults)"
VERBOSE_HELP = "also show Dagster's events and dbt's output (always written to the log file)"


def _common(parser: argparse.ArgumentParser, top: bool = False) -> None:
    """--config and --verbose, accepted before or after the command (after it wins)."""
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--config", default=default, metavar="FILE", help=CONFIG_HELP)
    parser.add_argument("-v", "--verbose", action="store_true", default=False if top else argparse.SUPPRESS,
                        help=VERBOSE_HELP)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubeledger", description="Cost, energy and carbon for every Kubernetes workload: a Dagster + "
        "dbt-duckdb daily warehouse. Days are UTC; the newest day you can materialise is yesterday.")
    parser.add_argument("--version", action="version", version=f"kubeledger {cli_version()}",
                        help="print the installed kubeledger version and exit")
    _common(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="what to do (kubeledger COMMAND -h for its options)")
    day_help = "day to materialise, YYYY-MM-DD (UTC; yesterday at the latest)"
    cluster_help = "only this configured cluster (default: all)"

    demo = sub.add_parser("demo", help="materialise a demo day end to end and print the top-10 namespaces")
    demo.add_argument("--date", type=_parse_date, help="day to materialise, YYYY-MM-DD (default: yesterday, UTC)")
    demo.add_argument("--fault", choices=sorted(DEMO_FAULTS),
                      help="run the demo day with one enrichment source down, to see a degraded day")
    _common(demo)
    mat = sub.add_parser("materialize", help="extract, build, check and publish one day")
    mat.add_argument("--date", type=_parse_date, required=True, help=day_help)
    mat.add_argument("--cluster", help=cluster_help)
    _common(mat)
    back = sub.add_parser("backfill", help="extract, build, check and publish a range of days (one run per stage)")
    back.add_argument("--start", type=_parse_date, required=True, help="first day, YYYY-MM-DD (UTC)")
    back.add_argument("--end", type=_parse_date, required=True, help="last day, inclusive (yesterday at the latest)")
    back.add_argument("--cluster", help=cluster_help)
    _common(back)
    rebuild = sub.add_parser(
        "rebuild", help="re-run the daily build, checks and publish from raw rows already landed (no extraction)",
        description="Rebuild days from the raw rows already in the warehouse, without asking any source: after a "
        "pricing or sharing change, or when Prometheus no longer holds those days. Price files are reloaded.")
    rebuild.add_argument("--start", type=_parse_date, required=True, help="first day, YYYY-MM-DD (UTC)")
    rebuild.add_argument("--end", type=_parse_date, required=True, help="last day, inclusive")
    rebuild.add_argument("--cluster", help=cluster_help)
    _common(rebuild)
    status = sub.add_parser("status", help="materialised days per cluster, newest days' coverage, the last run "
                                           "and its checks, sizes on disk")
    _common(status)
    check = sub.add_parser("check-config", help="validate the settings and files, and connect to every "
                                                "configured source (exit 1 if any check fails)")
    check.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                       help="timeout per connection, in seconds (default 5)")
    _common(check)
    dev = sub.add_parser("dev", help="start the Dagster UI (dagster dev) on this project")
    dev.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    dev.add_argument("--port", type=int, default=3000, help="port (default 3000)")
    _common(dev)
    sub.add_parser("allocation", help="query allocations like Kubecost/OpenCost (see kubeledger allocation -h)",
                   add_help=False)
    serve = sub.add_parser("serve", help="serve the allocation HTTP API")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=9003, help="port (default 9003)")
    serve.add_argument("--max-connections-per-client", type=_positive(int), default=None, metavar="N",
                       help="open connections per client address (default 64; behind an ingress or proxy every "
                            "client has its address: raise it to the proxy's upstream pool)")
    serve.add_argument("--request-timeout", type=_positive(float), default=None, metavar="SECONDS",
                       help="time a client has to send a whole request once connected or answered (default 5)")
    _common(serve)
    from pipelines.recommend_cli import add_parser as add_recommend_parser

    _common(add_recommend_parser(sub))
    from pipelines.focus_export_cli import add_parser as add_export_parser

    add_export_parser(sub, _common)
    from pipelines.lake_cli import add_parser as add_lake_parser

    add_lake_parser(sub, _common)
    sub.add_parser("bench", help="run the benchmarks (python -m bench)", add_help=False)
    add_report_parser(sub, _parse_date, _common)
    repair = sub.add_parser("repair-instance",
                            help="repair the local Dagster instance storage (duplicate alembic versions)")
    _common(repair)
    return parser


def _recommend(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.recommend_cli import run_recommend

    return run_recommend(args, settings)


def _export(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.focus_export_cli import run_export

    return run_export(args, settings)


def _lake(args: argparse.Namespace, settings: Settings) -> int:
    from pipelines.lake_cli import run_lake

    return run_lake(args, settings)


def _pop_config(rest: list[str]) -> tuple[list[str], str | None]:
    """Take `--config FILE` / `--config=FILE` out of a pass-through command's own arguments."""
    out, config, i = [], None, 0
    while i < len(rest):
        if rest[i] == "--config" and i + 1 < len(rest):
            config, i = rest[i + 1], i + 2
            continue
        if rest[i].startswith("--config="):
            config = rest[i].split("=", 1)[1]
        else:
            out.append(rest[i])
        i += 1
    return out, config


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    original = list(argv)
    parser = build_parser()
    # allocation and bench take their own options
    passthrough: list[str] = []
    late_config = None
    for name in ("allocation", "bench"):
        if name in argv:
            i = argv.index(name)
            argv, passthrough = argv[: i + 1], argv[i + 1:]
            passthrough, late_config = _pop_config(passthrough)
            break
    args = parser.parse_args(argv)
    if late_config:
        args.config = late_config
    try:
        settings = load_settings(args.config)
    except SettingsError as exc:
        print(f"kubeledger: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # dbt and the manifest cache find the warehouse through it (never set at import: see pipelines/definitions.py)
    os.environ.setdefault("KUBELEDGER_WAREHOUSE", str(settings.warehouse_path))
    handlers = {
        "demo": lambda: cmd_demo(args, settings, original),
        "materialize": lambda: cmd_materialize(args, settings, original),
        "backfill": lambda: cmd_backfill(args, settings, original),
        "rebuild": lambda: cmd_rebuild(args, settings, original),
        "status": lambda: cmd_status(args, settings),
        "check-config": lambda: cmd_check_config(args, settings),
        "dev": lambda: cmd_dev(args, settings),
        "allocation": lambda: cmd_allocation(args, settings, passthrough),
        "serve": lambda: cmd_serve(args, settings),
        "bench": lambda: cmd_bench(args, settings, passthrough),
        "recommend": lambda: _recommend(args, settings),
        "export": lambda: _export(args, settings),
        "lake": lambda: _lake(args, settings),
        "repair-instance": lambda: cmd_repair_instance(settings),
        "report": lambda: cmd_report(args, settings),
    }
    try:
        return handlers[args.command]()
    except (SettingsError, DateError) as exc:  # bad dates, --cluster naming a cluster that is not configured
        print(f"kubeledger: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        from pipelines.dagster_defs.instance import InstanceError

        if isinstance(exc, InstanceError):
            print(f"kubeledger: {exc}", file=sys.stderr)
            return EXIT_FAILED
        raise


if __name__ == "__main__":
    raise SystemExit(main())
