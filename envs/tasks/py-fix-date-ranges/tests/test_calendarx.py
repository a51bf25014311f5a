import datetime as dt

import pytest
from sandgym_harness import workspace

core = workspace.module("calendarx.core")
ranges = workspace.module("calendarx.ranges")


@pytest.mark.parametrize("y,leap", [(2024, True), (2023, False), (1900, False), (2000, True), (2100, False)])
def test_leap(y, leap):
    assert core.is_leap(y) is leap


def test_days_in_month():
    assert core.days_in_month(1900, 2) == 28
    assert core.days_in_month(2000, 2) == 29
    with pytest.raises(ValueError):
        core.days_in_month(2000, 13)


def test_range_inclusive():
    r = ranges.date_range(dt.date(2024, 1, 30), dt.date(2024, 2, 2))
    assert r == [dt.date(2024, 1, 30), dt.date(2024, 1, 31), dt.date(2024, 2, 1), dt.date(2024, 2, 2)]


def test_range_step():
    r = ranges.date_range(dt.date(2024, 1, 1), dt.date(2024, 1, 10), step_days=3)
    assert r == [dt.date(2024, 1, d) for d in (1, 4, 7, 10)]


def test_range_single_and_empty():
    assert ranges.date_range(dt.date(2024, 5, 5), dt.date(2024, 5, 5)) == [dt.date(2024, 5, 5)]
    assert ranges.date_range(dt.date(2024, 5, 6), dt.date(2024, 5, 5)) == []


def test_range_bad_step():
    with pytest.raises(ValueError):
        ranges.date_range(dt.date(2024, 1, 2), dt.date(2024, 1, 2), step_days=0)


@pytest.mark.parametrize("d,m,out", [
    (dt.date(2024, 1, 31), 1, dt.date(2024, 2, 29)), (dt.date(2023, 1, 31), 1, dt.date(2023, 2, 28)),
    (dt.date(2024, 3, 31), -1, dt.date(2024, 2, 29)), (dt.date(2024, 11, 15), 3, dt.date(2025, 2, 15)),
    (dt.date(2024, 1, 15), -13, dt.date(2022, 12, 15)),
])
def test_add_months(d, m, out):
    assert ranges.add_months(d, m) == out


def test_month_end():
    assert ranges.month_end(dt.date(1900, 2, 3)) == dt.date(1900, 2, 28)


@pytest.mark.parametrize("y,leap", [(1600, True), (1700, False), (1800, False), (2400, True), (1996, True),
                                    (2004, True), (2001, False), (2002, False), (1999, False), (4, True)])
def test_leap_more_years(y, leap):
    assert core.is_leap(y) is leap


@pytest.mark.parametrize("y,lengths", [
    (2023, [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]),
    (2024, [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]),
])
def test_days_in_every_month(y, lengths):
    assert workspace.call_many(core.days_in_month, [(y, m) for m in range(1, 13)]) == lengths


@pytest.mark.parametrize("m", [0, -1, 13, 100])
def test_days_in_month_bad_month(m):
    with pytest.raises(ValueError):
        core.days_in_month(2024, m)


def test_range_default_step_is_one_day():
    r = ranges.date_range(dt.date(2023, 12, 30), dt.date(2024, 1, 2), step_days=1)
    assert r == [dt.date(2023, 12, 30), dt.date(2023, 12, 31), dt.date(2024, 1, 1), dt.date(2024, 1, 2)]
    assert ranges.date_range(dt.date(2024, 2, 27), dt.date(2024, 3, 1)) == [
        dt.date(2024, 2, 27), dt.date(2024, 2, 28), dt.date(2024, 2, 29), dt.date(2024, 3, 1)]


def test_range_step_past_end():
    # The end is included only when a step lands on it; a step never goes beyond it.
    r = ranges.date_range(dt.date(2024, 1, 1), dt.date(2024, 1, 9), step_days=4)
    assert r == [dt.date(2024, 1, 1), dt.date(2024, 1, 5), dt.date(2024, 1, 9)]
    r = ranges.date_range(dt.date(2024, 1, 1), dt.date(2024, 1, 8), step_days=4)
    assert r == [dt.date(2024, 1, 1), dt.date(2024, 1, 5)]
    assert ranges.date_range(dt.date(2024, 1, 1), dt.date(2024, 1, 3), step_days=7) == [dt.date(2024, 1, 1)]


@pytest.mark.parametrize("step", [0, -1, -7])
def test_range_bad_steps(step):
    with pytest.raises(ValueError):
        ranges.date_range(dt.date(2024, 1, 1), dt.date(2024, 1, 10), step_days=step)


@pytest.mark.parametrize("d,m,out", [
    (dt.date(2024, 5, 17), 0, dt.date(2024, 5, 17)),
    (dt.date(2024, 12, 15), 1, dt.date(2025, 1, 15)),
    (dt.date(2024, 1, 15), -1, dt.date(2023, 12, 15)),
    (dt.date(2024, 12, 31), 12, dt.date(2025, 12, 31)),
    (dt.date(2024, 12, 31), -12, dt.date(2023, 12, 31)),
    (dt.date(2024, 6, 30), 6, dt.date(2024, 12, 30)),
    (dt.date(2024, 6, 30), -6, dt.date(2023, 12, 30)),
    (dt.date(2024, 3, 31), 1, dt.date(2024, 4, 30)),
    (dt.date(2024, 5, 31), -3, dt.date(2024, 2, 29)),
    (dt.date(2024, 8, 31), 1, dt.date(2024, 9, 30)),
    (dt.date(2024, 1, 31), 25, dt.date(2026, 2, 28)),
    (dt.date(2024, 2, 29), 12, dt.date(2025, 2, 28)),
    (dt.date(2024, 2, 29), 48, dt.date(2028, 2, 29)),
    (dt.date(2099, 12, 31), 2, dt.date(2100, 2, 28)),
    (dt.date(2024, 1, 30), -24, dt.date(2022, 1, 30)),
])
def test_add_months_more(d, m, out):
    assert ranges.add_months(d, m) == out


def test_month_end_every_month():
    got = workspace.call_many(ranges.month_end, [(dt.date(2024, m, 1 + m),) for m in range(1, 13)])
    assert got == [dt.date(2024, m, n) for m, n in
                   zip(range(1, 13), [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])]
    assert ranges.month_end(dt.date(2023, 2, 28)) == dt.date(2023, 2, 28)
    assert ranges.month_end(dt.date(2000, 2, 1)) == dt.date(2000, 2, 29)
