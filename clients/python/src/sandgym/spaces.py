"""Protocol spaces: validation, and conversion to ``gymnasium.spaces``.

A protocol space is a dict tagged by ``"type"`` (see PROTOCOL.md). This module offers:

* :func:`check_space` -- pure Python, mirrors the protocol's semantics (the same rules the server
  applies to actions). Returns ``None`` when the value is in the space, else ``{"path", "reason"}``
  with ``path`` a JSON pointer into the value. No dependency.
* :func:`to_gym_space` -- the matching ``gymnasium.spaces.Space`` (needs the ``gymnasium`` extra):

  ===================  ==================================================================
  protocol             gymnasium
  ===================  ==================================================================
  box                  ``Box`` (``"inf"`` bounds -> ``np.inf``; integer dtypes clamp
                       infinite bounds to the dtype's range)
  discrete             ``Discrete(n, start=start)``
  multi_discrete       ``MultiDiscrete(nvec, start=start)``
  multi_binary         ``MultiBinary(n)``
  text                 ``Text`` (with ``charset``); without a charset :class:`UnicodeText`
                       (a ``Text`` whose ``contains`` accepts any characters)
  dict                 ``Dict`` with the protocol's key order preserved
  tuple / sequence     ``Tuple`` / ``Sequence(stack=...)``
  one_of               ``OneOf`` (values are ``(index, value)`` tuples)
  json                 :class:`JsonSpace` -- any JSON value valid under ``schema``
  tool_call            :class:`ToolCallSpace` -- ``{"name": str, "arguments": dict}``
  ===================  ==================================================================

* :func:`from_wire` / :func:`to_wire` -- convert values between the wire form (lists, numbers) and
  the gymnasium form (numpy arrays of the space's dtype, tuples).

The JSON Schema subset understood by :func:`validate_json_schema` (used for ``json`` and
``tool_call`` spaces): ``type``, ``enum``, ``const``, ``properties``, ``required``,
``additionalProperties``, ``patternProperties``, ``items``, ``prefixItems``, ``minItems``,
``maxItems``, ``uniqueItems``, ``minLength``, ``maxLength``, ``pattern``, ``minimum``, ``maximum``,
``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``, ``minProperties``, ``maxProperties``,
``allOf``, ``anyOf``, ``oneOf``, ``not``; unknown keywords are ignored.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Optional

__all__ = [
    "Issue",
    "check_space",
    "validate_space_definition",
    "validate_json_schema",
    "to_gym_space",
    "from_wire",
    "to_wire",
    "is_gym_expressible",
    "JsonSpace",
    "ToolCallSpace",
    "UnicodeText",
]

Issue = Optional[dict[str, str]]

_INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**53 - 1), 2**53 - 1),  # 64-bit ints are limited to what the wire carries
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**53 - 1),
}
_FLOAT_RANGES: dict[str, float] = {"float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}


def _ptr(path: str, key: str | int) -> str:
    k = str(key).replace("~", "~0").replace("/", "~1")
    return f"{path}/{k}"


def _issue(path: str, reason: str) -> dict[str, str]:
    return {"path": path, "reason": reason}


def _is_number(v: Any) -> bool:
    return type(v) in (int, float) and (type(v) is int or math.isfinite(v))


def _is_integer(v: Any) -> bool:
    if type(v) is int:
        return True
    return type(v) is float and math.isfinite(v) and v.is_integer()


def _bound(b: Any) -> float:
    if b == "inf":
        return math.inf
    if b == "-inf":
        return -math.inf
    return float(b)


def _bound_at(bound: Any, index: tuple[int, ...]) -> float:
    for i in index:
        if isinstance(bound, list):
            bound = bound[i]
        else:
            break
    return _bound(bound)


def _codepoints(s: str) -> int:
    return len(s)  # Python str indexes code points already


# ------------------------------------------------------------------------------ check_space


def check_space(space: Mapping[str, Any], value: Any, path: str = "") -> Issue:
    """``None`` if ``value`` (wire form) is in ``space``, else ``{"path": ..., "reason": ...}``."""
    t = space.get("type")
    fn = _CHECKERS.get(t)  # type: ignore[arg-type]
    if fn is None:
        return _issue(path, f"unknown space type {t!r}")
    return fn(space, value, path)


def _check_box(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    shape = list(space.get("shape", []))
    dtype = str(space.get("dtype", "float64"))
    low, high = space.get("low", "-inf"), space.get("high", "inf")

    def walk(v: Any, dims: list[int], p: str, index: tuple[int, ...]) -> Issue:
        if dims:
            if not isinstance(v, list):
                return _issue(p, f"expected an array of length {dims[0]}")
            if len(v) != dims[0]:
                return _issue(p, f"expected length {dims[0]}, got {len(v)}")
            for i, x in enumerate(v):
                r = walk(x, dims[1:], _ptr(p, i), index + (i,))
                if r:
                    return r
            return None
        if not _is_number(v):
            return _issue(p, "expected a number")
        if dtype in _INT_RANGES:
            if not _is_integer(v):
                return _issue(p, f"expected an integer ({dtype})")
            lo_d, hi_d = _INT_RANGES[dtype]
            if not lo_d <= v <= hi_d:
                return _issue(p, f"{v} is out of range for {dtype}")
        elif abs(v) > _FLOAT_RANGES.get(dtype, math.inf):
            return _issue(p, f"{v} is outside the {dtype} range")
        lo, hi = _bound_at(low, index), _bound_at(high, index)
        if v < lo:
            return _issue(p, f"{v} is below the lower bound {_fmt(lo)}")
        if v > hi:
            return _issue(p, f"{v} is above the upper bound {_fmt(hi)}")
        return None

    return walk(value, shape, path, ())


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return str(int(x)) if float(x).is_integer() else repr(x)


def _check_discrete(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not _is_integer(value):
        return _issue(path, "expected an integer")
    start = int(space.get("start", 0))
    n = int(space["n"])
    if not start <= value < start + n:
        return _issue(path, f"{_fmt(value)} is out of range [{start}, {start + n})")
    return None


def _check_multi_discrete(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    nvec = space["nvec"]
    start = space.get("start")

    def walk(nv: Any, st: Any, v: Any, p: str) -> Issue:
        if isinstance(nv, list):
            if not isinstance(v, list):
                return _issue(p, f"expected an array of length {len(nv)}")
            if len(v) != len(nv):
                return _issue(p, f"expected length {len(nv)}, got {len(v)}")
            for i, (n_i, x) in enumerate(zip(nv, v)):
                r = walk(n_i, st[i] if isinstance(st, list) else 0, x, _ptr(p, i))
                if r:
                    return r
            return None
        if not _is_integer(v):
            return _issue(p, "expected an integer")
        s = int(st or 0)
        if not s <= v < s + int(nv):
            return _issue(p, f"{_fmt(v)} is out of range [{s}, {s + int(nv)})")
        return None

    return walk(nvec, start, value, path)


def _check_multi_binary(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    n = space["n"]
    dims = [int(n)] if isinstance(n, int) else [int(x) for x in n]

    def walk(v: Any, ds: list[int], p: str) -> Issue:
        if ds:
            if not isinstance(v, list):
                return _issue(p, f"expected an array of length {ds[0]}")
            if len(v) != ds[0]:
                return _issue(p, f"expected length {ds[0]}, got {len(v)}")
            for i, x in enumerate(v):
                r = walk(x, ds[1:], _ptr(p, i))
                if r:
                    return r
            return None
        if not _is_integer(v) or v not in (0, 1):
            return _issue(p, "expected 0 or 1")
        return None

    return walk(value, dims, path)


def _check_text(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not isinstance(value, str):
        return _issue(path, "expected a string")
    n = _codepoints(value)
    lo = int(space.get("min_length", 0))
    hi = int(space["max_length"])
    if n < lo:
        return _issue(path, f"string is shorter than min_length {lo}")
    if n > hi:
        return _issue(path, f"string is longer than max_length {hi}")
    charset = space.get("charset")
    if charset is not None:
        allowed = set(charset)
        for ch in value:
            if ch not in allowed:
                return _issue(path, f"character {ch!r} is not in the charset")
    return None


def _check_dict(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not isinstance(value, dict):
        return _issue(path, "expected an object")
    entries = space["spaces"]
    for e in entries:  # same order of checks as the server: key by key, then extra keys
        if e["key"] not in value:
            return _issue(_ptr(path, e["key"]), "required key is missing")
        r = check_space(e["space"], value[e["key"]], _ptr(path, e["key"]))
        if r:
            return r
    if len(value) != len(entries):
        keys = {e["key"] for e in entries}
        extra = next((k for k in value if k not in keys), "")
        return _issue(_ptr(path, extra), "unexpected key")
    return None


def _check_tuple(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    subs = space["spaces"]
    if not isinstance(value, list):
        return _issue(path, f"expected an array of length {len(subs)}")
    if len(value) != len(subs):
        return _issue(path, f"expected length {len(subs)}, got {len(value)}")
    for i, (s, v) in enumerate(zip(subs, value)):
        r = check_space(s, v, _ptr(path, i))
        if r:
            return r
    return None


def _check_sequence(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not isinstance(value, list):
        return _issue(path, "expected an array")
    for i, v in enumerate(value):
        r = check_space(space["space"], v, _ptr(path, i))
        if r:
            return r
    return None


def _check_one_of(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    subs = space["spaces"]
    if not isinstance(value, list) or len(value) != 2:
        return _issue(path, "expected [index, value]")
    idx = value[0]
    if not _is_integer(idx) or not 0 <= idx < len(subs):
        return _issue(_ptr(path, 0), f"index must be an integer in [0, {len(subs)})")
    return check_space(subs[int(idx)], value[1], _ptr(path, 1))


def _check_json(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not _is_json_value(value):
        return _issue(path, "expected a JSON value")
    return validate_json_schema(space.get("schema", {}), value, path)


def _check_tool_call(space: Mapping[str, Any], value: Any, path: str) -> Issue:
    if not isinstance(value, dict):
        return _issue(path, "expected a tool call {name, arguments}")
    name = value.get("name")
    if not isinstance(name, str):
        return _issue(_ptr(path, "name"), "required string property is missing")
    tool = next((t for t in space.get("tools", []) if t["name"] == name), None)
    if tool is None:
        return _issue(_ptr(path, "name"), f"unknown tool {name[:64]!r}")
    if "arguments" not in value:
        return _issue(_ptr(path, "arguments"), "required property is missing")
    for k in value:
        if k not in ("name", "arguments"):
            return _issue(_ptr(path, k), "unexpected key")
    args = value["arguments"]
    if not isinstance(args, dict):
        return _issue(_ptr(path, "arguments"), "expected an object")
    return validate_json_schema(tool.get("parameters", {}), args, _ptr(path, "arguments"))


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


# ------------------------------------------------------------------------------ definitions

_DTYPES = tuple(_INT_RANGES) + tuple(_FLOAT_RANGES)
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
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_SAFE = 2**53 - 1


def _int_in(v: Any, lo: int, hi: int) -> bool:
    return _is_integer(v) and lo <= v <= hi


def validate_space_definition(space: Any, path: str = "") -> Issue:
    """``None`` when ``space`` is a usable space definition (the protocol's space.json plus
    consistency: bounds shaped like the box, low <= high, an admissible value for integer dtypes,
    unique dict keys and tool names, schemas that are schemas), else ``{"path", "reason"}`` with
    ``path`` a JSON pointer into the definition."""
    if not isinstance(space, dict):
        return _issue(path, "a space must be an object")
    t = space.get("type")
    if not isinstance(t, str) or t not in _SPACE_KEYS:
        return _issue(_ptr(path, "type"), f"unknown space type {t!r}")
    allowed, required = _SPACE_KEYS[t]
    for k in required:
        if k not in space:
            return _issue(_ptr(path, k), "required property is missing")
    for k in space:
        if k not in allowed:
            return _issue(_ptr(path, k), "unexpected property")
    return _DEF_CHECKERS[t](space, path)


def _def_box(space: Mapping[str, Any], path: str) -> Issue:
    shape = space["shape"]
    if not isinstance(shape, list) or len(shape) > 32:
        return _issue(_ptr(path, "shape"), "shape must be an array of at most 32 dimensions")
    for i, n in enumerate(shape):
        if not _int_in(n, 0, 2**32 - 1):
            return _issue(_ptr(_ptr(path, "shape"), i), "dimension must be an integer >= 0")
    dtype = space["dtype"]
    if dtype not in _DTYPES:
        return _issue(_ptr(path, "dtype"), f"unknown dtype {dtype!r}")
    for which in ("low", "high"):
        r = _def_bounds(space[which], [int(n) for n in shape], _ptr(path, which))
        if r:
            return r
    low, high = space["low"], space["high"]
    if low == "inf":
        return _issue(_ptr(path, "low"), "low must not be +inf")
    if high == "-inf":
        return _issue(_ptr(path, "high"), "high must not be -inf")
    if dtype in _INT_RANGES:
        dmin, dmax = (float(x) for x in _INT_RANGES[dtype])
    else:
        dmax = _FLOAT_RANGES[dtype]
        dmin = -dmax
    is_int = dtype in _INT_RANGES
    scalar = not isinstance(low, list) and not isinstance(high, list)
    indices: Any = [()] if scalar else _all_indices([int(n) for n in shape])
    for idx in indices:
        lo, hi = _bound_at(low, idx), _bound_at(high, idx)
        lpath = _ptr(path, "low")
        if isinstance(low, list):
            for i in idx:
                lpath = _ptr(lpath, i)
        if lo == math.inf:
            return _issue(lpath, "low must not be +inf")
        if hi == -math.inf:
            return _issue(_ptr(path, "high"), "high must not be -inf")
        if lo > hi:
            return _issue(lpath, f"low {_fmt(lo)} is above high {_fmt(hi)}")
        elo, ehi = max(lo, dmin), min(hi, dmax)
        if elo > ehi or (is_int and math.ceil(elo) > math.floor(ehi)):
            return _issue(lpath, f"the bounds admit no {dtype} value")
    return None


def _all_indices(shape: list[int]) -> Any:
    import itertools

    return itertools.product(*(range(n) for n in shape))


def _def_bounds(b: Any, shape: list[int], path: str) -> Issue:
    if isinstance(b, list):
        if not shape or len(b) != shape[0]:
            return _issue(path, "bounds array does not match the shape")
        for x in b:
            r = _def_bounds(x, shape[1:], path)
            if r:
                return r
        return None
    if b in ("inf", "-inf") and isinstance(b, str):
        return None
    if not _is_number(b):
        return _issue(path, 'a bound is a finite number, "inf" or "-inf"')
    return None


def _def_discrete(space: Mapping[str, Any], path: str) -> Issue:
    if not _int_in(space["n"], 1, _SAFE):
        return _issue(_ptr(path, "n"), "n must be an integer >= 1")
    if "start" in space and not _int_in(space["start"], -_SAFE, _SAFE):
        return _issue(_ptr(path, "start"), "start must be an integer")
    return None


def _def_multi_discrete(space: Mapping[str, Any], path: str) -> Issue:
    nvec = space["nvec"]
    if not isinstance(nvec, list) or not nvec:
        return _issue(_ptr(path, "nvec"), "nvec must be a non-empty array")
    for i, n in enumerate(nvec):
        if not _int_in(n, 1, _SAFE):
            return _issue(_ptr(_ptr(path, "nvec"), i), "must be an integer >= 1")
    if "start" in space:
        start = space["start"]
        if not isinstance(start, list) or not start:
            return _issue(_ptr(path, "start"), "start must be a non-empty array")
        for i, n in enumerate(start):
            if not _int_in(n, -_SAFE, _SAFE):
                return _issue(_ptr(_ptr(path, "start"), i), "must be an integer")
        if len(start) != len(nvec):
            return _issue(_ptr(path, "start"), "start must have as many elements as nvec")
    return None


def _def_multi_binary(space: Mapping[str, Any], path: str) -> Issue:
    n = space["n"]
    if isinstance(n, list):
        if not 1 <= len(n) <= 32 or not all(_int_in(x, 1, 2**32 - 1) for x in n):
            return _issue(_ptr(path, "n"), "n must be an integer >= 1 or a shape")
        return None
    if not _int_in(n, 1, 2**32 - 1):
        return _issue(_ptr(path, "n"), "n must be an integer >= 1 or a shape")
    return None


def _def_text(space: Mapping[str, Any], path: str) -> Issue:
    if not _int_in(space["max_length"], 0, 2**32 - 1):
        return _issue(_ptr(path, "max_length"), "max_length must be an integer >= 0")
    if "min_length" in space:
        if not _int_in(space["min_length"], 0, 2**32 - 1):
            return _issue(_ptr(path, "min_length"), "min_length must be an integer >= 0")
        if space["min_length"] > space["max_length"]:
            return _issue(_ptr(path, "min_length"), "min_length exceeds max_length")
    if "charset" in space and (not isinstance(space["charset"], str) or not space["charset"]):
        return _issue(_ptr(path, "charset"), "charset must be a non-empty string")
    return None


def _def_dict(space: Mapping[str, Any], path: str) -> Issue:
    entries = space["spaces"]
    p = _ptr(path, "spaces")
    if not isinstance(entries, list):
        return _issue(p, "spaces must be an ordered array of {key, space}")
    seen: set[str] = set()
    for i, e in enumerate(entries):
        ep = _ptr(p, i)
        if not isinstance(e, dict):
            return _issue(ep, "expected {key, space}")
        for k in ("key", "space"):
            if k not in e:
                return _issue(_ptr(ep, k), "required property is missing")
        for k in e:
            if k not in ("key", "space"):
                return _issue(_ptr(ep, k), "unexpected property")
        if not isinstance(e["key"], str):
            return _issue(_ptr(ep, "key"), "key must be a string")
        if e["key"] in seen:
            return _issue(_ptr(ep, "key"), f"duplicate key {e['key']!r}")
        seen.add(e["key"])
        r = validate_space_definition(e["space"], _ptr(ep, "space"))
        if r:
            return r
    return None


def _def_list_of_spaces(space: Mapping[str, Any], path: str, min_items: int) -> Issue:
    subs = space["spaces"]
    p = _ptr(path, "spaces")
    if not isinstance(subs, list) or len(subs) < min_items:
        return _issue(p, f"spaces must be an array of at least {min_items} spaces")
    for i, s in enumerate(subs):
        r = validate_space_definition(s, _ptr(p, i))
        if r:
            return r
    return None


def _def_sequence(space: Mapping[str, Any], path: str) -> Issue:
    if "stack" in space and type(space["stack"]) is not bool:
        return _issue(_ptr(path, "stack"), "stack must be a boolean")
    return validate_space_definition(space["space"], _ptr(path, "space"))


def _def_json(space: Mapping[str, Any], path: str) -> Issue:
    schema = space["schema"]
    if not isinstance(schema, dict) or _schema_problem(schema):
        return _issue(_ptr(path, "schema"), "schema is not a valid JSON Schema")
    return None


def _def_tool_call(space: Mapping[str, Any], path: str) -> Issue:
    tools = space["tools"]
    p = _ptr(path, "tools")
    if not isinstance(tools, list) or not tools:
        return _issue(p, "tools must be a non-empty array")
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        tp = _ptr(p, i)
        if not isinstance(tool, dict):
            return _issue(tp, "a tool is {name, description, parameters}")
        for k in ("name", "description", "parameters"):
            if k not in tool:
                return _issue(_ptr(tp, k), "required property is missing")
        for k in tool:
            if k not in ("name", "description", "parameters"):
                return _issue(_ptr(tp, k), "unexpected property")
        name = tool["name"]
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            return _issue(_ptr(tp, "name"), "name must match ^[A-Za-z0-9_.-]{1,64}$")
        if not isinstance(tool["description"], str):
            return _issue(_ptr(tp, "description"), "description must be a string")
        if not isinstance(tool["parameters"], dict) or _schema_problem(tool["parameters"]):
            return _issue(_ptr(tp, "parameters"), "parameters is not a valid JSON Schema")
        if name in seen:
            return _issue(_ptr(tp, "name"), f"duplicate tool name {name!r}")
        seen.add(name)
    return None


_JSON_TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else",
               "unevaluatedProperties", "unevaluatedItems", "additionalItems")
_NUM_KW = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_COUNT_KW = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")


def _schema_problem(schema: Any) -> bool:
    """True when ``schema`` is not a JSON Schema (structural check of the common keywords)."""
    if isinstance(schema, bool):
        return False
    if not isinstance(schema, dict):
        return True
    if "type" in schema:
        t = schema["type"]
        ts = t if isinstance(t, list) else [t]
        if not ts or not all(isinstance(x, str) and x in _JSON_TYPES for x in ts):
            return True
    for k in _SCHEMA_MAPS:
        if k in schema:
            m = schema[k]
            if not isinstance(m, dict) or any(_schema_problem(v) for v in m.values()):
                return True
    for k in _SCHEMA_LISTS:
        if k in schema:
            lst = schema[k]
            if not isinstance(lst, list) or any(_schema_problem(v) for v in lst):
                return True
    for k in _SCHEMA_ONE:
        if k in schema and _schema_problem(schema[k]):
            return True
    if "required" in schema:
        r = schema["required"]
        if not isinstance(r, list) or not all(isinstance(x, str) for x in r):
            return True
    if "enum" in schema and not isinstance(schema["enum"], list):
        return True
    for k in _NUM_KW:
        if k in schema and not _is_number(schema[k]):
            return True
    if "multipleOf" in schema and schema["multipleOf"] <= 0:
        return True
    for k in _COUNT_KW:
        if k in schema and not _int_in(schema[k], 0, _SAFE):
            return True
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            return True
        try:
            re.compile(schema["pattern"])
        except re.error:
            return True
    return False


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


# ------------------------------------------------------------------------------ JSON Schema


def _is_json_value(v: Any) -> bool:
    t = type(v)
    if v is None or t in (bool, str, int):
        return True
    if t is float:
        return math.isfinite(v)
    if t is list:
        return all(_is_json_value(x) for x in v)
    if t is dict:
        return all(type(k) is str and _is_json_value(x) for k, x in v.items())
    return False


def _json_type_ok(t: str, v: Any) -> bool:
    if t == "null":
        return v is None
    if t == "boolean":
        return type(v) is bool
    if t == "string":
        return isinstance(v, str)
    if t == "integer":
        return _is_integer(v)
    if t == "number":
        return _is_number(v)
    if t == "array":
        return isinstance(v, list)
    if t == "object":
        return isinstance(v, dict)
    return False


def _json_equal(a: Any, b: Any) -> bool:
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def validate_json_schema(schema: Any, value: Any, path: str = "") -> Issue:
    """Validate ``value`` against a JSON Schema (the subset in the module docstring)."""
    if schema is True or schema == {}:
        return None
    if schema is False:
        return _issue(path, "no value is allowed here")
    if not isinstance(schema, Mapping):
        return None
    s = schema
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(_json_type_ok(t, value) for t in types):
            return _issue(path, f"expected {' or '.join(types)}")
    if "const" in s and not _json_equal(s["const"], value):
        return _issue(path, f"expected {s['const']!r}")
    if "enum" in s and not any(_json_equal(e, value) for e in s["enum"]):
        return _issue(path, "value is not one of the allowed values")
    if isinstance(value, str):
        n = _codepoints(value)
        if "minLength" in s and n < s["minLength"]:
            return _issue(path, f"string is shorter than {s['minLength']}")
        if "maxLength" in s and n > s["maxLength"]:
            return _issue(path, f"string is longer than {s['maxLength']}")
        if "pattern" in s and re.search(s["pattern"], value) is None:
            return _issue(path, f"string does not match {s['pattern']!r}")
    if _is_number(value) and type(value) is not bool:
        if "minimum" in s and value < s["minimum"]:
            return _issue(path, f"must be >= {s['minimum']}")
        if "maximum" in s and value > s["maximum"]:
            return _issue(path, f"must be <= {s['maximum']}")
        if "exclusiveMinimum" in s and value <= s["exclusiveMinimum"]:
            return _issue(path, f"must be > {s['exclusiveMinimum']}")
        if "exclusiveMaximum" in s and value >= s["exclusiveMaximum"]:
            return _issue(path, f"must be < {s['exclusiveMaximum']}")
        if "multipleOf" in s:
            q = value / s["multipleOf"]
            if not (math.isfinite(q) and abs(q - round(q)) < 1e-9):
                return _issue(path, f"must be a multiple of {s['multipleOf']}")
    if isinstance(value, list):
        if "minItems" in s and len(value) < s["minItems"]:
            return _issue(path, f"expected at least {s['minItems']} items")
        if "maxItems" in s and len(value) > s["maxItems"]:
            return _issue(path, f"expected at most {s['maxItems']} items")
        if s.get("uniqueItems"):
            for i in range(len(value)):
                for j in range(i):
                    if _json_equal(value[i], value[j]):
                        return _issue(_ptr(path, i), "duplicate item")
        prefix = s.get("prefixItems") or []
        for i, x in enumerate(value):
            sub = prefix[i] if i < len(prefix) else s.get("items", True)
            if isinstance(sub, (Mapping, bool)):
                r = validate_json_schema(sub, x, _ptr(path, i))
                if r:
                    return r
    if isinstance(value, dict):
        if "minProperties" in s and len(value) < s["minProperties"]:
            return _issue(path, f"expected at least {s['minProperties']} properties")
        if "maxProperties" in s and len(value) > s["maxProperties"]:
            return _issue(path, f"expected at most {s['maxProperties']} properties")
        for k in s.get("required", []):
            if k not in value:
                return _issue(_ptr(path, k), "missing required property")
        props = s.get("properties", {})
        pprops = s.get("patternProperties", {})
        addl = s.get("additionalProperties", True)
        # Same keyword order as Ajv (the server's validator): additionalProperties before properties.
        for k, x in value.items():
            if k in props or any(re.search(pat, k) for pat in pprops):
                continue
            if addl is False:
                return _issue(_ptr(path, k), "unexpected property")
            if isinstance(addl, Mapping):
                r = validate_json_schema(addl, x, _ptr(path, k))
                if r:
                    return r
        for k, sub in props.items():
            if k in value:
                r = validate_json_schema(sub, value[k], _ptr(path, k))
                if r:
                    return r
        for pat, sub in pprops.items():
            for k, x in value.items():
                if re.search(pat, k):
                    r = validate_json_schema(sub, x, _ptr(path, k))
                    if r:
                        return r
    for sub in s.get("allOf", []):
        r = validate_json_schema(sub, value, path)
        if r:
            return r
    if "anyOf" in s and all(validate_json_schema(sub, value, path) for sub in s["anyOf"]):
        return _issue(path, "value matches none of anyOf")
    if "oneOf" in s:
        ok = sum(1 for sub in s["oneOf"] if validate_json_schema(sub, value, path) is None)
        if ok != 1:
            return _issue(path, f"value matches {ok} of oneOf (expected exactly 1)")
    if "not" in s and validate_json_schema(s["not"], value, path) is None:
        return _issue(path, "value matches a schema under not")
    return None


# ------------------------------------------------------------------------------ gymnasium

try:
    import numpy as _np
    from gymnasium import spaces as _gs

    _HAVE_GYM = True
except ImportError:  # pragma: no cover
    _HAVE_GYM = False


def is_gym_expressible(space: Mapping[str, Any]) -> bool:
    """True when the space maps to built-in gymnasium spaces only (no json / tool_call inside)."""
    t = space.get("type")
    if t in ("json", "tool_call"):
        return False
    if t == "dict":
        return all(is_gym_expressible(e["space"]) for e in space["spaces"])
    if t in ("tuple", "one_of"):
        return all(is_gym_expressible(s) for s in space["spaces"])
    if t == "sequence":
        return is_gym_expressible(space["space"])
    return t in _CHECKERS


def _require_gym() -> None:
    if not _HAVE_GYM:
        raise ImportError("sandgym.spaces: install the gymnasium extra: pip install 'sandgym[gymnasium]'")


if _HAVE_GYM:
    _SAMPLE_CHARSET = "".join(chr(c) for c in range(32, 127))

    class UnicodeText(_gs.Text):
        """A ``Text`` space without a charset restriction: ``contains`` accepts any characters
        (length in code points); ``sample`` draws printable ASCII."""

        def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
            super().__init__(max_length, min_length=min_length, charset=_SAMPLE_CHARSET, seed=seed)

        def contains(self, x: Any) -> bool:
            return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

        def __repr__(self) -> str:
            return f"UnicodeText({self.min_length}, {self.max_length})"

        def __eq__(self, other: Any) -> bool:
            return (
                isinstance(other, UnicodeText)
                and self.min_length == other.min_length
                and self.max_length == other.max_length
            )

    class JsonSpace(_gs.Space):  # type: ignore[type-arg]
        """Any JSON value valid under ``schema`` (Python types: dict, list, str, int, float, bool,
        None). ``sample`` draws simple values for common schema shapes (not every schema)."""

        def __init__(self, schema: Mapping[str, Any] | None = None, seed: Any = None) -> None:
            self.schema: dict[str, Any] = dict(schema or {})
            super().__init__(None, None, seed)

        @property
        def is_np_flattenable(self) -> bool:
            return False

        def contains(self, x: Any) -> bool:
            return _is_json_value(x) and validate_json_schema(self.schema, x) is None

        def sample(self, mask: Any = None, probability: Any = None) -> Any:
            return _sample_schema(self.schema, self.np_random, 0)

        def __repr__(self) -> str:
            return f"JsonSpace({self.schema!r})"

        def __eq__(self, other: Any) -> bool:
            return isinstance(other, JsonSpace) and self.schema == other.schema

    class ToolCallSpace(_gs.Space):  # type: ignore[type-arg]
        """A tool call ``{"name": str, "arguments": dict}`` naming one of ``tools`` (each
        ``{"name", "description", "parameters": JSON Schema}``; the list an LLM is shown)."""

        def __init__(self, tools: list[Mapping[str, Any]], seed: Any = None) -> None:
            self.tools: list[dict[str, Any]] = [dict(t) for t in tools]
            super().__init__(None, None, seed)

        @property
        def is_np_flattenable(self) -> bool:
            return False

        @property
        def tool_names(self) -> list[str]:
            return [t["name"] for t in self.tools]

        def contains(self, x: Any) -> bool:
            return check_space({"type": "tool_call", "tools": self.tools}, x) is None

        def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
            tool = self.tools[int(self.np_random.integers(len(self.tools)))]
            args = _sample_schema(tool.get("parameters", {"type": "object"}), self.np_random, 0)
            return {"name": tool["name"], "arguments": args if isinstance(args, dict) else {}}

        def __repr__(self) -> str:
            return f"ToolCallSpace({self.tool_names!r})"

        def __eq__(self, other: Any) -> bool:
            return isinstance(other, ToolCallSpace) and self.tools == other.tools


def _sample_schema(s: Any, rng: Any, depth: int) -> Any:
    if not isinstance(s, Mapping):
        return None
    if "const" in s:
        return s["const"]
    if "enum" in s:
        return s["enum"][int(rng.integers(len(s["enum"])))]
    t = s.get("type", "object" if "properties" in s else "null")
    if isinstance(t, list):
        t = t[0]
    if t == "object":
        props = s.get("properties", {})
        return {k: _sample_schema(v, rng, depth + 1) for k, v in props.items() if depth < 8}
    if t == "array":
        n = int(s.get("minItems", 0))
        return [_sample_schema(s.get("items", {}), rng, depth + 1) for _ in range(n)]
    if t == "string":
        n = int(s.get("minLength", 0)) or min(8, int(s.get("maxLength", 8)))
        return "".join(chr(int(rng.integers(97, 123))) for _ in range(n))
    if t == "integer":
        lo = int(s.get("minimum", 0))
        hi = int(s.get("maximum", lo + 100))
        return int(rng.integers(lo, hi + 1))
    if t == "number":
        flo = float(s.get("minimum", 0.0))
        fhi = float(s.get("maximum", flo + 1.0))
        return float(rng.uniform(flo, fhi))
    if t == "boolean":
        return bool(rng.integers(2))
    return None


def _np_bounds(bound: Any, shape: tuple[int, ...], dtype: str) -> Any:
    def conv(b: Any) -> Any:
        if isinstance(b, list):
            return [conv(x) for x in b]
        return _bound(b)

    arr = _np.broadcast_to(_np.asarray(conv(bound), dtype=_np.float64), shape).copy()
    if dtype in _INT_RANGES:
        lo, hi = _INT_RANGES[dtype]
        info = _np.iinfo(_np.dtype(dtype))
        # infinite or wider-than-dtype bounds become the dtype's (wire-limited) range
        arr = _np.clip(arr, max(lo, int(info.min)), min(hi, int(info.max)))
        return arr.astype(dtype)
    return arr.astype(dtype)


def to_gym_space(space: Mapping[str, Any]) -> Any:
    """The ``gymnasium.spaces.Space`` for a protocol space (see the table in the module docstring).
    Raises ``ValueError`` for an invalid definition (see :func:`validate_space_definition`)."""
    _require_gym()
    bad = validate_space_definition(space)
    if bad:
        raise ValueError(f"invalid space definition at {bad['path'] or '/'}: {bad['reason']}")
    return _to_gym(space)


def _to_gym(space: Mapping[str, Any]) -> Any:
    t = space.get("type")
    if t == "box":
        dtype = str(space.get("dtype", "float64"))
        shape = tuple(int(x) for x in space.get("shape", []))
        low = _np_bounds(space.get("low", "-inf"), shape, dtype)
        high = _np_bounds(space.get("high", "inf"), shape, dtype)
        return _gs.Box(low=low, high=high, shape=shape, dtype=_np.dtype(dtype))
    if t == "discrete":
        return _gs.Discrete(int(space["n"]), start=int(space.get("start", 0)))
    if t == "multi_discrete":
        nvec = _np.asarray(space["nvec"], dtype=_np.int64)
        start = space.get("start")
        return _gs.MultiDiscrete(nvec, start=None if start is None else _np.asarray(start, dtype=_np.int64))
    if t == "multi_binary":
        n = space["n"]
        return _gs.MultiBinary(int(n) if isinstance(n, int) else [int(x) for x in n])
    if t == "text":
        max_len = int(space["max_length"])
        min_len = int(space.get("min_length", 0))
        charset = space.get("charset")
        if charset is None:
            return UnicodeText(max_len, min_length=min_len)
        return _gs.Text(max_len, min_length=min_len, charset=charset)
    if t == "dict":
        from collections import OrderedDict

        return _gs.Dict(OrderedDict((e["key"], _to_gym(e["space"])) for e in space["spaces"]))
    if t == "tuple":
        return _gs.Tuple([_to_gym(s) for s in space["spaces"]])
    if t == "sequence":
        return _gs.Sequence(_to_gym(space["space"]), stack=bool(space.get("stack", False)))
    if t == "one_of":
        return _gs.OneOf([_to_gym(s) for s in space["spaces"]])
    if t == "json":
        return JsonSpace(space.get("schema", {}))
    if t == "tool_call":
        return ToolCallSpace(list(space.get("tools", [])))
    raise ValueError(f"unknown space type {t!r}")


def from_wire(space: Mapping[str, Any], value: Any) -> Any:
    """Wire value -> gymnasium value (numpy arrays of the space's dtype, tuples)."""
    _require_gym()
    t = space.get("type")
    if t == "box":
        shape = tuple(int(x) for x in space.get("shape", []))
        return _np.asarray(value, dtype=_np.dtype(str(space.get("dtype", "float64")))).reshape(shape)
    if t == "discrete":
        return int(value)
    if t == "multi_discrete":
        return _np.asarray(value, dtype=_np.int64)
    if t == "multi_binary":
        return _np.asarray(value, dtype=_np.int8)
    if t == "dict":
        return {e["key"]: from_wire(e["space"], value[e["key"]]) for e in space["spaces"]}
    if t == "tuple":
        return tuple(from_wire(s, v) for s, v in zip(space["spaces"], value))
    if t == "sequence":
        items = tuple(from_wire(space["space"], v) for v in value)
        if space.get("stack"):
            sub = to_gym_space(space["space"])
            if items:
                return _np.stack(items) if not isinstance(sub, (_gs.Dict, _gs.Tuple)) else items
            return _np.zeros((0,), dtype=getattr(sub, "dtype", None) or _np.float64)
        return items
    if t == "one_of":
        idx = int(value[0])
        return (idx, from_wire(space["spaces"][idx], value[1]))
    return value  # text, json, tool_call


def to_wire(space: Mapping[str, Any], value: Any) -> Any:
    """Gymnasium value -> wire value (numpy is converted by the codec; tuples become arrays)."""
    t = space.get("type")
    if t == "dict":
        return {e["key"]: to_wire(e["space"], value[e["key"]]) for e in space["spaces"]}
    if t == "tuple":
        return [to_wire(s, v) for s, v in zip(space["spaces"], value)]
    if t == "sequence":
        return [to_wire(space["space"], v) for v in value]
    if t == "one_of":
        idx = int(value[0])
        return [idx, to_wire(space["spaces"][idx], value[1])]
    if t == "discrete":
        return int(value)
    if _HAVE_GYM and isinstance(value, _np.ndarray):
        return value.tolist()
    return value
