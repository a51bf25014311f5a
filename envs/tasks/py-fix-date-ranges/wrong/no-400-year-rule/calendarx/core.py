# WRONG: forgets the 400-year rule, so 2000 and 1600 are not leap years.
def is_leap(year: int) -> bool:
    """Gregorian leap year."""
    return year % 4 == 0 and year % 100 != 0


def days_in_month(year: int, month: int) -> int:
    if not 1 <= month <= 12:
        raise ValueError("month must be 1..12")
    if month == 2:
        return 29 if is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31
