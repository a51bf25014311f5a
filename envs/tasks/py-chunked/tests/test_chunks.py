import itertools

import pytest
from sandgym_harness import Handle, workspace

chunks = workspace.module("chunks")


def items(result):
    # a generator comes back as a handle (drained in one round trip); a returned list/tuple arrives by value
    return workspace.list(result) if isinstance(result, Handle) else list(result)


def test_chunked_basic():
    assert items(chunks.chunked(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]


def test_chunked_exact_and_empty():
    assert items(chunks.chunked([1, 2], 2)) == [[1, 2]]
    assert items(chunks.chunked([], 4)) == []


def test_chunked_lazy_infinite():
    # itertools.count() crosses as a lazily pulled iterator: an eager chunked() never returns, so a short
    # deadline (a lazy one needs milliseconds) keeps such a submission within the grading budget
    with workspace.timeout(5):
        assert workspace.take(chunks.chunked(itertools.count(), 2), 3) == [[0, 1], [2, 3], [4, 5]]


def test_chunked_one_shot_iterator():
    it = iter("abcde")  # crosses as a one-shot iterator handle, pulled from the judge
    assert items(chunks.chunked(it, 2)) == [["a", "b"], ["c", "d"], ["e"]]


@pytest.mark.parametrize("n", [0, -2, 1.5, "3"])
def test_chunked_validates_eagerly(n):
    # the call alone (no iteration) must raise
    with pytest.raises(ValueError):
        chunks.chunked([1, 2, 3], n)


def test_sliding():
    assert items(chunks.sliding([1, 2, 3, 4], 2)) == [(1, 2), (2, 3), (3, 4)]
    assert items(chunks.sliding([1, 2], 3)) == []


def test_sliding_lazy():
    with workspace.timeout(5):
        assert next(chunks.sliding(itertools.count(), 3)) == (0, 1, 2)


def test_sliding_validates():
    with pytest.raises(ValueError):
        chunks.sliding([1], 0)


def test_chunked_n_one_and_larger_than_input():
    # n = 1 is the smallest valid size; an n larger than the input gives one short chunk
    assert items(chunks.chunked("abc", 1)) == [["a"], ["b"], ["c"]]
    assert items(chunks.chunked([1, 2, 3], 10)) == [[1, 2, 3]]


def test_sliding_edges():
    assert items(chunks.sliding("abc", 1)) == [("a",), ("b",), ("c",)]
    assert items(chunks.sliding([1, 2, 3], 3)) == [(1, 2, 3)]
    assert items(chunks.sliding([], 2)) == []


def test_sliding_one_shot_iterator():
    it = iter([1, 2, 3, 4, 5])
    assert items(chunks.sliding(it, 3)) == [(1, 2, 3), (2, 3, 4), (3, 4, 5)]


@pytest.mark.parametrize("n", [-1, 2.0, "2", None])
def test_sliding_validates_eagerly(n):
    with pytest.raises(ValueError):
        chunks.sliding([1, 2, 3], n)


@pytest.mark.parametrize("fn", ["chunked", "sliding"])
def test_size_one_is_valid_and_zero_is_not(fn):
    # the boundary of "positive": 1 is accepted, 0 is refused
    f = getattr(chunks, fn)
    assert len(items(f([1, 2], 1))) == 2
    with pytest.raises(ValueError):
        f([1, 2], 0)
