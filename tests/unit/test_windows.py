"""Windows, steps and accumulation (METHOD A15) at day granularity, with an injected `now`."""

from __future__ import annotations

from datetime import datetime

import pytest

from pipelines.serving.errors import QueryError
from pipelines.serving.windows import Window, parse_window, step_bounds

NOW = datetime(2024, 3, 13, 15, 30)  # a Wednesday


def d(day: int, month: int = 3) -> datetime:
    return datetime(2024, month, day)


@pytest.mark.parametrize(("text", "start", "end"), [
    ("today", d(13), d(14)),
    ("yesterday", d(12), d(13)),
    ("week", d(10), d(14)),
    ("lastweek", d(3), d(10)),
    ("month", d(1), d(14)),
    ("lastmonth", d(1, 2), d(1)),
    ("7d", d(7), d(14)),
    ("1w", d(7), d(14)),
    ("48h", d(12), d(14)),
    ("2880m", d(12), d(14)),
    ("7d offset 1d", d(6), d(13)),
    ("3d offset 24h", d(10), d(13)),
    ("1709856000,1710028800", d(8), d(10)),
    ("1709856000-1710028800", d(8), d(10)),
    ("2024-03-08T00:00:00Z,2024-03-10T00:00:00Z", d(8), d(10)),
    ("2024-03-08T01:00:00+01:00,2024-03-10T00:00:00Z", d(8), d(10)),
])
def test_windows(text: str, start: datetime, end: datetime) -> None:
    assert parse_window(text, NOW) == Window(start, end)


def test_now_with_timezone_is_utc() -> None:
    from datetime import UTC, timedelta, timezone

    now = datetime(2024, 3, 14, 0, 30, tzinfo=timezone(timedelta(hours=2)))  # = 13 March 22:30 UTC
    assert parse_window("today", now) == Window(d(13), d(14))
    assert parse_window("today", datetime(2024, 3, 13, 22, 30, tzinfo=UTC)) == Window(d(13), d(14))


@pytest.mark.parametrize("text", ["15m", "36h", "2024-03-08T12:00:00Z,2024-03-10T00:00:00Z", "1709856001,1710028800"])
def test_sub_day_windows_are_rejected_with_the_reason(text: str) -> None:
    with pytest.raises(QueryError) as exc:
        parse_window(text, NOW)
    assert "daily" in exc.value.message and exc.value.status == 400


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
