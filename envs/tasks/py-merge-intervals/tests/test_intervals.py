import pytest
from sandgym_harness import workspace

intervals = workspace.module("intervals")


def test_overlap():
    assert intervals.merge([(1, 3), (2, 6), (8, 10)]) == [(1, 6), (8, 10)]


def test_unsorted_input():
    assert intervals.merge([(8, 10), (1, 3), (2, 6)]) == [(1, 6), (8, 10)]


def test_touching_merge():
    assert intervals.merge([(1, 2), (2, 3)]) == [(1, 3)]


def test_contained():
    assert intervals.merge([(1, 10), (2, 3), (4, 5)]) == [(1, 10)]


def test_empty_and_single():
    assert intervals.merge([]) == []
    assert intervals.merge([(5, 5)]) == [(5, 5)]


def test_floats_and_negative():
    assert intervals.merge([(-1.5, 0), (0, 0.5), (2, 3)]) == [(-1.5, 0.5), (2, 3)]


def test_input_untouched():
    # The input lives in the worker (workspace.ref) so an in-place sort or a write into an input pair shows.
    data = workspace.ref([[3, 4], [1, 2]])
    intervals.merge(data)
    assert workspace.value(data) == [[3, 4], [1, 2]]


def test_returns_tuples_from_generator():
    assert intervals.merge((x, x + 1) for x in range(3)) == [(0, 3)]


def test_invalid():
    with pytest.raises(ValueError):
        intervals.merge([(3, 1)])
