import pytest
from flat import flatten, unflatten


def test_nested():
    assert flatten({"a": {"b": 1, "c": {"d": 2}}, "e": 3}) == {"a.b": 1, "a.c.d": 2, "e": 3}


def test_custom_sep():
    assert flatten({"a": {"b": 1}}, sep="/") == {"a/b": 1}


def test_empty_dict_kept():
    assert flatten({"a": {}, "b": 1}) == {"a": {}, "b": 1}


def test_lists_are_leaves():
    assert flatten({"a": [1, {"b": 2}]}) == {"a": [1, {"b": 2}]}


def test_non_string_keys():
    assert flatten({1: {2: "x"}}) == {"1.2": "x"}


def test_collision():
    with pytest.raises(ValueError):
        flatten({"a.b": 1, "a": {"b": 2}})


def test_unflatten():
    assert unflatten({"a.b": 1, "a.c.d": 2, "e": 3}) == {"a": {"b": 1, "c": {"d": 2}}, "e": 3}


def test_roundtrip():
    d = {"x": {"y": {"z": 1}, "w": [1, 2]}, "v": None}
    assert unflatten(flatten(d)) == d
