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


def test_merges_into_later_groups():
    assert intervals.merge([(1, 2), (5, 6), (6, 8), (7, 9), (20, 21), (21, 21), (10, 11)]) == [
        (1, 2), (5, 9), (10, 11), (20, 21)]


def test_same_start_and_chain():
    assert intervals.merge([(1, 5), (1, 2)]) == [(1, 5)]
    assert intervals.merge([(4, 5), (3, 4), (2, 3), (1, 2)]) == [(1, 5)]
    assert intervals.merge([(1, 1), (1, 1)]) == [(1, 1)]
    assert intervals.merge([(0, 1), (2, 3)]) == [(0, 1), (2, 3)]


def test_gap_just_above_touching():
    assert intervals.merge([(0, 1), (1.001, 2)]) == [(0, 1), (1.001, 2)]
    assert intervals.merge([(-5, -3), (-3, -1), (-0.5, 0)]) == [(-5, -1), (-0.5, 0)]


@pytest.mark.parametrize("data", [[(1, 2), (5, 3)], [(0.5, 0.4)], [(1, 2), (2, 3), (0, -1)]])
def test_invalid_anywhere(data):
    with pytest.raises(ValueError):
        intervals.merge(data)


def _oracle(pairs):
    out = []
    for s, e in sorted(pairs):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def test_random_against_oracle():
    import random
    rng = random.Random(20)
    cases = []
    for _ in range(300):
        pairs = []
        for _ in range(rng.randint(0, 12)):
            s = rng.randint(-20, 20)
            pairs.append((s, s + rng.randint(0, 6)))
        cases.append(pairs)
    got = workspace.call_many(intervals.merge, [(c,) for c in cases])
    assert got == [_oracle(c) for c in cases]
