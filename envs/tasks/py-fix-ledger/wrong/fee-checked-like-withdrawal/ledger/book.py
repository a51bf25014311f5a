# WRONG: fees are checked against the overdraft limit like withdrawals, so a fee can be refused.
from decimal import Decimal

from .transactions import Transaction


class Ledger:
    def __init__(self, overdraft_limit: Decimal = Decimal("0")):
        self.overdraft_limit = overdraft_limit
        self._txs = []

    def balance(self, account: str) -> Decimal:
        return sum((t.signed() for t in self._txs if t.account == account), Decimal("0"))

    def record(self, tx: Transaction) -> None:
        """Rejects non-positive amounts and withdrawals that would take the balance below
        -overdraft_limit (fees are always accepted)."""
        if tx.amount <= 0:
            raise ValueError("amount must be positive")
        if tx.kind != "deposit" and self.balance(tx.account) - tx.amount < -self.overdraft_limit:
            raise ValueError("insufficient funds")
        self._txs.append(tx)

    def transfer(self, src: str, dst: str, amount: Decimal) -> None:
        """Atomic: either both legs are recorded or neither."""
        self.record(Transaction(src, "withdrawal", amount))
        self.record(Transaction(dst, "deposit", amount))
