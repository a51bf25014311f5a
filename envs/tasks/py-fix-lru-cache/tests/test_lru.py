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


def test_large_capacity():
    c = cachelib.LRUCache(300)
    workspace.call_many(c.put, [(i, i * 2) for i in range(400)])
    assert len(c) == 300
    assert c.evictions == 100
    assert workspace.call_many(c.get, [(i,) for i in (0, 99, 100, 399)]) == [None, None, 200, 798]


def test_recency_order_of_several_keys():
    c = cachelib.LRUCache(3)
    for k in "abc":
        c.put(k, k.upper())
    c.get("a")
    c.put("b", "B2")
    c.put("d", "D")  # evicts c, the least recently used
    assert ("c" in c, "a" in c, "b" in c, "d" in c) == (False, True, True, True)
    c.put("e", "E")  # evicts a
    assert "a" not in c and c.get("b") == "B2"
    c.put("f", "F")  # evicts d (b was just read)
    assert ("d" in c, "e" in c, "b" in c, "f" in c) == (False, True, True, True)
    assert c.evictions == 3 and len(c) == 3


def test_missing_get_does_not_change_order():
    c = cachelib.LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("x") is None
    c.put("c", 3)
    assert "a" not in c and c.get("b") == 2 and c.get("c") == 3
