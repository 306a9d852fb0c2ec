"""`kubeledger status`: what is materialised, how complete the newest days are, the last runs and their checks,
and what it all takes on disk. Read-only: nothing is created when the warehouse or the Dagster home is missing."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TextIO

from pipelines.days import first_day, format_ranges, newest_day, state_dir
from pipelines.settings import Settings

NEWEST_DAYS = 3
JOBS = ("reference", "extract_hourly", "daily_warehouse")


@dataclass
class RunInfo:
    job: str
    run_id: str
    status: str
    start: float | None
    end: float | None
    days: str = ""
    checks_passed: int = 0
    checks_failed: list[str] = field(default_factory=list)
    failure: str = ""


def _size(path: Path) -> tuple[int, int]:
    """(bytes, files) of a file (with its DuckDB .wal) or a folder."""
    if path.is_file():
        wal = path.with_name(path.name + ".wal")
        return path.stat().st_size + (wal.stat().st_size if wal.is_file() else 0), 1
    if path.is_dir():
        files = [p for p in path.rglob("*") if p.is_file()]
        return sum(p.stat().st_size for p in files), len(files)
    return 0, 0


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _rows(path: Path, sql: str, params: list[Any] | None = None) -> list[tuple] | None:
    """Rows of a read-only query on a warehouse file: [] without the file or the table, None if it cannot be
    opened (another process writing it)."""
    import duckdb

    if not path.is_file():
        return []
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return None
    try:
        return con.execute(sql, params).fetchall()
    except duckdb.CatalogException:
        return []
    finally:
        con.close()


def mart_days(path: Path) -> dict[str, dict[date, float | None]] | None:
    """{cluster: {day: hour_coverage}} from marts.fct_cluster_daily of a warehouse file; None if unreadable."""
    rows = _rows(path, "select cluster, usage_date, hour_coverage from marts.fct_cluster_daily")
    if rows is None:
        return None
    out: dict[str, dict[date, float | None]] = {}
    for cluster, day, coverage in rows:
        out.setdefault(cluster, {})[day] = coverage
    return out


def raw_hours_by_day(path: Path, days: list[date]) -> dict[tuple[str, date], int] | None:
    if not days:
        return {}
    rows = _rows(path, "select cluster, cast(hour_ts as date), count(distinct hour_ts) from raw.node_hours "
                       "where cast(hour_ts as date) in (select unnest(?)) group by 1, 2", [days])
    return None if rows is None else {(c, d): n for c, d, n in rows}


def last_runs(settings: Settings) -> list[RunInfo] | None:
    """The newest run of each job from the Dagster instance; None when there is no instance yet."""
    from pipelines.dagster_defs.instance import dagster_home

    home = dagster_home(settings)
    if not (home / "dagster.yaml").is_file():
        return None
    import dagster as dg

    from pipelines.dagster_defs.instance import open_instance
    from pipelines.dagster_defs.partitions import RANGE_END_TAG, RANGE_START_TAG

    instance = open_instance(settings, lambda _msg: None)
    out = []
    for job in JOBS:
        records = instance.get_run_records(filters=dg.RunsFilter(job_name=job), limit=1)
        if not records:
            continue
        record = records[0]
        run = record.dagster_run
        tags = run.tags
        days = tags.get("dagster/partition") or ""
        if RANGE_START_TAG in tags:  # hourly ranges are shown as days: 2026-03-01-00:00 -> 2026-03-01
            first, last = tags[RANGE_START_TAG][:10], tags.get(RANGE_END_TAG, "")[:10]
            days = first if first == last else f"{first}..{last}"
        info = RunInfo(job, run.run_id, run.status.value, record.start_time, record.end_time, days)
        if job == "daily_warehouse":
            for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
                evaluation = entry.dagster_event.asset_check_evaluation_data
                if evaluation.passed:
                    info.checks_passed += 1
                else:
                    info.checks_failed.append(f"{evaluation.asset_key.to_user_string()} {evaluation.check_name}")
        if run.status != dg.DagsterRunStatus.SUCCESS:
            for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
                from pipelines.runs import user_error

                error = user_error(entry.dagster_event.step_failure_data.error)
                lines = (error.message if error else "").strip().splitlines()
                info.failure = f"step {entry.dagster_event.step_key}: {lines[0][:200] if lines else 'failed'}"
                break
        out.append(info)
    return out


def say_sources(say: Any, settings: Settings, days: list[date]) -> None:
    """Which sources the newest days rest on fallbacks for (raw.source_health), one line each; or that all
    answered."""
    path = settings.warehouse_path if mart_days(settings.warehouse_path) is not None else settings.serving_path
    schema = "raw" if path == settings.warehouse_path else "ops"
    rows = _rows(path, f"select scope, source, cluster, failure, message, hint from {schema}.source_health "  # noqa: S608
                       "where status = 'degraded' and scope in (select unnest(?)) order by 1, 2, 3",
                 [[d.isoformat() for d in days] + ["current"]])
    if rows is None:
        return
    if not rows:
        say("  sources: every source answered (no fallback for a failed source)")
        return
    say("  degraded sources (the rows that used a fallback carry its reason code):")
    for scope, source, cluster, failure, message, hint in rows:
        where = f" {cluster}" if cluster else ""
        say(f"    {scope} {source}{where}: {failure}: {message}")
        say(f"      what to do: {hint}")


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if ts else "?"


def print_status(settings: Settings, out: TextIO | None = None) -> int:
    out = out or sys.stdout

    def say(text: str = "") -> None:
        out.write(text + "\n")

    first = first_day(settings)
    say(f"config: {settings.source_file or 'built-in defaults'}")
    say(f"days: {first.day} ({first.why}) .. {newest_day()} (yesterday, UTC)")

    working = mart_days(settings.warehouse_path)
    published = mart_days(settings.serving_path) or {}
    source = working
    if working is None:
        say("warehouse: busy (a run is writing); materialised days below are the published ones")
        source = published
    say("materialised days (published to the serving copy unless marked):")
    if not source:
        say("  none yet: run kubeledger backfill --start <day> --end <day>")
    for cluster in sorted(source or {}):
        days = sorted(source[cluster])
        unpublished = [d for d in days if d not in published.get(cluster, {})]
        say(f"  {cluster}: {format_ranges(days)} ({len(days)} day{'s' if len(days) != 1 else ''})"
            + (f"; not published: {format_ranges(unpublished)}" if unpublished else ""))
    configured = [c.name for c in settings.clusters if c.name not in (source or {})]
    if configured and source:
        say(f"  no days yet for: {', '.join(configured)}")

    if source:
        newest = sorted({d for days in source.values() for d in days})[-NEWEST_DAYS:]
        raw = raw_hours_by_day(settings.warehouse_path, newest)
        say(f"newest days (raw hours landed, hour coverage in the marts; quality.min_hour_coverage "
            f"{settings.quality.min_hour_coverage:.0%}):")
        for day in newest:
            cells = []
            for cluster in sorted(source):
                coverage = source[cluster].get(day)
                hours = "?" if raw is None else str(raw.get((cluster, day), 0))
                cov = "-" if coverage is None else f"{coverage:.0%}"
                low = coverage is not None and coverage < settings.quality.min_hour_coverage
                cells.append(f"{cluster} {hours}/24 h, {cov}{' (incomplete)' if low else ''}")
            say(f"  {day}: " + "; ".join(cells))
        say_sources(say, settings, newest)

    runs = last_runs(settings)
    if runs is None:
        say("last runs: none (no Dagster instance yet)")
    else:
        say("last runs:" if runs else "last runs: none")
        for r in runs:
            took = f", {r.end - r.start:.0f} s" if r.start and r.end else ""
            say(f"  {r.job}: {r.status} {_when(r.start)}{took}" + (f", days {r.days}" if r.days else "")
                + f" (run {r.run_id[:8]})")
            if r.job == "daily_warehouse" and (r.checks_passed or r.checks_failed):
                say(f"    checks: {r.checks_passed} passed, {len(r.checks_failed)} failed"
                    + (f": {', '.join(r.checks_failed[:10])}" if r.checks_failed else ""))
            if r.failure:
                say(f"    {r.failure}")

    from pipelines.dagster_defs.instance import dagster_home

    say("sizes:")
    for label, path in (("warehouse", settings.warehouse_path), ("serving copy", settings.serving_path),
                        ("parquet", settings.parquet_path), ("dagster home", dagster_home(settings)),
                        ("state", state_dir(settings))):
        size, files = _size(path)
        extra = f" ({files} files)" if path.is_dir() and files else ("" if path.exists() else " (missing)")
        say(f"  {label:<13}{human(size):>10}  {path}{extra}")
    return 0
