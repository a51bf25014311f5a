import pytest
from intervals import merge


def test_overlap():
    assert merge([(1, 3), (2, 6), (8, 10)]) == [(1, 6), (8, 10)]


def test_unsorted_input():
    assert merge([(8, 10), (1, 3), (2, 6)]) == [(1, 6), (8, 10)]


def test_touching_merge():
    assert merge([(1, 2), (2, 3)]) == [(1, 3)]


def test_contained():
    assert merge([(1, 10), (2, 3), (4, 5)]) == [(1, 10)]


def test_empty_and_single():
    assert merge([]) == []
    assert merge([(5, 5)]) == [(5, 5)]


def test_floats_and_negative():
    assert merge([(-1.5, 0), (0, 0.5), (2, 3)]) == [(-1.5, 0.5), (2, 3)]


def test_input_untouched():
    data = [[3, 4], [1, 2]]
    merge(data)
    assert data == [[3, 4], [1, 2]]


def test_returns_tuples_from_generator():
    assert merge((x, x + 1) for x in range(3)) == [(0, 3)]


def test_invalid():
    with pytest.raises(ValueError):
        merge([(3, 1)])
