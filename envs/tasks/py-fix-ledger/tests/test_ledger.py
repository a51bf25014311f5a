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


def test_named_accounts_are_separate():
    # Account names are compared by value, whatever objects carry them.
    l = ledger.Ledger()
    l.record(ledger.Transaction("alice", "deposit", D("40")))
    l.record(ledger.Transaction("bob", "deposit", D("7")))
    l.transfer("alice", "bob", D("12.50"))
    l.record(ledger.Transaction("bob", "fee", D("0.50")))
    assert (l.balance("alice"), l.balance("bob"), l.balance("carol")) == (D("27.50"), D("19.00"), D("0"))


def test_small_and_negative_amounts():
    l = ledger.Ledger()
    l.record(ledger.Transaction("a", "deposit", D("1")))
    l.record(ledger.Transaction("a", "deposit", D("0.01")))
    l.record(ledger.Transaction("a", "withdrawal", D("1.01")))
    assert l.balance("a") == D("0")
    for kind in ("deposit", "withdrawal", "fee"):
        with pytest.raises(ValueError):
            l.record(ledger.Transaction("a", kind, D("-1")))
    assert l.balance("a") == D("0")


def test_overdraft_limit_with_prior_balance():
    l = ledger.Ledger(overdraft_limit=D("20"))
    l.record(ledger.Transaction("a", "deposit", D("10")))
    l.record(ledger.Transaction("a", "withdrawal", D("25")))
    l.record(ledger.Transaction("a", "fee", D("5")))
    assert l.balance("a") == D("-20")
    with pytest.raises(ValueError):
        l.record(ledger.Transaction("a", "withdrawal", D("0.01")))
    l.record(ledger.Transaction("a", "fee", D("1")))
    assert l.balance("a") == D("-21")
    l.record(ledger.Transaction("a", "deposit", D("1.01")))
    l.record(ledger.Transaction("a", "withdrawal", D("0.01")))
    assert l.balance("a") == D("-20")


def test_recorded_transactions_are_immutable():
    # The API's Transaction is a frozen dataclass: a recorded transaction cannot be edited behind the ledger's back.
    l = ledger.Ledger()
    tx = ledger.Transaction("acct", "deposit", D("5"))
    l.record(tx)
    with pytest.raises(AttributeError):
        tx.amount = D("500")
    assert tx.amount == D("5")
    assert l.balance("acct") == D("5")
