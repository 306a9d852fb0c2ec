"""Windows, steps and accumulation (METHOD A15), in UTC, at day granularity.

Our marts are daily, so every window must fall on UTC midnights. A window that does not (`15m`, `36h`,
`…T12:00:00Z`) is rejected with a 400 that says so instead of being silently rounded: a rounded window would
report costs for hours the caller did not ask about. `Nh` is accepted when N is a multiple of 24.
Durations follow OpenCost: end = today's midnight + 1 day, start = end − N (`7d` = today and the 6 days before).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pipelines.serving.errors import QueryError

DAY = timedelta(days=1)
MAX_DAYS = 3660
MAX_STEPS = 1100
DAILY_ONLY = "our marts are daily: windows must start and end at 00:00 UTC (Nh needs N a multiple of 24)"
WINDOW_ALLOWED = ("use today, yesterday, week, month, lastweek, lastmonth, Nd, Nw, Nh (N multiple of 24), "
                  "'Nd offset Md', a unix pair 'start,end' or an RFC3339 pair "
                  "'2024-03-01T00:00:00Z,2024-03-08T00:00:00Z'")
_DURATION = re.compile(r"^(\d{1,7})([mhdw])(?:\s+offset\s+(\d{1,7})([mhdw]))?$")
_UNIT_MINUTES = {"m": 1, "h": 60, "d": 1440, "w": 10080}


@dataclass(frozen=True)
class Window:
    start: datetime  # naive UTC midnight, inclusive
    end: datetime  # naive UTC midnight, exclusive

    @property
    def days(self) -> int:
        return (self.end - self.start).days


def _midnight(dt: datetime) -> datetime:
    return datetime(dt.year, dt.month, dt.day)


def _utc_now(now: datetime | None) -> datetime:
    n = now or datetime.now(UTC)
    if n.tzinfo is not None:
        n = n.astimezone(UTC).replace(tzinfo=None)
    return n


def _days_of(text: str, count: int, unit: str) -> int:
    minutes = count * _UNIT_MINUTES[unit]
    if minutes % 1440:
        raise QueryError("window", text, DAILY_ONLY)
    return minutes // 1440


def _parse_instant(text: str, part: str) -> datetime:
    part = part.strip()
    if re.fullmatch(r"\d{1,12}", part):
        try:
            return datetime.fromtimestamp(int(part), UTC).replace(tzinfo=None)
        except (OverflowError, OSError, ValueError):
            raise QueryError("window", text, WINDOW_ALLOWED) from None
    try:
        dt = datetime.fromisoformat(part)
    except ValueError:
        raise QueryError("window", text, WINDOW_ALLOWED) from None
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC).replace(tzinfo=None)
    return dt


def parse_window(text: str | None, now: datetime | None = None) -> Window:
    """Parse a Kubecost/OpenCost/ACK window into whole UTC days; `now` is injectable for tests."""
    if text is None or not str(text).strip():
        raise QueryError("window", "''", "a window is required; " + WINDOW_ALLOWED)
    raw = str(text)
    t = raw.strip().lower()
    today = _midnight(_utc_now(now))
    if t == "today":
        return Window(today, today + DAY)
    if t == "yesterday":
        return Window(today - DAY, today)
    if t in ("week", "lastweek"):
        sunday = today - timedelta(days=(today.weekday() + 1) % 7)  # Monday=0 → Sunday-based weeks
        return Window(sunday, today + DAY) if t == "week" else Window(sunday - 7 * DAY, sunday)
    if t in ("month", "lastmonth"):
        first = today.replace(day=1)
        if t == "month":
            return Window(first, today + DAY)
        prev = (first - DAY).replace(day=1)
        return Window(prev, first)
    m = _DURATION.match(t)
    if m:
        days = _days_of(raw, int(m.group(1)), m.group(2))
        offset = _days_of(raw, int(m.group(3)), m.group(4)) if m.group(3) else 0
        if days < 1 or days > MAX_DAYS or offset > MAX_DAYS:
            raise QueryError("window", raw, f"the duration must be 1..{MAX_DAYS} days")
        end = today + DAY - offset * DAY
        return _checked(raw, end - days * DAY, end)
    parts = raw.strip().split(",")  # case kept: fromisoformat wants 'T' and 'Z'
    if len(parts) == 1 and re.fullmatch(r"\d{1,12}-\d{1,12}", t):
        parts = t.split("-")
    if len(parts) != 2:
        raise QueryError("window", raw, WINDOW_ALLOWED)
    start, end = (_parse_instant(raw, p) for p in parts)
    return _checked(raw, start, end)


def _checked(raw: str, start: datetime, end: datetime) -> Window:
    if start != _midnight(start) or end != _midnight(end):
        raise QueryError("window", raw, DAILY_ONLY)
    if end <= start:
        raise QueryError("window", raw, "the start must be before the end")
    if (end - start).days > MAX_DAYS:
        raise QueryError("window", raw, f"at most {MAX_DAYS} days")
    if start.year < 1971:
        raise QueryError("window", raw, "the start must be after 1970")
    return Window(start, end)


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
