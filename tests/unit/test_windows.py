"""Windows, steps and accumulation (METHOD A15) at day granularity, with an injected `now`."""

from __future__ import annotations

from datetime import datetime

import pytest

from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.windows import Window, answerable_days, parse_window, step_bounds

NOW = datetime(2024, 3, 13, 15, 30)  # a Wednesday


def d(day: int, month: int = 3) -> datetime:
    return datetime(2024, month, day)


@pytest.mark.parametrize(("text", "start", "end"), [
    # as upstream parses them: today's window reaches tomorrow's midnight, week/month end now
    ("today", d(13), d(14)),
    ("yesterday", d(12), d(13)),
    ("week", d(10), NOW),
    ("lastweek", d(3), d(10)),
    ("month", d(1), NOW),
    ("lastmonth", d(1, 2), d(1)),
    ("7d", d(7), d(14)),
    ("1w", d(7), d(14)),
    ("48h", d(12), d(14)),
    ("2880m", d(12), d(14)),
    ("7d offset 1d", d(6), d(13)),
    ("3d offset 24h", d(10), d(13)),
    ("1h", datetime(2024, 3, 13, 14, 30), NOW),
    ("36h", datetime(2024, 3, 12, 3, 30), NOW),
    ("1709856000,1710028800", d(8), d(10)),
    ("1709856000-1710028800", d(8), d(10)),
    ("2024-03-08T00:00:00Z,2024-03-10T00:00:00Z", d(8), d(10)),
    ("2024-03-08T01:00:00+01:00,2024-03-10T00:00:00Z", d(8), d(10)),
    ("2024-03-08T12:00:00Z,2024-03-10T00:00:00Z", datetime(2024, 3, 8, 12), d(10)),
])
def test_windows_parse_as_upstream(text: str, start: datetime, end: datetime) -> None:
    assert parse_window(text, NOW) == Window(start, end)


@pytest.mark.parametrize(("text", "start", "end", "said"), [
    # whole-day durations move back to the last complete day, keeping their length
    ("7d", d(6), d(13), ["today (2024-03-13) is not complete", "7 complete day(s) 2024-03-06..2024-03-12"]),
    ("1d", d(12), d(13), ["1 complete day(s) 2024-03-12..2024-03-12"]),
    ("24h", d(12), d(13), ["moved back 1 day(s)"]),
    ("30d", datetime(2024, 2, 12), d(13), ["30 complete day(s)"]),
    ("7d offset 1d", d(6), d(13), []),
    # the rest loses its incomplete parts
    ("yesterday", d(12), d(13), []),
    ("week", d(10), d(13), ["today (2024-03-13) is not complete and was left out"]),
    ("month", d(1), d(13), ["today (2024-03-13) is not complete"]),
    ("lastweek", d(3), d(10), []),
    ("today", d(13), d(13), ["no complete UTC day"]),
    ("1h", d(14), d(14), ["no complete UTC day", "14:30..2024-03-13 15:30"]),
    ("36h", d(13), d(13), ["partial day 2024-03-12 (from 03:30 UTC)", "no complete UTC day"]),
    ("2024-03-08T13:00:00Z,2024-03-11T13:00:00Z", d(9), d(11),
     ["partial day 2024-03-08 (from 13:00 UTC)", "partial day 2024-03-11 (until 13:00 UTC)"]),
    ("2024-03-10T00:00:00Z,2024-03-20T00:00:00Z", d(10), d(13), ["today (2024-03-13) is not complete"]),
    ("2024-03-14T00:00:00Z,2024-03-20T00:00:00Z", d(14), d(14), ["no complete UTC day"]),
])
def test_answerable_days(text: str, start: datetime, end: datetime, said: list[str]) -> None:
    span = answerable_days(parse_window(text, NOW), NOW, text)
    assert (span.start, span.end) == (start, end) if end > start else span.empty
    notes = " ".join(span.notes)
    for part in said:
        assert part in notes, (part, notes)
    if not said:
        assert span.notes == ()


def test_now_with_timezone_is_utc() -> None:
    from datetime import UTC, timedelta, timezone

    now = datetime(2024, 3, 14, 0, 30, tzinfo=timezone(timedelta(hours=2)))  # = 13 March 22:30 UTC
    assert parse_window("today", now) == Window(d(13), d(14))
    assert parse_window("today", datetime(2024, 3, 13, 22, 30, tzinfo=UTC)) == Window(d(13), d(14))


@pytest.mark.parametrize("text", ["", "  ", "0d", "tomorrow", "7x", "2024-03-10T00:00:00Z,2024-03-08T00:00:00Z",
                                  "a,b", "1,2,3", "99999999d", "7d offset", "2024-13-01T00:00:00Z,2024-03-01T00:00:00Z"])
def test_bad_windows(text: str) -> None:
    with pytest.raises(QueryError) as exc:
        parse_window(text, NOW)
    assert exc.value.message.startswith("window: ")


def test_steps_and_accumulate() -> None:
    w = Window(d(1), d(15))  # Friday 1 March .. Thursday 14 March
    assert step_bounds(w) == [(d(1), d(15))]
    assert step_bounds(w, "1d", "all") == [(d(1), d(15))]
    assert len(step_bounds(w, "1d")) == 14
    assert step_bounds(w, "7d") == [(d(1), d(8)), (d(8), d(15))]
    assert step_bounds(w, None, "week") == [(d(1), d(3)), (d(3), d(10)), (d(10), d(15))]  # Sunday–Saturday
    assert step_bounds(Window(d(20, 2), d(5)), None, "month") == [(d(20, 2), d(1)), (d(1), d(5))]
    assert step_bounds(w, "day", "none") == step_bounds(w, "24h")
    for bad_step in ("hour", "12h", "x", "0d"):
        with pytest.raises(QueryError):
            step_bounds(w, bad_step)
    for bad_acc in ("hour", "yes", "weekly"):
        with pytest.raises(QueryError):
            step_bounds(w, None, bad_acc)
