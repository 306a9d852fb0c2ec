"""The one time module: naive UTC at the edges, half-open windows, inclusive day lists, partition range keys."""

from datetime import UTC, date, datetime, timedelta, timezone

from pipelines import timeutil as t


def test_aware_values_become_naive_utc():
    cet = timezone(timedelta(hours=1))
    assert t.naive_utc(datetime(2026, 3, 1, 1, 30, tzinfo=cet)) == datetime(2026, 3, 1, 0, 30)
    assert t.naive_utc(datetime(2026, 3, 1, 1, 30)) == datetime(2026, 3, 1, 1, 30)
    assert t.utc_now(datetime(2026, 3, 1, 0, 30, tzinfo=cet)) == datetime(2026, 2, 28, 23, 30)
    assert t.to_epoch(datetime(1970, 1, 1, 1)) == 3600
    assert t.from_epoch(3600.4) == datetime(1970, 1, 1, 1)
    assert t.to_epoch(datetime(1970, 1, 1, 2, tzinfo=timezone(timedelta(hours=1)))) == 3600


def test_hours_and_days():
    hours = t.hours_between(datetime(2026, 3, 1, 22, 15), datetime(2026, 3, 2, 1))
    assert hours == [datetime(2026, 3, 1, h) for h in (22, 23)] + [datetime(2026, 3, 2, 0)]
    assert len(t.hours_of_days(date(2026, 3, 1), date(2026, 3, 3))) == 72
    assert t.hours_between(datetime(2026, 3, 2), datetime(2026, 3, 1)) == []
    assert t.days_between(date(2026, 3, 1), date(2026, 3, 3)) == [date(2026, 3, 1), date(2026, 3, 2)]
    assert t.days_inclusive(date(2026, 3, 1), date(2026, 3, 1)) == [date(2026, 3, 1)]
    assert t.days_of_window(datetime(2026, 3, 1), datetime(2026, 3, 3)) == [date(2026, 3, 1), date(2026, 3, 2)]
    assert t.days_of_window(datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)) == []
    assert t.days_window(date(2026, 3, 1), date(2026, 3, 2)) == (datetime(2026, 3, 1), datetime(2026, 3, 3))


def test_runs_and_chunks():
    hs = [datetime(2026, 3, 1, h) for h in (5, 1, 2, 2, 4)]
    assert t.runs_of_hours(hs) == [(datetime(2026, 3, 1, 1), datetime(2026, 3, 1, 3)),
                                   (datetime(2026, 3, 1, 4), datetime(2026, 3, 1, 6))]
    assert list(t.chunks(list(range(7)), 3)) == [[0, 1, 2], [3, 4, 5], [6]]


def test_partition_keys_match_the_partition_definitions():
    from pipelines.dagster_defs.partitions import daily_partitions, hourly_partitions

    assert hourly_partitions.fmt == t.HOUR_KEY_FORMAT and daily_partitions.fmt == t.DAY_KEY_FORMAT
    assert t.hour_key(datetime(2026, 3, 1, 7, 59)) == "2026-03-01-07:00"
    assert t.hourly_range_keys(date(2026, 3, 1), date(2026, 3, 2)) == ("2026-03-01-00:00", "2026-03-02-23:00")
    assert t.daily_range_keys(date(2026, 3, 1), date(2026, 3, 2)) == ("2026-03-01", "2026-03-02")
