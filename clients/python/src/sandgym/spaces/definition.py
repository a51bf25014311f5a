"""``validate_space_definition``: is a space definition usable? The protocol's space.json plus the
consistency a schema cannot express (bounds shaped like the box, low <= high, an admissible value
for integer dtypes, unique dict keys and tool names, schemas that are schemas)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from ._util import FLOAT_RANGES, INT_RANGES, SAFE_INT, Issue, bound_at, fmt, int_in, is_number, issue, ptr
from .json_schema import schema_problem

__all__ = ["validate_space_definition"]

_DTYPES = tuple(INT_RANGES) + tuple(FLOAT_RANGES)
_SPACE_KEYS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "box": (frozenset({"type", "shape", "dtype", "low", "high"}), ("shape", "dtype", "low", "high")),
    "discrete": (frozenset({"type", "n", "start"}), ("n",)),
    "multi_discrete": (frozenset({"type", "nvec", "start"}), ("nvec",)),
    "multi_binary": (frozenset({"type", "n"}), ("n",)),
    "text": (frozenset({"type", "max_length", "min_length", "charset"}), ("max_length",)),
    "dict": (frozenset({"type", "spaces"}), ("spaces",)),
    "tuple": (frozenset({"type", "spaces"}), ("spaces",)),
    "sequence": (frozenset({"type", "space", "stack"}), ("space",)),
    "one_of": (frozenset({"type", "spaces"}), ("spaces",)),
    "json": (frozenset({"type", "schema"}), ("schema",)),
    "tool_call": (frozenset({"type", "tools"}), ("tools",)),
}
_TOOL_KEYS = ("name", "description", "parameters")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def validate_space_definition(space: Any, path: str = "") -> Issue:
    """``None`` when ``space`` is a usable space definition (the protocol's space.json plus
    consistency: bounds shaped like the box, low <= high, an admissible value for integer dtypes,
    unique dict keys and tool names, schemas that are schemas), else ``{"path", "reason"}`` with
    ``path`` a JSON pointer into the definition."""
    if not isinstance(space, dict):
        return issue(path, "a space must be an object")
    t = space.get("type")
    if not isinstance(t, str) or t not in _SPACE_KEYS:
        return issue(ptr(path, "type"), f"unknown space type {t!r}")
    allowed, required = _SPACE_KEYS[t]
    return _check_keys(space, required, allowed, path) or _DEF_CHECKERS[t](space, path)


def _def_box(space: Mapping[str, Any], path: str) -> Issue:
    shape = space["shape"]
    if not isinstance(shape, list) or len(shape) > 32:
        return issue(ptr(path, "shape"), "shape must be an array of at most 32 dimensions")
    for i, n in enumerate(shape):
        if not int_in(n, 0, 2**32 - 1):
            return issue(ptr(ptr(path, "shape"), i), "dimension must be an integer >= 0")
    dtype = space["dtype"]
    if dtype not in _DTYPES:
        return issue(ptr(path, "dtype"), f"unknown dtype {dtype!r}")
    for which in ("low", "high"):
        r = _def_bounds(space[which], [int(n) for n in shape], ptr(path, which))
        if r:
            return r
    low, high = space["low"], space["high"]
    if low == "inf":
        return issue(ptr(path, "low"), "low must not be +inf")
    if high == "-inf":
        return issue(ptr(path, "high"), "high must not be -inf")
    if dtype in INT_RANGES:
        dmin, dmax = (float(x) for x in INT_RANGES[dtype])
    else:
        dmax = FLOAT_RANGES[dtype]
        dmin = -dmax
    is_int = dtype in INT_RANGES
    scalar = not isinstance(low, list) and not isinstance(high, list)
    indices: Any = [()] if scalar else _all_indices([int(n) for n in shape])
    for idx in indices:
        lo, hi = bound_at(low, idx), bound_at(high, idx)
        lpath = ptr(path, "low")
        if isinstance(low, list):
            for i in idx:
                lpath = ptr(lpath, i)
        if lo == math.inf:
            return issue(lpath, "low must not be +inf")
        if hi == -math.inf:
            return issue(ptr(path, "high"), "high must not be -inf")
        if lo > hi:
            return issue(lpath, f"low {fmt(lo)} is above high {fmt(hi)}")
        elo, ehi = max(lo, dmin), min(hi, dmax)
        if elo > ehi or (is_int and math.ceil(elo) > math.floor(ehi)):
            return issue(lpath, f"the bounds admit no {dtype} value")
    return None


def _all_indices(shape: list[int]) -> Any:
    import itertools

    return itertools.product(*(range(n) for n in shape))


def _def_bounds(b: Any, shape: list[int], path: str) -> Issue:
    if isinstance(b, list):
        if not shape or len(b) != shape[0]:
            return issue(path, "bounds array does not match the shape")
        for x in b:
            r = _def_bounds(x, shape[1:], path)
            if r:
                return r
        return None
    if b in ("inf", "-inf") and isinstance(b, str):
        return None
    if not is_number(b):
        return issue(path, 'a bound is a finite number, "inf" or "-inf"')
    return None


def _def_discrete(space: Mapping[str, Any], path: str) -> Issue:
    if not int_in(space["n"], 1, SAFE_INT):
        return issue(ptr(path, "n"), "n must be an integer >= 1")
    if "start" in space and not int_in(space["start"], -SAFE_INT, SAFE_INT):
        return issue(ptr(path, "start"), "start must be an integer")
    return None


def _def_multi_discrete(space: Mapping[str, Any], path: str) -> Issue:
    nvec = space["nvec"]
    if not isinstance(nvec, list) or not nvec:
        return issue(ptr(path, "nvec"), "nvec must be a non-empty array")
    for i, n in enumerate(nvec):
        if not int_in(n, 1, SAFE_INT):
            return issue(ptr(ptr(path, "nvec"), i), "must be an integer >= 1")
    if "start" in space:
        start = space["start"]
        if not isinstance(start, list) or not start:
            return issue(ptr(path, "start"), "start must be a non-empty array")
        for i, n in enumerate(start):
            if not int_in(n, -SAFE_INT, SAFE_INT):
                return issue(ptr(ptr(path, "start"), i), "must be an integer")
        if len(start) != len(nvec):
            return issue(ptr(path, "start"), "start must have as many elements as nvec")
    return None


def _def_multi_binary(space: Mapping[str, Any], path: str) -> Issue:
    n = space["n"]
    if isinstance(n, list):
        if not 1 <= len(n) <= 32 or not all(int_in(x, 1, 2**32 - 1) for x in n):
            return issue(ptr(path, "n"), "n must be an integer >= 1 or a shape")
        return None
    if not int_in(n, 1, 2**32 - 1):
        return issue(ptr(path, "n"), "n must be an integer >= 1 or a shape")
    return None


def _def_text(space: Mapping[str, Any], path: str) -> Issue:
    if not int_in(space["max_length"], 0, 2**32 - 1):
        return issue(ptr(path, "max_length"), "max_length must be an integer >= 0")
    if "min_length" in space:
        if not int_in(space["min_length"], 0, 2**32 - 1):
            return issue(ptr(path, "min_length"), "min_length must be an integer >= 0")
        if space["min_length"] > space["max_length"]:
            return issue(ptr(path, "min_length"), "min_length exceeds max_length")
    if "charset" in space and (not isinstance(space["charset"], str) or not space["charset"]):
        return issue(ptr(path, "charset"), "charset must be a non-empty string")
    return None


def _check_keys(obj: Mapping[str, Any], required: tuple[str, ...], allowed: Any, path: str) -> Issue:
    """``obj`` has every ``required`` key and no key outside ``allowed`` (missing keys first)."""
    for k in required:
        if k not in obj:
            return issue(ptr(path, k), "required property is missing")
    for k in obj:
        if k not in allowed:
            return issue(ptr(path, k), "unexpected property")
    return None


def _def_dict(space: Mapping[str, Any], path: str) -> Issue:
    entries = space["spaces"]
    p = ptr(path, "spaces")
    if not isinstance(entries, list):
        return issue(p, "spaces must be an ordered array of {key, space}")
    seen: set[str] = set()
    for i, e in enumerate(entries):
        ep = ptr(p, i)
        if not isinstance(e, dict):
            return issue(ep, "expected {key, space}")
        r = _check_keys(e, ("key", "space"), ("key", "space"), ep)
        if r:
            return r
        if not isinstance(e["key"], str):
            return issue(ptr(ep, "key"), "key must be a string")
        if e["key"] in seen:
            return issue(ptr(ep, "key"), f"duplicate key {e['key']!r}")
        seen.add(e["key"])
        r = validate_space_definition(e["space"], ptr(ep, "space"))
        if r:
            return r
    return None


def _def_list_of_spaces(space: Mapping[str, Any], path: str, min_items: int) -> Issue:
    subs = space["spaces"]
    p = ptr(path, "spaces")
    if not isinstance(subs, list) or len(subs) < min_items:
        return issue(p, f"spaces must be an array of at least {min_items} spaces")
    for i, s in enumerate(subs):
        r = validate_space_definition(s, ptr(p, i))
        if r:
            return r
    return None


def _def_sequence(space: Mapping[str, Any], path: str) -> Issue:
    if "stack" in space and type(space["stack"]) is not bool:
        return issue(ptr(path, "stack"), "stack must be a boolean")
    return validate_space_definition(space["space"], ptr(path, "space"))


def _def_json(space: Mapping[str, Any], path: str) -> Issue:
    schema = space["schema"]
    if not isinstance(schema, dict) or schema_problem(schema):
        return issue(ptr(path, "schema"), "schema is not a valid JSON Schema")
    return None


def _def_tool_call(space: Mapping[str, Any], path: str) -> Issue:
    tools = space["tools"]
    p = ptr(path, "tools")
    if not isinstance(tools, list) or not tools:
        return issue(p, "tools must be a non-empty array")
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        tp = ptr(p, i)
        if not isinstance(tool, dict):
            return issue(tp, "a tool is {name, description, parameters}")
        r = _check_keys(tool, _TOOL_KEYS, _TOOL_KEYS, tp)
        if r:
            return r
        name = tool["name"]
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            return issue(ptr(tp, "name"), "name must match ^[A-Za-z0-9_.-]{1,64}$")
        if not isinstance(tool["description"], str):
            return issue(ptr(tp, "description"), "description must be a string")
        if not isinstance(tool["parameters"], dict) or schema_problem(tool["parameters"]):
            return issue(ptr(tp, "parameters"), "parameters is not a valid JSON Schema")
        if name in seen:
            return issue(ptr(tp, "name"), f"duplicate tool name {name!r}")
        seen.add(name)
    return None


_DEF_CHECKERS = {
    "box": _def_box,
    "discrete": _def_discrete,
    "multi_discrete": _def_multi_discrete,
    "multi_binary": _def_multi_binary,
    "text": _def_text,
    "dict": _def_dict,
    "tuple": lambda s, p: _def_list_of_spaces(s, p, 0),
    "sequence": _def_sequence,
    "one_of": lambda s, p: _def_list_of_spaces(s, p, 1),
    "json": _def_json,
    "tool_call": _def_tool_call,
}
