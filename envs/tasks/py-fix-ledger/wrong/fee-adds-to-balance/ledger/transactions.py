# WRONG: only withdrawals subtract; fees are added to the balance.
from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Transaction:
    account: str
    kind: str  # "deposit" | "withdrawal" | "fee"
    amount: Decimal  # always positive

    def signed(self) -> Decimal:
        """Deposits add to the balance, withdrawals and fees subtract."""
        return -self.amount if self.kind == "withdrawal" else self.amount
