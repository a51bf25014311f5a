# WRONG: updating an existing key changes its value but does not make it most recently used.
from .dlist import DList, Node


class LRUCache:
    """Holds at most `capacity` entries; get() and put() mark a key as most recently used and
    put() evicts the least recently used entry when full. capacity must be >= 1."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity = capacity
        self._map = {}
        self._list = DList()
        self.evictions = 0

    def get(self, key, default=None):
        node = self._map.get(key)
        if node is None:
            return default
        self._list.unlink(node)
        self._list.push_front(node)
        return node.value

    def put(self, key, value) -> None:
        node = self._map.get(key)
        if node is not None:
            node.value = value
            return
        if len(self._map) >= self.capacity:
            old = self._list.pop_back()
            del self._map[old.key]
            self.evictions += 1
        node = Node(key, value)
        self._list.push_front(node)
        self._map[key] = node

    def __len__(self):
        return len(self._map)

    def __contains__(self, key):
        return key in self._map
