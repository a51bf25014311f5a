import pytest
from sandgym_harness import workspace

cachelib = workspace.module("cachelib")


def test_basic_get_put():
    c = cachelib.LRUCache(2)
    c.put("a", 1)
    assert c.get("a") == 1
    assert c.get("zz", "d") == "d"


def test_capacity_respected():
    c = cachelib.LRUCache(2)
    workspace.call_many(c.put, [(i, i) for i in range(5)])
    assert len(c) == 2
    assert c.evictions == 3


def test_evicts_least_recent():
    c = cachelib.LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("c", 3)
    assert "a" not in c and "b" in c and "c" in c


def test_get_refreshes():
    c = cachelib.LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.get("a")
    c.put("c", 3)
    assert "a" in c and "b" not in c


def test_update_refreshes_and_no_eviction():
    c = cachelib.LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("a", 10)
    c.put("c", 3)
    assert c.get("a") == 10 and "b" not in c
    assert c.evictions == 1


def test_capacity_one():
    c = cachelib.LRUCache(1)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") is None and c.get("b") == 2


@pytest.mark.parametrize("cap", [0, -1])
def test_invalid_capacity(cap):
    with pytest.raises(ValueError):
        cachelib.LRUCache(cap)


def test_many_operations():
    c = cachelib.LRUCache(3)
    for i in range(100):  # put and get interleave, so this cannot be one call_many (200 round trips, a few ms)
        c.put(i % 7, i)
        c.get((i + 3) % 7)
    assert len(c) == 3
