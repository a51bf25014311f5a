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


def test_collision_either_order():
    with pytest.raises(ValueError):
        flat.flatten({"a": {"b": 2}, "a.b": 1})
    with pytest.raises(ValueError):
        flat.flatten({1: "x", "1": "y"})
    with pytest.raises(ValueError):
        flat.flatten({"a": {"b/c": 1, "b": {"c": 2}}}, sep="/")


def test_empty_and_deep():
    assert flat.flatten({}) == {}
    assert flat.unflatten({}) == {}
    assert flat.flatten({"a": {"b": {"c": {"d": {}}}}, "e": {"f": None}}) == {"a.b.c.d": {}, "e.f": None}


def test_multichar_sep_both_ways():
    assert flat.flatten({"a": {"b": {"c": 1}}, "d": 2}, sep="::") == {"a::b::c": 1, "d": 2}
    assert flat.unflatten({"a::b::c": 1, "a::x": 2, "d.e": 3}, sep="::") == {"a": {"b": {"c": 1}, "x": 2}, "d.e": 3}
    assert flat.unflatten({"a/b": 1, "a/c": 2}, sep="/") == {"a": {"b": 1, "c": 2}}

