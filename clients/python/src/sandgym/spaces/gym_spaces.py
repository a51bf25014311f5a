"""Protocol spaces as ``gymnasium.spaces`` (:func:`to_gym_space`) and values between the wire form
and the gymnasium form (:func:`from_wire`, :func:`to_wire`). Needs the ``gymnasium`` extra; importing
works without it (the functions then raise ImportError)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ._util import INT_RANGES, bound
from .check import SPACE_TYPES, check_space
from .definition import validate_space_definition
from .json_schema import is_json_value, validate_json_schema

__all__ = [
    "to_gym_space",
    "from_wire",
    "to_wire",
    "is_gym_expressible",
    "JsonSpace",
    "ToolCallSpace",
    "UnicodeText",
    "CharsetText",
    "UNICODE_SIZE",
]

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


#: Every code point (U+0000..U+10FFFF): what a Python ``str``, so a decoded wire string, can hold.
#: Surrogates are included because a JSON string may carry a lone one as an escape (``"\\ud800"``).
UNICODE_SIZE = 0x110000

if _HAVE_GYM:
    from collections.abc import Iterator, Sequence as _SequenceABC, Set as AbstractSet

    _SAMPLE_CHARSET = "".join(chr(c) for c in range(32, 127))
    _ALL_CHARS: list[str] = []  # the charset as one string, built on first use (4 MiB; see characters)

    class _CodePointSet(AbstractSet[str]):
        """The set of all code points, without materialising 1.1M entries (a frozenset of them takes
        11 s and 200 MB to build, and gymnasium deep-copies the space once per sub-env)."""

        __slots__ = ()

        def __contains__(self, c: object) -> bool:
            return isinstance(c, str) and len(c) == 1

        def __len__(self) -> int:
            return UNICODE_SIZE

        def __iter__(self) -> Iterator[str]:
            return map(chr, range(UNICODE_SIZE))

        def __eq__(self, other: object) -> bool:
            if isinstance(other, _CodePointSet):
                return True
            if isinstance(other, AbstractSet):
                return len(other) == UNICODE_SIZE and all(isinstance(c, str) and len(c) == 1 for c in other)
            return NotImplemented

        def __hash__(self) -> int:
            return hash(("sandgym.UnicodeText.charset", UNICODE_SIZE))

        def __repr__(self) -> str:
            return "<all code points U+0000..U+10FFFF>"

    class _CodePointList(_SequenceABC[str]):
        """The charset in index order: index ``i`` is ``chr(i)``."""

        __slots__ = ()

        def __len__(self) -> int:
            return UNICODE_SIZE

        def __getitem__(self, i: Any) -> Any:
            if isinstance(i, slice):
                return [chr(c) for c in range(UNICODE_SIZE)[i]]
            return chr(int(i))

    _CODE_POINTS = _CodePointSet()
    _CODE_POINT_LIST = _CodePointList()

    class UnicodeText(_gs.Text):
        """A ``Text`` space whose charset is every code point (what the protocol's ``text`` without a
        ``charset`` means: any string, length in code points).

        The charset is declared honestly (``character_set`` has 0x110000 members, character ``c`` has
        index ``ord(c)``), so gymnasium's ``flatten``/``unflatten``, ``flatten_space``, the vector
        envs' batching and ``AsyncVectorEnv``'s shared memory work unchanged; it is computed, not
        stored. ``contains`` agrees with it: any ``str`` within the length bounds. ``sample()``
        without a mask draws printable ASCII (uniform draws over 1.1M code points are almost all
        unassigned or surrogates, which an env cannot use and msgpack cannot encode); ``mask`` and
        ``probability`` are indexed by code point, as ``Text`` defines them."""

        def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
            super().__init__(max_length, min_length=min_length, charset=_SAMPLE_CHARSET, seed=seed)

        @property
        def character_set(self) -> frozenset[str]:
            return _CODE_POINTS  # type: ignore[return-value]  # a Set, not a frozenset: see _CodePointSet

        @property
        def character_list(self) -> tuple[str, ...]:
            return _CODE_POINT_LIST  # type: ignore[return-value]  # a Sequence, not a tuple: see _CodePointList

        def character_index(self, char: str) -> Any:
            return _np.int32(ord(char))

        @property
        def characters(self) -> str:
            if not _ALL_CHARS:
                # 30 ms through a codec (a join over chr() takes 0.5 s)
                codes = _np.arange(UNICODE_SIZE, dtype="<u4").tobytes()
                _ALL_CHARS.append(codes.decode("utf-32-le", "surrogatepass"))
            return _ALL_CHARS[0]

        def contains(self, x: Any) -> bool:
            return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

        def sample(self, mask: Any = None, probability: Any = None) -> str:
            if mask is None and probability is None:
                n = int(self.np_random.integers(self.min_length, self.max_length + 1))
                idx = self.np_random.integers(0, len(_SAMPLE_CHARSET), size=n)
                return "".join(_SAMPLE_CHARSET[int(i)] for i in idx)
            if mask is not None and probability is not None:
                raise ValueError("Only one of `mask` or `probability` can be provided")
            length, weights = self._validate_mask(
                mask if mask is not None else probability,
                _np.int8 if mask is not None else _np.float64,
                "mask" if mask is not None else "probability",
            )
            if length is None:
                length = int(self.np_random.integers(self.min_length, self.max_length + 1))
            if weights is None:
                return "".join(chr(int(c)) for c in self.np_random.integers(0, UNICODE_SIZE, size=length))
            weights = _np.asarray(weights, dtype=_np.float64)
            total = float(weights.sum())
            if total == 0:
                if self.min_length == 0:
                    return ""
                raise ValueError("the mask allows no character but min_length > 0")
            picks = self.np_random.choice(UNICODE_SIZE, size=length, p=weights / total)
            return "".join(chr(int(c)) for c in picks)

        def __repr__(self) -> str:
            return f"UnicodeText({self.min_length}, {self.max_length})"

        # __eq__ is Text's (lengths and character_set), so a Text spelling out every code point
        # equals a UnicodeText of the same lengths.

    class CharsetText(_gs.Text):
        """gymnasium's ``Text`` for a protocol ``text`` space with a ``charset``. A subclass only so
        that the shared-memory reader registered below applies to it (see ``_SharedTextBatch``)."""

        def __repr__(self) -> str:
            return f"CharsetText({self.min_length}, {self.max_length}, charset={self.characters})"

    class _SharedTextBatch(_SequenceABC[str]):
        """The batch of text observations in ``AsyncVectorEnv``'s shared memory, decoded on access.

        gymnasium 1.x's own reader for ``Text`` decodes the buffer once, when ``AsyncVectorEnv`` is
        built, and that env never reads it again (``Box`` reads are numpy views, so they stay
        current); with the default ``shared_memory=True`` every later step returned the strings of
        the empty buffer. This reader returns a view instead, as for ``Box``: with ``copy=True``
        (the default) the env deep-copies it each step, which decodes the current contents into a
        plain tuple of ``str``; with ``copy=False`` it is live, like a ``Box`` view."""

        __slots__ = ("_data", "_space")

        def __init__(self, space: Any, data: Any) -> None:
            self._space = space
            self._data = data  # int32 (n, max_length) view of the shared buffer

        def __len__(self) -> int:
            return int(self._data.shape[0])

        def __getitem__(self, i: Any) -> Any:
            if isinstance(i, slice):
                return tuple(self[j] for j in range(len(self))[i])
            return _decode_text(self._space, self._data[i])

        def snapshot(self) -> tuple[str, ...]:
            return tuple(self)

        def __deepcopy__(self, memo: Any) -> tuple[str, ...]:
            return self.snapshot()

        def __copy__(self) -> tuple[str, ...]:
            return self.snapshot()

        def __eq__(self, other: object) -> bool:
            if isinstance(other, (_SharedTextBatch, tuple, list)):
                return tuple(self) == tuple(other)
            return NotImplemented

        __hash__ = None  # type: ignore[assignment]  # mutable view

        def __repr__(self) -> str:
            return f"_SharedTextBatch({self.snapshot()!r})"

    def _decode_text(space: Any, row: Any) -> str:
        codes = row[row < len(space.character_set)]
        if isinstance(space, UnicodeText):  # index == code point: one vectorised decode
            return bytes(codes.astype("<u4").tobytes()).decode("utf-32-le", "surrogatepass")
        chars = space.character_list
        return "".join(chars[int(c)] for c in codes)

    def _register_vector_support() -> None:
        from gymnasium.spaces.utils import flatten, unflatten
        from gymnasium.vector.utils import read_from_shared_memory

        def read_text(space: Any, shared_memory: Any, n: int = 1) -> _SharedTextBatch:
            data = _np.frombuffer(shared_memory.get_obj(), dtype=_np.int32).reshape((n, space.max_length))
            return _SharedTextBatch(space, data)

        read_from_shared_memory.register(UnicodeText)(read_text)
        read_from_shared_memory.register(CharsetText)(read_text)

        # gymnasium's Text flatten loops in Python over a dict per character; for UnicodeText the
        # index is the code point, so both directions are one codec call (same result).
        def flatten_unicode(space: UnicodeText, x: str) -> Any:
            arr = _np.full((space.max_length,), UNICODE_SIZE, dtype=_np.int32)
            codes = _np.frombuffer(x.encode("utf-32-le", "surrogatepass"), dtype="<u4")
            arr[: len(codes)] = codes
            return arr

        def unflatten_unicode(space: UnicodeText, x: Any) -> str:
            return _decode_text(space, _np.asarray(x))

        # (cast: mypy cannot relate a subclass to singledispatch's generic ``Space[T]`` fallback)
        cast(Any, flatten).register(UnicodeText)(flatten_unicode)
        cast(Any, unflatten).register(UnicodeText)(unflatten_unicode)

    _register_vector_support()

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
        return CharsetText(max_len, min_length=min_len, charset=charset)
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
        if isinstance(value, int) or (_HAVE_GYM and isinstance(value, _np.integer)):
            return int(value)  # bool too: gymnasium's Discrete.contains accepts it
        if _HAVE_GYM and isinstance(value, (_np.generic, _np.ndarray)) and _np.ndim(value) == 0:
            return value.item()
        return value  # anything else (1.5, "1") goes as is: the server refuses it (INVALID_ACTION), never truncated
    if _HAVE_GYM and isinstance(value, _np.ndarray):
        return value.tolist()
    return value
