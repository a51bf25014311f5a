import pytest
from sandgym_harness import workspace

inventory = workspace.module("inventory")
report = workspace.module("inventory.report")


def make():
    s = inventory.Store()
    s.add(inventory.Item("A1", "bolt", 10, 25, reorder_level=10))
    s.add(inventory.Item("B2", "nut", 3, 10))
    s.add(inventory.Item("C3", "gear", 50, 1999))
    return s


def quantities(s):
    # items() may return a list of handles: read each item's fields as plain values
    return {i.sku: i.quantity for i in s.items()}


def test_duplicate_sku():
    s = make()
    with pytest.raises(KeyError):
        s.add(inventory.Item("A1", "x", 1, 1))


def test_remove_partial():
    s = make()
    s.remove_stock("C3", 20)
    assert quantities(s)["C3"] == 30


def test_remove_all_remaining():
    s = make()
    s.remove_stock("B2", 3)
    assert quantities(s)["B2"] == 0


def test_remove_too_much():
    s = make()
    with pytest.raises(ValueError):
        s.remove_stock("B2", 4)


def test_remove_non_positive():
    s = make()
    with pytest.raises(ValueError):
        s.remove_stock("B2", 0)


def test_total_value():
    assert report.total_value_cents(make()) == 10 * 25 + 3 * 10 + 50 * 1999


def test_low_stock_includes_equal():
    assert report.low_stock(make()) == ["A1", "B2"]


@pytest.mark.parametrize(
    "cents,text",
    [
        (12345, "$123.45"),
        (5, "$0.05"),
        (0, "$0.00"),
        (-5, "-$0.05"),
        (-12345, "-$123.45"),
        (1, "$0.01"),
        (-1, "-$0.01"),
        (99, "$0.99"),
        (-99, "-$0.99"),
        (100, "$1.00"),
        (-100, "-$1.00"),
        (-101, "-$1.01"),
        (1000000, "$10000.00"),
    ],
)
def test_format_money(cents, text):
    assert report.format_money(cents) == text


def test_remove_one_and_negative():
    s = make()
    s.remove_stock("A1", 1)
    assert quantities(s)["A1"] == 9
    with pytest.raises(ValueError):
        s.remove_stock("A1", -1)
    assert quantities(s) == {"A1": 9, "B2": 3, "C3": 50}


def test_low_stock_boundaries():
    s = inventory.Store()
    s.add(inventory.Item("Z9", "washer", 6, 5))  # default reorder level 5: one above
    s.add(inventory.Item("M5", "spring", 5, 5))  # at the level
    s.add(inventory.Item("K0", "pin", 0, 5, reorder_level=0))  # at a zero level
    s.add(inventory.Item("D4", "clip", 4, 5))  # below
    assert report.low_stock(s) == ["D4", "K0", "M5"]
    s.remove_stock("Z9", 1)
    assert report.low_stock(s) == ["D4", "K0", "M5", "Z9"]
    assert report.low_stock(inventory.Store()) == []
    assert report.total_value_cents(inventory.Store()) == 0
    assert report.total_value_cents(s) == 5 * 5 + 5 * 5 + 0 + 4 * 5
