"""Protocol spaces as ``gymnasium.spaces`` (:func:`to_gym_space`) and values between the wire form
and the gymnasium form (:func:`from_wire`, :func:`to_wire`). Needs the ``gymnasium`` extra; importing
works without it (the functions then raise ImportError)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._util import INT_RANGES, bound
from .check import SPACE_TYPES, check_space
from .definition import validate_space_definition
from .json_schema import is_json_value, validate_json_schema

__all__ = ["to_gym_space", "from_wire", "to_wire", "is_gym_expressible", "JsonSpace", "ToolCallSpace", "UnicodeText"]

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
    return t in SPACE_TYPES


def _require_gym() -> None:
    if not _HAVE_GYM:
        raise ImportError("sandgym.spaces: install the gymnasium extra: pip install 'sandgym[gymnasium]'")


if _HAVE_GYM:
    _SAMPLE_CHARSET = "".join(chr(c) for c in range(32, 127))

    class UnicodeText(_gs.Text):  # noqa: PLW1641 - unhashable, as gymnasium's own spaces
        """A ``Text`` space without a charset restriction: ``contains`` accepts any characters
        (length in code points); ``sample`` draws printable ASCII."""

        def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
            super().__init__(max_length, min_length=min_length, charset=_SAMPLE_CHARSET, seed=seed)

        def contains(self, x: Any) -> bool:
            return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

        def __repr__(self) -> str:
            return f"UnicodeText({self.min_length}, {self.max_length})"

        def __eq__(self, other: object) -> bool:
            return (
                isinstance(other, UnicodeText)
                and self.min_length == other.min_length
                and self.max_length == other.max_length
            )

    class JsonSpace(_gs.Space):  # type: ignore[type-arg]  # noqa: PLW1641 - unhashable, as gymnasium's spaces
        """Any JSON value valid under ``schema`` (Python types: dict, list, str, int, float, bool,
        None). ``sample`` draws simple values for common schema shapes (not every schema)."""

        def __init__(self, schema: Mapping[str, Any] | None = None, seed: Any = None) -> None:
            self.schema: dict[str, Any] = dict(schema or {})
            super().__init__(None, None, seed)

        @property
        def is_np_flattenable(self) -> bool:
            return False

        def contains(self, x: Any) -> bool:
            return is_json_value(x) and validate_json_schema(self.schema, x) is None

        def sample(self, mask: Any = None, probability: Any = None) -> Any:
            return _sample_schema(self.schema, self.np_random, 0)

        def __repr__(self) -> str:
            return f"JsonSpace({self.schema!r})"

        def __eq__(self, other: object) -> bool:
            return isinstance(other, JsonSpace) and self.schema == other.schema

    class ToolCallSpace(_gs.Space):  # type: ignore[type-arg]  # noqa: PLW1641 - unhashable, as gymnasium's spaces
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

        def __eq__(self, other: object) -> bool:
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


def _np_bounds(bounds: Any, shape: tuple[int, ...], dtype: str) -> Any:
    def conv(b: Any) -> Any:
        if isinstance(b, list):
            return [conv(x) for x in b]
        return bound(b)

    arr = _np.broadcast_to(_np.asarray(conv(bounds), dtype=_np.float64), shape).copy()
    if dtype in INT_RANGES:
        lo, hi = INT_RANGES[dtype]
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
        return tuple(from_wire(s, v) for s, v in zip(space["spaces"], value, strict=False))
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
        return [to_wire(s, v) for s, v in zip(space["spaces"], value, strict=False)]
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
