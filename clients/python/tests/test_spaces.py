"""Spaces: check_space semantics, gymnasium conversion, wire <-> gym value conversion."""

from __future__ import annotations

from collections import OrderedDict

import gymnasium as gym
import numpy as np
import pytest

from sandgym import codec, spaces as S

BOX = {"type": "box", "shape": [2], "dtype": "float64", "low": -10, "high": 10}
DICT = {
    "type": "dict",
    "spaces": [
        {"key": "position", "space": BOX},
        {"key": "label", "space": {"type": "text", "max_length": 16}},
    ],
}
TOOLS = {
    "type": "tool_call",
    "tools": [
        {
            "name": "echo",
            "description": "echo",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": False,
            },
        },
        {
            "name": "add",
            "description": "add",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    ],
}
ALL = [
    BOX,
    {"type": "box", "shape": [], "dtype": "int32", "low": "-inf", "high": 5},
    {"type": "box", "shape": [2, 2], "dtype": "float32", "low": [[0, "-inf"], [1, 2]], "high": "inf"},
    {"type": "box", "shape": [3], "dtype": "uint8", "low": 0, "high": 255},
    {"type": "discrete", "n": 3, "start": -1},
    {"type": "multi_discrete", "nvec": [2, 3], "start": [0, 1]},
    {"type": "multi_binary", "n": 4},
    {"type": "multi_binary", "n": [2, 2]},
    {"type": "text", "max_length": 5, "min_length": 1, "charset": "abc"},
    {"type": "text", "max_length": 8},
    DICT,
    {"type": "tuple", "spaces": [{"type": "discrete", "n": 2}, BOX]},
    {"type": "sequence", "space": {"type": "discrete", "n": 4}},
    {"type": "one_of", "spaces": [{"type": "discrete", "n": 2}, {"type": "text", "max_length": 3, "charset": "xy"}]},
]


@pytest.mark.parametrize(
    "space,value,path",
    [
        (BOX, [0, 10], None),
        (BOX, [0, 10.5], "/1"),
        (BOX, [0], ""),
        (BOX, [0, "1"], "/1"),
        (BOX, [0, True], "/1"),
        ({"type": "box", "shape": [], "dtype": "int8", "low": "-inf", "high": "inf"}, 128, ""),
        ({"type": "box", "shape": [], "dtype": "int8", "low": "-inf", "high": "inf"}, 1.0, None),
        ({"type": "box", "shape": [], "dtype": "int8", "low": "-inf", "high": "inf"}, 1.5, ""),
        ({"type": "box", "shape": [], "dtype": "float32", "low": "-inf", "high": "inf"}, 1e39, ""),
        ({"type": "box", "shape": [2], "dtype": "float64", "low": [0, 5], "high": [1, 6]}, [1, 4], "/1"),
        ({"type": "discrete", "n": 3, "start": 1}, 3, None),
        ({"type": "discrete", "n": 3, "start": 1}, 0, ""),
        ({"type": "discrete", "n": 3}, True, ""),
        ({"type": "discrete", "n": 3}, 1.0, None),
        ({"type": "multi_discrete", "nvec": [2, 3]}, [1, 3], "/1"),
        ({"type": "multi_binary", "n": [2, 2]}, [[0, 1], [1, 2]], "/1/1"),
        ({"type": "multi_binary", "n": 2}, [True, 0], "/0"),
        ({"type": "text", "max_length": 3}, "日本語", None),
        ({"type": "text", "max_length": 3}, "abcd", ""),
        ({"type": "text", "max_length": 3, "min_length": 2}, "a", ""),
        ({"type": "text", "max_length": 3, "charset": "ab"}, "abc", ""),
        (DICT, {"position": [0, 0], "label": ""}, None),
        (DICT, {"position": [0, 0]}, "/label"),
        (DICT, {"position": [0, 0], "label": "", "x": 1}, "/x"),
        (DICT, {"position": [0, 11], "label": ""}, "/position/1"),
        ({"type": "one_of", "spaces": [{"type": "discrete", "n": 2}]}, [0, 1], None),
        ({"type": "one_of", "spaces": [{"type": "discrete", "n": 2}]}, [1, 1], "/0"),
        ({"type": "one_of", "spaces": [{"type": "discrete", "n": 2}]}, [0, 2], "/1"),
        ({"type": "sequence", "space": {"type": "discrete", "n": 2}}, [0, 1, 5], "/2"),
        ({"type": "json", "schema": {"type": "array", "items": {"type": "integer"}}}, [1, 2.5], "/1"),
        (TOOLS, {"name": "echo", "arguments": {"text": "hi"}}, None),
        (TOOLS, {"name": "echo", "arguments": {}}, "/arguments/text"),
        (TOOLS, {"name": "echo", "arguments": {"text": "hi", "x": 1}}, "/arguments/x"),
        (TOOLS, {"name": "nope", "arguments": {}}, "/name"),
        (TOOLS, {"name": "echo"}, "/arguments"),
        (TOOLS, {"name": "echo", "arguments": {"text": "a"}, "extra": 1}, "/extra"),
        (TOOLS, {"name": "add", "arguments": {"a": 1, "b": "2"}}, "/arguments/b"),
    ],
)
def test_check_space(space, value, path):
    issue = S.check_space(space, value)
    if path is None:
        assert issue is None
    else:
        assert issue is not None and issue["path"] == path, issue


@pytest.mark.parametrize("space", ALL, ids=lambda s: s["type"])
def test_gym_space_samples_are_in_the_protocol_space(space):
    g = S.to_gym_space(space)
    g.seed(0)
    for _ in range(20):
        v = g.sample()
        assert g.contains(v)
        wire = codec.decode_json(codec.encode_json(S.to_wire(space, v)))
        assert S.check_space(space, wire) is None, (v, wire)
        back = S.from_wire(space, wire)
        assert g.contains(back), (space, back)


def test_dict_space_keeps_protocol_key_order():
    space = {"type": "dict", "spaces": [{"key": k, "space": {"type": "discrete", "n": 2}} for k in ("z", "a", "m")]}
    g = S.to_gym_space(space)
    assert list(g.spaces) == ["z", "a", "m"]
    assert list(S.from_wire(space, {"a": 0, "m": 1, "z": 1})) == ["z", "a", "m"]


def test_box_conversion_dtypes_and_inf():
    g = S.to_gym_space({"type": "box", "shape": [2], "dtype": "float32", "low": "-inf", "high": [1, "inf"]})
    assert isinstance(g, gym.spaces.Box) and g.dtype == np.float32
    assert np.isneginf(g.low).all() and g.high[0] == 1 and np.isposinf(g.high[1])
    gi = S.to_gym_space({"type": "box", "shape": [], "dtype": "int64", "low": "-inf", "high": "inf"})
    assert gi.dtype == np.int64
    v = S.from_wire({"type": "box", "shape": [2, 1], "dtype": "uint16", "low": 0, "high": 9}, [[1], [2]])
    assert v.dtype == np.uint16 and v.shape == (2, 1)


def test_simple_conversions():
    assert S.to_gym_space({"type": "discrete", "n": 3, "start": 2}) == gym.spaces.Discrete(3, start=2)
    assert isinstance(S.to_gym_space({"type": "text", "max_length": 4}), S.UnicodeText)
    t = S.to_gym_space({"type": "text", "max_length": 4, "charset": "ab"})
    assert isinstance(t, gym.spaces.Text) and not t.contains("abc!")
    assert S.to_gym_space({"type": "text", "max_length": 20}).contains("What is 3 + 4? ✓")
    oo = S.to_gym_space({"type": "one_of", "spaces": [{"type": "discrete", "n": 2}]})
    assert isinstance(oo, gym.spaces.OneOf)
    assert S.from_wire({"type": "one_of", "spaces": [{"type": "discrete", "n": 2}]}, [0, 1]) == (0, 1)
    assert S.to_wire({"type": "one_of", "spaces": [{"type": "discrete", "n": 2}]}, (0, np.int64(1))) == [0, 1]
    seq = S.to_gym_space({"type": "sequence", "space": {"type": "discrete", "n": 2}, "stack": True})
    assert isinstance(seq, gym.spaces.Sequence) and seq.stack


def test_tool_call_and_json_spaces():
    tc = S.to_gym_space(TOOLS)
    assert isinstance(tc, S.ToolCallSpace) and tc.tool_names == ["echo", "add"]
    tc.seed(1)
    for _ in range(10):
        assert tc.contains(tc.sample())
    assert not tc.contains({"name": "echo", "arguments": {"text": 1}})
    js = S.to_gym_space(
        {
            "type": "json",
            "schema": {
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 3}},
                "required": ["n"],
            },
        }
    )
    assert isinstance(js, S.JsonSpace)
    js.seed(0)
    assert js.contains(js.sample())
    assert not js.contains({"n": 9})
    assert not S.is_gym_expressible(TOOLS)
    assert S.is_gym_expressible(DICT)


@pytest.mark.parametrize(
    "schema,value,ok",
    [
        ({"type": "integer"}, 3.0, True),
        ({"type": "integer"}, True, False),
        ({"type": ["string", "null"]}, None, True),
        ({"enum": [1, "a"]}, "a", True),
        ({"enum": [1]}, True, False),
        ({"const": {"a": [1]}}, {"a": [1.0]}, True),
        ({"type": "string", "pattern": "^a+$"}, "aab", False),
        ({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}}, ["x", 1, 2], True),
        ({"type": "array", "uniqueItems": True}, [1, 1.0], False),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1.5, False),
        ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 1, False),
        ({"not": {"type": "null"}}, 0, True),
        ({"type": "number", "exclusiveMaximum": 1}, 1, False),
        ({"type": "number", "multipleOf": 0.1}, 0.3, True),
        (
            {"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
            {"x1": 1, "y": 2},
            False,
        ),
    ],
)
def test_json_schema_subset(schema, value, ok):
    assert (S.validate_json_schema(schema, value) is None) is ok


def test_gym_dict_is_ordered_dict_input():
    g = S.to_gym_space(DICT)
    assert isinstance(g, gym.spaces.Dict)
    assert list(g.spaces.keys()) == list(OrderedDict([("position", 0), ("label", 0)]))
