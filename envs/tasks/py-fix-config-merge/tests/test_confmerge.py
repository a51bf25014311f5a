import copy

from sandgym_harness import workspace

load = workspace.module("confmerge.load")
merge = workspace.module("confmerge.merge")

BASE = {"db": {"host": "localhost", "port": 5432, "opts": ["a"]}, "debug": False}


def test_override_scalar():
    assert merge.deep_merge(BASE, {"debug": True})["debug"] is True


def test_nested_merge():
    out = merge.deep_merge(BASE, {"db": {"port": 6543}})
    assert out["db"] == {"host": "localhost", "port": 6543, "opts": ["a"]}


def test_inputs_not_modified():
    # Inputs and result live in the worker (workspace.ref / call_ref): a merge that writes into its inputs, or a
    # result that shares a nested list/dict with them, shows in the values read back.
    base = workspace.ref(copy.deepcopy(BASE))
    over = workspace.ref({"db": {"port": 1, "opts": ["b"]}})
    out = workspace.call_ref(merge.deep_merge, base, over)
    workspace.item_ref(out, "db", "opts").append("c")
    assert workspace.value(base) == BASE
    assert workspace.value(over) == {"db": {"port": 1, "opts": ["b"]}}


def test_lists_replace():
    assert merge.deep_merge(BASE, {"db": {"opts": ["x"]}})["db"]["opts"] == ["x"]


def test_none_deletes():
    out = merge.deep_merge(BASE, {"db": {"port": None}, "missing": None})
    assert out["db"] == {"host": "localhost", "opts": ["a"]}
    assert "missing" not in out


def test_parse_env():
    lines = ["# comment", "", "APP__DB__HOST = db.local", "APP__NAME=demo", "TOKEN=a=b=c"]
    assert load.parse_env(lines) == {"app": {"db": {"host": "db.local"}, "name": "demo"}, "token": "a=b=c"}


def test_layered():
    out = load.layered({"a": 1, "b": {"c": 1}}, {"b": {"d": 2}}, {"a": None})
    assert out == {"b": {"c": 1, "d": 2}}


def test_dict_and_scalar_replace_each_other():
    out = merge.deep_merge(BASE, {"debug": {"level": 2}, "db": "sqlite:///x"})
    assert out == {"db": "sqlite:///x", "debug": {"level": 2}}
    out = merge.deep_merge({"a": {"b": 1}}, {"a": ["list"]})
    assert out == {"a": ["list"]}


def test_merge_into_empty_and_with_empty():
    assert merge.deep_merge({}, {"a": {"c": 1}, "b": None}) == {"a": {"c": 1}}
    assert merge.deep_merge(BASE, {}) == BASE
    assert merge.deep_merge({"a": 1}, {"b": {"c": 2}}) == {"a": 1, "b": {"c": 2}}


def test_parse_env_levels_and_whitespace():
    lines = ["  # indented comment", "   ", "A__B__C__D = deep ", "A__B__E=x=", "A__F=", "Solo=Case Kept"]
    assert load.parse_env(lines) == {"a": {"b": {"c": {"d": "deep"}, "e": "x="}, "f": ""}, "solo": "Case Kept"}
    assert load.parse_env([]) == {}
