"""``check_space``: is a wire value in a protocol space? Pure Python, the same rules (and the same
order of checks, hence the same ``path``) as the server applies to actions."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._util import (
    FLOAT_RANGES,
    INT_RANGES,
    Issue,
    bound_at,
    codepoints,
    fmt,
    is_integer,
    is_number,
    issue,
    ptr,
    walk_array,
)
from .json_schema import is_json_value, validate_json_schema

__all__ = ["check_space", "SPACE_TYPES"]


def check_space(space: Mapping[str, Any], value: Any, path: str = "") -> Issue:
    """``None`` if ``value`` (wire form) is in ``space``, else ``{"path": ..., "reason": ...}``."""
    t = space.get("type")
    fn = _CHECKERS.get(t)  # type: ignore[arg-type]
    if fn is None:
        return issue(path, f"unknown space type {t!r}")
    return fn(space, value, path)


def _check_box(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    shape = list(space.get("shape", []))
    dtype = str(space.get("dtype", "float64"))
    low, high = space.get("low", "-inf"), space.get("high", "inf")

    def leaf(v: Any, p: str, index: tuple[int, ...]) -> Issue:
        if not is_number(v):
            return issue(p, "expected a number")
        if dtype in INT_RANGES:
            if not is_integer(v):
                return issue(p, f"expected an integer ({dtype})")
            lo_d, hi_d = INT_RANGES[dtype]
            if not lo_d <= v <= hi_d:
                return issue(p, f"{v} is out of range for {dtype}")
        elif abs(v) > FLOAT_RANGES.get(dtype, math.inf):
            return issue(p, f"{v} is outside the {dtype} range")
        lo, hi = bound_at(low, index), bound_at(high, index)
        if v < lo:
            return issue(p, f"{v} is below the lower bound {fmt(lo)}")
        if v > hi:
            return issue(p, f"{v} is above the upper bound {fmt(hi)}")
        return None

    return walk_array(value, shape, path, leaf)


def _check_discrete(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not is_integer(value):
        return issue(path, "expected an integer")
    start = int(space.get("start", 0))
    n = int(space["n"])
    if not start <= value < start + n:
        return issue(path, f"{fmt(value)} is out of range [{start}, {start + n})")
    return None


def _check_multi_discrete(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    nvec = space["nvec"]
    start = space.get("start")

    def walk(nv: Any, st: Any, v: Any, p: str) -> Issue:
        if isinstance(nv, list):
            if not isinstance(v, list):
                return issue(p, f"expected an array of length {len(nv)}")
            if len(v) != len(nv):
                return issue(p, f"expected length {len(nv)}, got {len(v)}")
            for i, (n_i, x) in enumerate(zip(nv, v, strict=True)):
                r = walk(n_i, st[i] if isinstance(st, list) else 0, x, ptr(p, i))
                if r:
                    return r
            return None
        if not is_integer(v):
            return issue(p, "expected an integer")
        s = int(st or 0)
        if not s <= v < s + int(nv):
            return issue(p, f"{fmt(v)} is out of range [{s}, {s + int(nv)})")
        return None

    return walk(nvec, start, value, path)


def _check_multi_binary(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    n = space["n"]
    dims = [int(n)] if isinstance(n, int) else [int(x) for x in n]

    def leaf(v: Any, p: str, _index: tuple[int, ...]) -> Issue:
        if not is_integer(v) or v not in (0, 1):
            return issue(p, "expected 0 or 1")
        return None

    return walk_array(value, dims, path, leaf)


def _check_text(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not isinstance(value, str):
        return issue(path, "expected a string")
    n = codepoints(value)
    lo = int(space.get("min_length", 0))
    hi = int(space["max_length"])
    if n < lo:
        return issue(path, f"string is shorter than min_length {lo}")
    if n > hi:
        return issue(path, f"string is longer than max_length {hi}")
    charset = space.get("charset")
    if charset is not None:
        allowed = set(charset)
        for ch in value:
            if ch not in allowed:
                return issue(path, f"character {ch!r} is not in the charset")
    return None


def _check_dict(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not isinstance(value, dict):
        return issue(path, "expected an object")
    entries = space["spaces"]
    for e in entries:  # same order of checks as the server: key by key, then extra keys
        if e["key"] not in value:
            return issue(ptr(path, e["key"]), "required key is missing")
        r = check_space(e["space"], value[e["key"]], ptr(path, e["key"]))
        if r:
            return r
    if len(value) != len(entries):
        keys = {e["key"] for e in entries}
        extra = next((k for k in value if k not in keys), "")
        return issue(ptr(path, extra), "unexpected key")
    return None


def _check_tuple(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    subs = space["spaces"]
    if not isinstance(value, list):
        return issue(path, f"expected an array of length {len(subs)}")
    if len(value) != len(subs):
        return issue(path, f"expected length {len(subs)}, got {len(value)}")
    for i, (s, v) in enumerate(zip(subs, value, strict=True)):
        r = check_space(s, v, ptr(path, i))
        if r:
            return r
    return None


def _check_sequence(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not isinstance(value, list):
        return issue(path, "expected an array")
    for i, v in enumerate(value):
        r = check_space(space["space"], v, ptr(path, i))
        if r:
            return r
    return None


def _check_one_of(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    subs = space["spaces"]
    if not isinstance(value, list) or len(value) != 2:
        return issue(path, "expected [index, value]")
    idx = value[0]
    if not is_integer(idx) or not 0 <= idx < len(subs):
        return issue(ptr(path, 0), f"index must be an integer in [0, {len(subs)})")
    return check_space(subs[int(idx)], value[1], ptr(path, 1))


def _check_json(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not is_json_value(value):
        return issue(path, "expected a JSON value")
    return validate_json_schema(space.get("schema", {}), value, path)


def _check_tool_call(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not isinstance(value, dict):
        return issue(path, "expected a tool call {name, arguments}")
    name = value.get("name")
    if not isinstance(name, str):
        return issue(ptr(path, "name"), "required string property is missing")
    tool = next((t for t in space.get("tools", []) if t["name"] == name), None)
    if tool is None:
        return issue(ptr(path, "name"), f"unknown tool {name[:64]!r}")
    if "arguments" not in value:
        return issue(ptr(path, "arguments"), "required property is missing")
    for k in value:
        if k not in ("name", "arguments"):
            return issue(ptr(path, k), "unexpected key")
    args = value["arguments"]
    if not isinstance(args, dict):
        return issue(ptr(path, "arguments"), "expected an object")
    return validate_json_schema(tool.get("parameters", {}), args, ptr(path, "arguments"))


_CHECKERS = {
    "box": _check_box,
    "discrete": _check_discrete,
    "multi_discrete": _check_multi_discrete,
    "multi_binary": _check_multi_binary,
    "text": _check_text,
    "dict": _check_dict,
    "tuple": _check_tuple,
    "sequence": _check_sequence,
    "one_of": _check_one_of,
    "json": _check_json,
    "tool_call": _check_tool_call,
}


#: the protocol's space types
SPACE_TYPES = frozenset(_CHECKERS)
