import pytest
from sandgym_harness import workspace

spiral = workspace.module("spiral")


def test_square():
    assert spiral.spiral([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == [1, 2, 3, 6, 9, 8, 7, 4, 5]


def test_wide():
    assert spiral.spiral([[1, 2, 3, 4], [5, 6, 7, 8]]) == [1, 2, 3, 4, 8, 7, 6, 5]


def test_tall():
    assert spiral.spiral([[1], [2], [3]]) == [1, 2, 3]


def test_empty():
    assert spiral.spiral([]) == []
    assert spiral.spiral([[], []]) == []


def test_ragged():
    with pytest.raises(ValueError):
        spiral.spiral([[1, 2], [3]])


def test_fill():
    assert spiral.fill_spiral(3, 4) == [[1, 2, 3, 4], [10, 11, 12, 5], [9, 8, 7, 6]]


def test_fill_roundtrip():
    m = spiral.fill_spiral(5, 3)
    assert spiral.spiral(m) == list(range(1, 16))
