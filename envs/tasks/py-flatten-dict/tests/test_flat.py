import pytest
from sandgym_harness import workspace

flat = workspace.module("flat")


def test_nested():
    assert flat.flatten({"a": {"b": 1, "c": {"d": 2}}, "e": 3}) == {"a.b": 1, "a.c.d": 2, "e": 3}


def test_custom_sep():
    assert flat.flatten({"a": {"b": 1}}, sep="/") == {"a/b": 1}


def test_empty_dict_kept():
    assert flat.flatten({"a": {}, "b": 1}) == {"a": {}, "b": 1}


def test_lists_are_leaves():
    assert flat.flatten({"a": [1, {"b": 2}]}) == {"a": [1, {"b": 2}]}


def test_non_string_keys():
    assert flat.flatten({1: {2: "x"}}) == {"1.2": "x"}


def test_collision():
    with pytest.raises(ValueError):
        flat.flatten({"a.b": 1, "a": {"b": 2}})


def test_unflatten():
    assert flat.unflatten({"a.b": 1, "a.c.d": 2, "e": 3}) == {"a": {"b": 1, "c": {"d": 2}}, "e": 3}


def test_roundtrip():
    d = {"x": {"y": {"z": 1}, "w": [1, 2]}, "v": None}
    assert flat.unflatten(flat.flatten(d)) == d
