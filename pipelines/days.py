"""Which days can be materialised, decided before any work starts (no Dagster import, no write).

The newest day is yesterday (UTC): today is still running. The first day (the first daily partition, and the
first hourly partition at its midnight) is, in order:

1. `$KUBELEDGER_PARTITIONS_START` (an override for tests and one-off runs);
2. `schedule.start_date` in kubeledger.yaml;
3. the day recorded in `<warehouse folder>/state/partitions-start` by the first `kubeledger` command that did
   work (so the partition set does not move when old raw rows are pruned);
4. 2025-01-01 when every cluster is a demo cluster (the demo synthesises any day);
5. the earliest day in the warehouse: its earliest raw hour, or an older day already in the marts (raw rows are
   pruned after `warehouse.raw_retention_days`, marts are kept), so an existing warehouse keeps its history;
6. 35 days before today (a cluster installed last week does not show 700 missing days in the UI).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from pipelines.settings import Settings
from pipelines.timeutil import days_window, utc_today

START_ENV = "KUBELEDGER_PARTITIONS_START"
DEFAULT_LOOKBACK_DAYS = 35
DEMO_START = date(2025, 1, 1)
START_FILE = "partitions-start"


class DateError(ValueError):
    """A day that cannot be materialised; the message is one line and says what to do."""


@dataclass(frozen=True)
class FirstDay:
    day: date
    why: str  # where it comes from, for messages
    recordable: bool = False  # a computed default that the first run records


def state_dir(settings: Settings) -> Path:
    return settings.warehouse_path.parent / "state"


def start_file(settings: Settings) -> Path:
    return state_dir(settings) / START_FILE


def _parse_day(text: str) -> date | None:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        return None


def earliest_day(settings: Settings) -> date | None:
    """The oldest day in the warehouse (raw.node_hours or marts.fct_cluster_daily), or None (no warehouse, no rows,
    or the file is locked by a writer)."""
    path = settings.warehouse_path
    if not path.is_file():
        return None
    import duckdb

    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return None
    days = []
    try:
        for sql in ("select cast(min(hour_ts) as date) from raw.node_hours",
                    "select min(usage_date) from marts.fct_cluster_daily"):
            try:
                days.append(con.execute(sql).fetchone()[0])
            except duckdb.Error:
                continue
    finally:
        con.close()
    days = [d for d in days if d is not None]
    return min(days) if days else None


def first_day(settings: Settings, today: date | None = None) -> FirstDay:
    today = today or utc_today()
    env = os.environ.get(START_ENV, "").strip()
    if env:
        day = _parse_day(env)
        if day is None:
            raise DateError(f"${START_ENV} is {env!r}; use a day as YYYY-MM-DD or unset it")
        return FirstDay(day, f"${START_ENV}")
    if settings.schedule.start_date:
        return FirstDay(date.fromisoformat(settings.schedule.start_date), "schedule.start_date")
    recorded = start_file(settings)
    try:
        day = _parse_day(recorded.read_text())
    except OSError:
        day = None
    if day is not None:
        return FirstDay(day, f"recorded at the first run in {recorded}")
    # demo clusters first: the answer must not depend on whether another process holds the warehouse's write lock
    # (every process loading the definitions must compute the same partitions)
    if all(c.source == "demo" for c in settings.clusters):
        return FirstDay(DEMO_START, "the demo default: every cluster is a demo cluster", recordable=True)
    earliest = earliest_day(settings)
    if earliest is not None:
        return FirstDay(earliest, "the earliest day in the warehouse", recordable=True)
    return FirstDay(today - timedelta(days=DEFAULT_LOOKBACK_DAYS),
                    f"{DEFAULT_LOOKBACK_DAYS} days before the first run", recordable=True)


def record_first_day(settings: Settings, today: date | None = None) -> FirstDay:
    """Record a computed first day in the state folder, once, so the partition set stays put afterwards."""
    first = first_day(settings, today)
    if first.recordable:
        path = start_file(settings)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{START_FILE}.{os.getpid()}.tmp")
        tmp.write_text(first.day.isoformat() + "\n")
        try:
            os.link(tmp, path)  # first writer wins; never overwrites a recorded day
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
        return first_day(settings, today)
    return first


def newest_day(today: date | None = None) -> date:
    return (today or utc_today()) - timedelta(days=1)


def check_day(settings: Settings, day: date, flag: str, today: date | None = None,
              first: FirstDay | None = None) -> None:
    """Raise DateError when `day` is not a complete day inside the partitions."""
    today = today or utc_today()
    newest = newest_day(today)
    config = settings.source_file or "kubeledger.yaml"
    if day == today:
        raise DateError(f"{flag} {day} is today and not complete yet; the newest day you can materialise is "
                        f"{newest}")
    if day > today:
        raise DateError(f"{flag} {day} is in the future; the newest day you can materialise is {newest} (UTC)")
    first = first or first_day(settings, today)
    if day < first.day:
        if first.why == "schedule.start_date":
            fix = f"set schedule.start_date in {config} to {day} or earlier to go further back"
        elif first.why.startswith("$"):
            fix = f"set {first.why[1:]} to {day} or earlier, or unset it"
        else:
            fix = f"set schedule.start_date: {day.isoformat()!r} in {config} to go further back"
        raise DateError(f"{flag} {day} is before the first partition {first.day} ({first.why}); materialise "
                        f"{first.day} or later, or {fix}")


def check_range(settings: Settings, start: date, end: date, today: date | None = None,
                flags: tuple[str, str] = ("--start", "--end")) -> FirstDay:
    """Check a range of days (inclusive); one flag for both ends when `flags` names one option."""
    if end < start:
        raise DateError(f"{flags[1]} {end} is before {flags[0]} {start}")
    today = today or utc_today()
    first = first_day(settings, today)
    check_day(settings, end, flags[1], today, first)
    check_day(settings, start, flags[0], today, first)
    return first


def raw_hours(settings: Settings, start: date, end: date, cluster: str | None = None
              ) -> dict[tuple[str, date], int] | None:
    """Hours landed in raw.node_hours per (cluster, day) for days start..end (inclusive); None without a warehouse.

    Raises duckdb.Error when the warehouse is locked by another writer."""
    path = settings.warehouse_path
    if not path.is_file():
        return None
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        try:
            rows = con.execute(
                "select cluster, cast(hour_ts as date), count(distinct hour_ts) from raw.node_hours "
                "where hour_ts >= ? and hour_ts < ? and (? is null or cluster = ?) group by 1, 2",
                [*days_window(start, end), cluster, cluster]).fetchall()
        except duckdb.CatalogException:
            return None
    finally:
        con.close()
    return {(c, d): n for c, d, n in rows}


def ranges(days: list[date]) -> list[tuple[date, date]]:
    """Consecutive runs of sorted days: [d1, d2, d3, d5] -> [(d1, d3), (d5, d5)]."""
    out: list[tuple[date, date]] = []
    for day in sorted(set(days)):
        if out and day == out[-1][1] + timedelta(days=1):
            out[-1] = (out[-1][0], day)
        else:
            out.append((day, day))
    return out


def format_ranges(days: list[date]) -> str:
    return ", ".join(a.isoformat() if a == b else f"{a}..{b}" for a, b in ranges(days))
