import copy

from confmerge.load import layered, parse_env
from confmerge.merge import deep_merge

BASE = {"db": {"host": "localhost", "port": 5432, "opts": ["a"]}, "debug": False}


def test_override_scalar():
    assert deep_merge(BASE, {"debug": True})["debug"] is True


def test_nested_merge():
    out = deep_merge(BASE, {"db": {"port": 6543}})
    assert out["db"] == {"host": "localhost", "port": 6543, "opts": ["a"]}


def test_inputs_not_modified():
    base = copy.deepcopy(BASE)
    over = {"db": {"port": 1, "opts": ["b"]}}
    out = deep_merge(base, over)
    out["db"]["opts"].append("c")
    assert base == BASE
    assert over == {"db": {"port": 1, "opts": ["b"]}}


def test_lists_replace():
    assert deep_merge(BASE, {"db": {"opts": ["x"]}})["db"]["opts"] == ["x"]


def test_none_deletes():
    out = deep_merge(BASE, {"db": {"port": None}, "missing": None})
    assert out["db"] == {"host": "localhost", "opts": ["a"]}
    assert "missing" not in out


def test_parse_env():
    lines = ["# comment", "", "APP__DB__HOST = db.local", "APP__NAME=demo", "TOKEN=a=b=c"]
    assert parse_env(lines) == {"app": {"db": {"host": "db.local"}, "name": "demo"}, "token": "a=b=c"}


def test_layered():
    out = layered({"a": 1, "b": {"c": 1}}, {"b": {"d": 2}}, {"a": None})
    assert out == {"b": {"c": 1, "d": 2}}
