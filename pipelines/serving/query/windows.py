"""Windows, steps and accumulation (METHOD A15), in UTC, answered from a daily store.

A window is parsed as Kubecost/OpenCost define it (`parse_window`), then answered with the whole UTC days it
covers that are complete (`answerable_days`); the marts hold nothing finer, and a day is complete only once it
has ended. What is left out is never silent: every adjustment becomes a note for the response's `warning`.

- Relative durations (`Nd`, `Nw`, `Nh`/`Nm` that are whole days, with or without `offset`) are the N days ending
  at the last complete day: `7d` asked during 1 Dec is 24–30 Nov (upstream: 25 Nov–1 Dec, today included). The
  length is kept, the window moves back by the incomplete part.
- Everything else keeps its bounds and loses its incomplete parts: `today` has none yet; `week`/`month` end at
  today's midnight; a pair with edges inside a day (a Grafana range) drops the partial first and last days; a
  sub-day duration (`1h`, `36h`) keeps the whole days inside it (usually none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pipelines.serving.query.errors import QueryError
from pipelines.timeutil import DAY, from_epoch, midnight, naive_utc, utc_now

MAX_DAYS = 3660
MAX_STEPS = 1100
WINDOW_ALLOWED = ("use today, yesterday, week, month, lastweek, lastmonth, Nd, Nw, Nh, Nm, "
                  "'Nd offset Md', a unix pair 'start,end' or an RFC3339 pair "
                  "'2024-03-01T00:00:00Z,2024-03-08T00:00:00Z'")
_DURATION = re.compile(r"^(\d{1,7})([mhdw])(?:\s+offset\s+(\d{1,7})([mhdw]))?$")
_UNIT_MINUTES = {"m": 1, "h": 60, "d": 1440, "w": 10080}


@dataclass(frozen=True)
class Window:
    start: datetime  # naive UTC, inclusive
    end: datetime  # naive UTC, exclusive
    relative: bool = field(default=False, compare=False)  # a whole-day duration: moves back to complete days

    @property
    def days(self) -> int:
        return (self.end - self.start).days


@dataclass(frozen=True)
class DaySpan:
    """The whole, complete UTC days that answer a window: [start, end) (empty when start == end)."""

    start: datetime
    end: datetime
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return self.end <= self.start


def _minutes(count: int, unit: str) -> int:
    return count * _UNIT_MINUTES[unit]


def _parse_instant(text: str, part: str) -> datetime:
    part = part.strip()
    if re.fullmatch(r"\d{1,12}", part):
        try:
            return from_epoch(int(part))
        except (OverflowError, OSError, ValueError):
            raise QueryError("window", text, WINDOW_ALLOWED) from None
    try:
        dt = datetime.fromisoformat(part)
    except ValueError:
        raise QueryError("window", text, WINDOW_ALLOWED) from None
    return naive_utc(dt)


def parse_window(text: str | None, now: datetime | None = None) -> Window:
    """Parse a Kubecost/OpenCost/ACK window as upstream does (UTC); `now` is injectable for tests.

    Whole-day durations (`Nd`, `Nw`, and `Nh`/`Nm` that are multiples of a day) run to the end of today, as
    upstream's `Nd`; shorter durations end now."""
    if text is None or not str(text).strip():
        raise QueryError("window", "''", "a window is required; " + WINDOW_ALLOWED)
    raw = str(text)
    t = raw.strip().lower()
    n = utc_now(now)
    today = midnight(n)
    if t == "today":
        return Window(today, today + DAY)
    if t == "yesterday":
        return Window(today - DAY, today)
    if t in ("week", "lastweek"):
        sunday = today - timedelta(days=(today.weekday() + 1) % 7)  # Monday=0 → Sunday-based weeks
        return Window(sunday, n) if t == "week" else Window(sunday - 7 * DAY, sunday)
    if t in ("month", "lastmonth"):
        first = today.replace(day=1)
        if t == "month":
            return Window(first, n)
        prev = (first - DAY).replace(day=1)
        return Window(prev, first)
    m = _DURATION.match(t)
    if m:
        length = _minutes(int(m.group(1)), m.group(2))
        offset = _minutes(int(m.group(3)), m.group(4)) if m.group(3) else 0
        if length < 1 or length > MAX_DAYS * 1440 or offset > MAX_DAYS * 1440:
            raise QueryError("window", raw, f"the duration must be 1 minute..{MAX_DAYS} days")
        if length % 1440 == 0 and offset % 1440 == 0:
            end = today + DAY - timedelta(minutes=offset)
            return _checked(raw, end - timedelta(minutes=length), end, relative=True)
        end = n - timedelta(minutes=offset)
        return _checked(raw, end - timedelta(minutes=length), end)
    parts = raw.strip().split(",")  # case kept: fromisoformat wants 'T' and 'Z'
    if len(parts) == 1 and re.fullmatch(r"\d{1,12}-\d{1,12}", t):
        parts = t.split("-")
    if len(parts) != 2:
        raise QueryError("window", raw, WINDOW_ALLOWED)
    start, end = (_parse_instant(raw, p) for p in parts)
    return _checked(raw, start, end)


def _checked(raw: str, start: datetime, end: datetime, relative: bool = False) -> Window:
    if end <= start:
        raise QueryError("window", raw, "the start must be before the end")
    if (end - start).days > MAX_DAYS:
        raise QueryError("window", raw, f"at most {MAX_DAYS} days")
    if start.year < 1971:
        raise QueryError("window", raw, "the start must be after 1970")
    return Window(start, end, relative)


def _day(dt: datetime) -> str:
    return dt.date().isoformat()


def answerable_days(window: Window, now: datetime | None = None, raw: str = "") -> DaySpan:
    """The complete whole UTC days answering `window`, with a note for everything left out or moved."""
    today = midnight(utc_now(now))
    notes: list[str] = []
    label = f"window {raw!r}: " if raw else "window: "
    if window.relative and window.end > today:
        shift = window.end - today
        start, end = window.start - shift, today
        notes.append(f"{label}today ({_day(today)}) is not complete; answered with the {(end - start).days} "
                     f"complete day(s) {_day(start)}..{_day(end - DAY)} (moved back "
                     f"{shift.days} day(s); the store is daily)")
        return DaySpan(start, end, tuple(notes))
    start = midnight(window.start)
    if start < window.start:
        start += DAY
        if start <= today:
            notes.append(f"{label}the partial day {_day(window.start)} (from {window.start:%H:%M} UTC) was left out; "
                         "the store is daily")
    end = midnight(window.end)
    if window.end > today:
        end = today
        if start < today:
            notes.append(f"{label}today ({_day(today)}) is not complete and was left out")
    elif end < window.end:
        notes.append(f"{label}the partial day {_day(end)} (until {window.end:%H:%M} UTC) was left out; "
                     "the store is daily")
    if end <= start:
        notes.append(f"{label}no complete UTC day lies inside {window.start:%Y-%m-%d %H:%M}.."
                     f"{window.end:%Y-%m-%d %H:%M} UTC (today, {_day(today)}, is never complete); the store is "
                     "daily, so nothing is answered")
        return DaySpan(start, start, tuple(notes))
    return DaySpan(start, end, tuple(notes))


_ACCUMULATE = {"": "none", "false": "none", "none": "none", "true": "all", "all": "all",
               "day": "day", "week": "week", "month": "month", "quarter": "quarter"}
ACCUMULATE_ALLOWED = "use true|all, false|none, day, week (Sunday–Saturday), month or quarter"
STEP_ALLOWED = "use day, week, month, quarter, Nd, Nw or Nh (N multiple of 24)"


def normalise_accumulate(value: str | None) -> str:
    v = (value or "").strip().lower()
    if v == "hour":
        raise QueryError("accumulate", value, "our marts are daily, hourly sets do not exist; " + ACCUMULATE_ALLOWED)
    if v not in _ACCUMULATE:
        raise QueryError("accumulate", value, ACCUMULATE_ALLOWED)
    return _ACCUMULATE[v]


def _calendar_start(dt: datetime, unit: str) -> datetime:
    if unit == "day":
        return dt
    if unit == "week":
        return dt - timedelta(days=(dt.weekday() + 1) % 7)
    if unit == "month":
        return dt.replace(day=1)
    return dt.replace(month=(dt.month - 1) // 3 * 3 + 1, day=1)  # quarter


def _calendar_next(dt: datetime, unit: str) -> datetime:
    if unit == "day":
        return dt + DAY
    if unit == "week":
        return dt + 7 * DAY
    months = 1 if unit == "month" else 3
    month = dt.month - 1 + months
    return dt.replace(year=dt.year + month // 12, month=month % 12 + 1, day=1)


def step_bounds(window: Window, step: str | None = None, accumulate: str | None = None) -> list[tuple[datetime, datetime]]:
    """The sets of a query: `accumulate` all → one; day/week/month/quarter → calendar sets clipped to the window;
    otherwise `step` (default: the window) — durations run forward from the start, named units are calendar."""
    acc = normalise_accumulate(accumulate)
    if acc == "all":
        return [(window.start, window.end)]
    unit: str | None = acc if acc != "none" else None
    length: timedelta | None = None
    if unit is None and step is not None and str(step).strip():
        s = str(step).strip().lower()
        if s == "hour":
            raise QueryError("step", step, "our marts are daily, hourly sets do not exist; " + STEP_ALLOWED)
        if s in ("day", "week", "month", "quarter"):
            unit = s
        else:
            m = re.fullmatch(r"(\d{1,7})([mhdw])", s)
            if not m:
                raise QueryError("step", step, STEP_ALLOWED)
            minutes = int(m.group(1)) * _UNIT_MINUTES[m.group(2)]
            if minutes % 1440 or minutes == 0:
                raise QueryError("step", step, "our marts are daily: the step must be whole days; " + STEP_ALLOWED)
            length = timedelta(minutes=minutes)
    if unit is None and length is None:
        return [(window.start, window.end)]
    bounds: list[tuple[datetime, datetime]] = []
    cur = window.start
    while cur < window.end:
        if length is not None:
            nxt = cur + length
        else:
            assert unit is not None
            nxt = _calendar_next(_calendar_start(cur, unit), unit)
        bounds.append((cur, min(nxt, window.end)))
        cur = nxt
        if len(bounds) > MAX_STEPS:
            raise QueryError("step", step or accumulate, f"at most {MAX_STEPS} sets per query; use a larger step")
    return bounds


MAX_LIMIT = 100_000  # rows per answer page (offset/limit)
FORMATS = ("json", "csv")


@dataclass
class WindowQuery:
    """The parameters every query over a window has (allocation and asset queries extend it); the subclass's
    `validate()` fills `_checked` once."""

    window: str
    aggregate: str = ""
    filter: str = ""
    step: str | None = None
    accumulate: str | None = None
    offset: int = 0
    limit: int | None = None
    format: str = "json"
    notes: tuple[str, ...] = ()  # warnings from parameter mapping (ignored parameters…)
    now: datetime | None = None
    _checked: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def checked_window(self) -> tuple[Window, DaySpan, list[tuple[datetime, datetime]]]:
        """The shared checks (format, offset/limit, window, step): the window, the days of it the marts can
        answer, and the step bounds (none when no day can be answered; a CSV answer is one accumulated set).
        Steps are checked even then, so a bad step is a 400 in any window."""
        if self.format not in FORMATS:
            raise QueryError("format", self.format, "use json or csv")
        if not 0 <= self.offset <= MAX_LIMIT:
            raise QueryError("offset", self.offset, f"an integer 0..{MAX_LIMIT}")
        if self.limit is not None and not 0 < self.limit <= MAX_LIMIT:
            raise QueryError("limit", self.limit, f"an integer 1..{MAX_LIMIT}")
        win = parse_window(self.window, self.now)
        span = answerable_days(win, self.now, self.window)
        steps = step_bounds(Window(span.start, max(span.end, span.start + DAY)), self.step,
                            "all" if self.format == "csv" else self.accumulate)
        return win, span, [] if span.empty else steps
