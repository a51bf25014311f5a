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


@pytest.mark.parametrize("matrix,expected", [
    ([[7]], [7]),
    ([[1, 2, 3]], [1, 2, 3]),
    ([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], [1, 2, 3, 4, 8, 12, 11, 10, 9, 5, 6, 7]),
    ([[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]], [1, 2, 3, 6, 9, 12, 11, 10, 7, 4, 5, 8]),
    ([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]],
     [1, 2, 3, 4, 8, 12, 16, 15, 14, 13, 9, 5, 6, 7, 11, 10]),
    ([["a", "b"], ["c", "d"]], ["a", "b", "d", "c"]),
])
def test_shapes(matrix, expected):
    # a single cell, a single row, a middle row or column left over after the outer ring, two full rings
    assert spiral.spiral(matrix) == expected


@pytest.mark.parametrize("matrix", [[[1], [2, 3]], [[1, 2], [3, 4], [5, 6, 7]], [[], [1]], [[1], []]])
def test_ragged_any_row(matrix):
    # a later row longer or shorter than the first, empty or not
    with pytest.raises(ValueError):
        spiral.spiral(matrix)


@pytest.mark.parametrize("rows,cols,expected", [
    (1, 1, [[1]]),
    (1, 4, [[1, 2, 3, 4]]),
    (4, 1, [[1], [2], [3], [4]]),
    (4, 3, [[1, 2, 3], [10, 11, 4], [9, 12, 5], [8, 7, 6]]),
    (4, 4, [[1, 2, 3, 4], [12, 13, 14, 5], [11, 16, 15, 6], [10, 9, 8, 7]]),
    (3, 5, [[1, 2, 3, 4, 5], [12, 13, 14, 15, 6], [11, 10, 9, 8, 7]]),
])
def test_fill_shapes(rows, cols, expected):
    assert spiral.fill_spiral(rows, cols) == expected
