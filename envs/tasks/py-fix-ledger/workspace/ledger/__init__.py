from .book import Ledger
from .transactions import Transaction
