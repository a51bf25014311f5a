# WRONG: low_stock still uses <, so an item exactly at its reorder level is not listed.
def total_value_cents(store) -> int:
    """Sum of quantity * unit price over all items."""
    return sum(i.quantity * i.unit_price_cents for i in store.items())


def low_stock(store) -> list:
    """SKUs whose quantity is at or below their reorder level, sorted."""
    return sorted(i.sku for i in store.items() if i.quantity < i.reorder_level)


def format_money(cents: int) -> str:
    """12345 -> '$123.45', -5 -> '-$0.05'."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}${cents // 100}.{cents % 100:02d}"
