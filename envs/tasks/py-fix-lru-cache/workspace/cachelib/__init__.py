from .lru import LRUCache
