from .models import Item


class Store:
    def __init__(self):
        self._items = {}

    def add(self, item: Item) -> None:
        if item.sku in self._items:
            raise KeyError(f"duplicate sku {item.sku}")
        self._items[item.sku] = item

    def remove_stock(self, sku: str, qty: int) -> None:
        item = self._items[sku]
        if qty <= 0:
            raise ValueError("qty must be positive")
        if qty > item.quantity:
            raise ValueError("not enough stock")
        item.quantity -= qty

    def items(self):
        return list(self._items.values())
