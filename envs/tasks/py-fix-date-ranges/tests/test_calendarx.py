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
