from decimal import Decimal as D

import pytest
from sandgym_harness import workspace

ledger = workspace.module("ledger")  # lazy; attribute reads (ledger.Ledger) happen inside the tests, never at collection


def test_deposit_positive_balance():
    l = ledger.Ledger()
    l.record(ledger.Transaction("a", "deposit", D("10.50")))
    assert l.balance("a") == D("10.50")


def test_withdrawal_and_fee():
    l = ledger.Ledger()
    l.record(ledger.Transaction("a", "deposit", D("100")))
    l.record(ledger.Transaction("a", "withdrawal", D("30")))
    l.record(ledger.Transaction("a", "fee", D("1.25")))
    assert l.balance("a") == D("68.75")


def test_no_overdraft_by_default():
    l = ledger.Ledger()
    l.record(ledger.Transaction("a", "deposit", D("5")))
    with pytest.raises(ValueError):
        l.record(ledger.Transaction("a", "withdrawal", D("6")))
    assert l.balance("a") == D("5")


def test_overdraft_limit():
    l = ledger.Ledger(overdraft_limit=D("50"))
    l.record(ledger.Transaction("a", "withdrawal", D("50")))
    assert l.balance("a") == D("-50")
    with pytest.raises(ValueError):
        l.record(ledger.Transaction("a", "withdrawal", D("0.01")))


def test_non_positive_rejected():
    l = ledger.Ledger()
    with pytest.raises(ValueError):
        l.record(ledger.Transaction("a", "deposit", D("0")))


def test_transfer():
    l = ledger.Ledger()
    l.record(ledger.Transaction("a", "deposit", D("20")))
    l.transfer("a", "b", D("15"))
    assert (l.balance("a"), l.balance("b")) == (D("5"), D("15"))


def test_failed_transfer_is_atomic():
    l = ledger.Ledger()
    l.record(ledger.Transaction("a", "deposit", D("10")))
    with pytest.raises(ValueError):
        l.transfer("a", "b", D("11"))
    assert (l.balance("a"), l.balance("b")) == (D("10"), D("0"))


def test_fee_always_accepted():
    l = ledger.Ledger()
    l.record(ledger.Transaction("a", "fee", D("3")))
    assert l.balance("a") == D("-3")
