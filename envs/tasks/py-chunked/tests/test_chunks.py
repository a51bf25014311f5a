import itertools
import pytest
from chunks import chunked, sliding


def test_chunked_basic():
    assert list(chunked(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]


def test_chunked_exact_and_empty():
    assert list(chunked([1, 2], 2)) == [[1, 2]]
    assert list(chunked([], 4)) == []


def test_chunked_lazy_infinite():
    assert list(itertools.islice(chunked(itertools.count(), 2), 3)) == [[0, 1], [2, 3], [4, 5]]


def test_chunked_one_shot_iterator():
    it = iter("abcde")
    assert list(chunked(it, 2)) == [["a", "b"], ["c", "d"], ["e"]]


@pytest.mark.parametrize("n", [0, -2, 1.5, "3"])
def test_chunked_validates_eagerly(n):
    with pytest.raises(ValueError):
        chunked([1, 2, 3], n)


def test_sliding():
    assert list(sliding([1, 2, 3, 4], 2)) == [(1, 2), (2, 3), (3, 4)]
    assert list(sliding([1, 2], 3)) == []


def test_sliding_lazy():
    assert next(sliding(itertools.count(), 3)) == (0, 1, 2)


def test_sliding_validates():
    with pytest.raises(ValueError):
        sliding([1], 0)
