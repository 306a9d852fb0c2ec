"""Time in one place: every stage (CLI, jobs, assets, checks, extractors, API) speaks naive UTC datetimes, whole
hours and whole days, and converts through these functions only.

Why naive UTC: DuckDB `TIMESTAMP` columns, dbt vars and Dagster partition keys all carry no zone; a timezone-aware
value reaching one of them would be shifted by the session's zone. Everything is converted at the edge, here.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, timedelta

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
# Dagster's range tags (`dagster/asset_partition_range_start|end`) use the partition key formats of
# partitions.py: hourly keys for the extract jobs, daily keys for the dbt/serving jobs.
HOUR_KEY_FORMAT = "%Y-%m-%d-%H:%M"
DAY_KEY_FORMAT = "%Y-%m-%d"


def naive_utc(ts: datetime) -> datetime:
    """`ts` as a naive UTC datetime (aware values are converted; naive ones are taken as UTC already)."""
    return ts.astimezone(UTC).replace(tzinfo=None) if ts.tzinfo is not None else ts


def utc_now(now: datetime | None = None) -> datetime:
    """The current instant (or `now`, injectable for tests) as naive UTC."""
    return naive_utc(now or datetime.now(UTC))


def utc_today(now: datetime | None = None) -> date:
    return utc_now(now).date()


def from_epoch(seconds: float) -> datetime:
    """Unix seconds (rounded to the second) as naive UTC."""
    return datetime.fromtimestamp(round(seconds), UTC).replace(tzinfo=None)


def to_epoch(ts: datetime) -> int:
    """Naive-UTC (or aware) datetime as whole Unix seconds."""
    return int(calendar.timegm(naive_utc(ts).timetuple()))


def hour_floor(ts: datetime) -> datetime:
    return naive_utc(ts).replace(minute=0, second=0, microsecond=0)


def midnight(day: date | datetime) -> datetime:
    return datetime(day.year, day.month, day.day)


def day_window(day: date) -> tuple[datetime, datetime]:
    """[midnight, next midnight) of `day`, naive UTC."""
    start = midnight(day)
    return start, start + DAY


def days_window(first: date, last: date) -> tuple[datetime, datetime]:
    """[midnight of `first`, midnight after `last`): the half-open window of the inclusive days first..last."""
    return midnight(first), midnight(last) + DAY


def hours_between(start: datetime, end: datetime) -> list[datetime]:
    """Hour starts in [start, end), naive UTC; `start` is floored to its hour."""
    h, stop = hour_floor(start), naive_utc(end)
    out: list[datetime] = []
    while h < stop:
        out.append(h)
        h += HOUR
    return out


def hours_of_days(first: date, last: date) -> list[datetime]:
    """Every hour of the inclusive days first..last."""
    return hours_between(*days_window(first, last))


def normalise_hours(hours: Iterable[datetime]) -> list[datetime]:
    """Distinct hour starts, naive UTC, sorted."""
    return sorted({hour_floor(h) for h in hours})


def days_between(start: date, end: date) -> list[date]:
    """Days in [start, end) (end exclusive)."""
    return [start + timedelta(days=i) for i in range(max((end - start).days, 0))]


def days_inclusive(first: date, last: date) -> list[date]:
    """Days first..last, both included."""
    return days_between(first, last + timedelta(days=1))


def days_of_window(start: datetime, end: datetime) -> list[date]:
    """The days a half-open datetime window [start, end) touches (a Dagster daily partition window -> its days)."""
    s, e = naive_utc(start), naive_utc(end)
    last = (e - timedelta(microseconds=1)).date() if e > s else s.date() - timedelta(days=1)
    return days_inclusive(s.date(), last)


def runs_of_hours(hours: Iterable[datetime]) -> list[tuple[datetime, datetime]]:
    """Contiguous runs of hours as half-open [start, end) windows (fewer provider requests for gaps)."""
    out: list[tuple[datetime, datetime]] = []
    for h in normalise_hours(hours):
        if out and out[-1][1] == h:
            out[-1] = (out[-1][0], h + HOUR)
        else:
            out.append((h, h + HOUR))
    return out


def chunks(items: list, size: int) -> Iterator[list]:
    """`items` in consecutive slices of at most `size` (hours landed in bounded chunks)."""
    for i in range(0, len(items), size):
        yield items[i:i + size]


def hour_key(ts: datetime) -> str:
    """Hourly partition key of the hour holding `ts`."""
    return hour_floor(ts).strftime(HOUR_KEY_FORMAT)


def day_key(day: date | datetime) -> str:
    return day.strftime(DAY_KEY_FORMAT)


def hourly_range_keys(first: date, last: date) -> tuple[str, str]:
    """First and last hourly partition keys of the inclusive days first..last (an extract job's range tags)."""
    return f"{day_key(first)}-00:00", f"{day_key(last)}-23:00"


def daily_range_keys(first: date, last: date) -> tuple[str, str]:
    """First and last daily partition keys of the inclusive days first..last (a daily job's range tags)."""
    return day_key(first), day_key(last)
