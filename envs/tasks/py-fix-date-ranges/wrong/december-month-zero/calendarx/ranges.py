# WRONG: add_months computes the month as (month + n) % 12, so landing in December gives month 0
# (ValueError) and the year rolls over one month early.
import datetime as dt

from .core import days_in_month


def date_range(start: dt.date, end: dt.date, step_days: int = 1) -> list:
    """Dates from start to end INCLUSIVE, every step_days days (step_days >= 1)."""
    if step_days < 1:
        raise ValueError("step_days must be >= 1")
    out = []
    d = start
    while d <= end:
        out.append(d)
        d += dt.timedelta(days=step_days)
    return out


def add_months(d: dt.date, months: int) -> dt.date:
    """Same day-of-month `months` later (may be negative), clamped to the month's last day."""
    total = d.month + months
    year = d.year + total // 12
    month = total % 12
    return dt.date(year, month, min(d.day, days_in_month(year, month)))


def month_end(d: dt.date) -> dt.date:
    return dt.date(d.year, d.month, days_in_month(d.year, d.month))
