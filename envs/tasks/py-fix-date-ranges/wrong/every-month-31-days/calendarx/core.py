# WRONG: every month except February has 31 days, so Mar 31 + 1 month gives an invalid Apr 31.
def is_leap(year: int) -> bool:
    """Gregorian leap year."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    if not 1 <= month <= 12:
        raise ValueError("month must be 1..12")
    if month == 2:
        return 29 if is_leap(year) else 28
    return 31
