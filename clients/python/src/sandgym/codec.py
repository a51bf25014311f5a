"""Wire encoding: JSON text frames and msgpack binary frames (pure functions, no I/O).

Encoding first normalises a value to the protocol's JSON data model (:func:`to_wire`):

* numpy arrays become (nested) lists and numpy scalars become Python numbers;
* tuples become lists; mapping keys must be strings;
* NaN and +/-Infinity are refused (the protocol never carries them: infinite space bounds are the
  strings ``"inf"`` / ``"-inf"``), as are integers beyond 2^53 - 1 in magnitude;
* an integral float (``1.0``) is sent as the integer ``1``: the server is JavaScript, where they are
  the same number, and this keeps our bytes identical to the TypeScript client's.

JSON output matches ``JSON.stringify`` byte for byte (compact separators, UTF-8 unescaped, numbers in
ECMAScript's shortest round-trip form). msgpack output matches the server's encoder: smallest
integer forms within 32 bits, float64 otherwise, ``str`` / ``bin`` types distinct.

Decoding gives the same Python values for both encodings: a number the peer sent as an integral
float64 (msgpack) decodes to ``int``, as it would from JSON.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import msgpack

__all__ = [
    "MAX_SAFE_INTEGER",
    "EncodeError",
    "DecodeError",
    "to_wire",
    "encode_json",
    "encode_msgpack",
    "encode",
    "decode_json",
    "decode_msgpack",
    "decode",
    "js_number",
]

MAX_SAFE_INTEGER = 2**53 - 1

try:  # numpy is optional (the `gymnasium` extra)
    import numpy as _np
except ImportError:  # pragma: no cover
    _np = None  # type: ignore[assignment]


class EncodeError(ValueError):
    """The value cannot be put on the wire (NaN, Infinity, huge integer, non-string key...)."""


class DecodeError(ValueError):
    """A frame could not be decoded. ``code`` is the protocol code the server would answer with:
    ``PARSE_ERROR``, or ``TOO_LARGE`` for a frame over ``max_bytes``."""

    def __init__(self, message: str, code: str = "PARSE_ERROR") -> None:
        super().__init__(message)
        self.code = code


def _check_size(data: Any, max_bytes: int | None) -> None:
    if max_bytes is None:
        return
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise DecodeError(f"frame of {size} bytes exceeds {max_bytes} bytes", "TOO_LARGE")


def _float(x: float, path: str) -> int | float:
    if x != x or x in (math.inf, -math.inf):
        raise EncodeError(f"{path or '/'}: {x!r} is not allowed on the wire (NaN/Infinity)")
    if x.is_integer() and -MAX_SAFE_INTEGER <= x <= MAX_SAFE_INTEGER:
        return int(x)
    return x


def _int(x: int, path: str) -> int:
    if not -MAX_SAFE_INTEGER <= x <= MAX_SAFE_INTEGER:
        raise EncodeError(f"{path or '/'}: integer {x} is beyond 2^53-1 in magnitude")
    return x


def to_wire(value: Any, path: str = "") -> Any:
    """Normalise ``value`` to JSON-model Python types (see module docstring). Raises EncodeError."""
    t = type(value)
    if t is str or value is None or t is bool:
        return value
    if t is int:
        return _int(value, path)
    if t is float:
        return _float(value, path)
    if t is dict:
        out: dict[str, Any] = {}
        for k, v in value.items():
            if type(k) is not str:
                raise EncodeError(f"{path or '/'}: object keys must be strings, got {k!r}")
            out[k] = to_wire(v, f"{path}/{k}")
        return out
    if t is list or t is tuple:
        return [to_wire(v, f"{path}/{i}") for i, v in enumerate(value)]
    # Slower, rarer cases: subclasses, numpy, other mappings / sequences.
    if isinstance(value, bool):
        return bool(value)
    if _np is not None:
        if isinstance(value, _np.ndarray):
            if value.dtype == _np.bool_:
                return value.tolist()
            if value.dtype.kind not in "iuf":
                if value.dtype.kind in "OUS":
                    return to_wire(value.tolist(), path)
                raise EncodeError(f"{path or '/'}: numpy dtype {value.dtype} cannot be sent")
            if value.dtype.kind == "f" and value.size and not _np.isfinite(value).all():
                raise EncodeError(f"{path or '/'}: array contains NaN or Infinity")
            return to_wire(value.tolist(), path)
        if isinstance(value, _np.generic):
            return to_wire(value.item(), path)
    if isinstance(value, int):
        return _int(int(value), path)
    if isinstance(value, float):
        return _float(float(value), path)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        return to_wire(dict(value), path)
    if isinstance(value, (list, tuple)):
        return [to_wire(v, f"{path}/{i}") for i, v in enumerate(value)]
    raise EncodeError(f"{path or '/'}: {type(value).__name__} cannot be sent on the wire")


# ---------------------------------------------------------------------------------- JSON


def js_number(x: float) -> str:
    """Format a finite float exactly like ECMAScript's Number::toString (JSON.stringify)."""
    if x == 0:
        return "0"
    r = repr(x)  # shortest round-trip digits, same digit string as ECMAScript
    sign = ""
    if r[0] == "-":
        sign, r = "-", r[1:]
    if "e" in r:
        mant, exp_s = r.split("e")
        exp = int(exp_s)
    else:
        mant, exp = r, 0
    if "." in mant:
        ip, fp = mant.split(".")
    else:
        ip, fp = mant, ""
    digits = (ip + fp).lstrip("0")
    # decimal point position relative to the digit string start
    point = len(ip) + exp - (len(ip + fp) - len((ip + fp).lstrip("0")))
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    n = point
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        es = f"e+{e}" if e >= 0 else f"e-{-e}"
        s = digits + es if k == 1 else digits[0] + "." + digits[1:] + es
    return sign + s


def _needs_js_float(x: float) -> bool:
    a = abs(x)
    # Python's repr switches to exponent form outside [1e-4, 1e16); ECMAScript outside [1e-6, 1e21).
    return a != 0 and (a < 1e-4 or a >= 1e16)


def _has_special_float(v: Any) -> bool:
    t = type(v)
    if t is float:
        return _needs_js_float(v)
    if t is dict:
        return any(_has_special_float(x) for x in v.values())
    if t is list:
        return any(_has_special_float(x) for x in v)
    return False


class _JsEncoder(json.JSONEncoder):
    """Pure-Python path used only when a float needs ECMAScript formatting."""

    def iterencode(self, o: Any, _one_shot: bool = False) -> Any:
        def floatstr(f: float, *_: Any) -> str:
            return js_number(f)

        it = json.encoder._make_iterencode(  # type: ignore[attr-defined]
            {},
            self.default,
            json.encoder.py_encode_basestring,
            None,
            floatstr,
            ":",
            ",",
            False,
            False,
            True,
        )
        return it(o, 0)


_dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
_js_dumps = _JsEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def _check_json_floats(v: Any, path: str) -> None:
    t = type(v)
    if t is float:
        # JSON.stringify writes such doubles as integer literals, which peers must refuse.
        if v.is_integer() and MAX_SAFE_INTEGER < abs(v) < 1e21:
            raise EncodeError(f"{path or '/'}: integral number {v!r} is beyond 2^53-1")
    elif t is dict:
        for k, x in v.items():
            _check_json_floats(x, f"{path}/{k}")
    elif t is list:
        for i, x in enumerate(v):
            _check_json_floats(x, f"{path}/{i}")


# A lone surrogate (U+D800..U+DFFF) has no UTF-8 form, so a text frame cannot carry it raw. JSON.stringify
# (ES2019 "well-formed stringify") writes it as a \\uXXXX escape, which is valid JSON in valid UTF-8 that a
# server decodes back to the same string: do the same, so a string the server sent can be sent back.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def encode_json(value: Any) -> str:
    """Encode a value as a JSON text frame (str), byte-identical to ``JSON.stringify``."""
    wire = to_wire(value)
    if _has_special_float(wire):
        _check_json_floats(wire, "")
        text = _js_dumps(wire)
    else:
        text = _dumps(wire)
    # isascii() is a C scan: the common frame pays nothing more.
    if not text.isascii() and _SURROGATE.search(text):
        text = _SURROGATE.sub(_escape_surrogate, text)
    return text


def _reject_constant(name: str) -> Any:
    raise DecodeError(f"{name} is not allowed on the wire")


MAX_DEPTH = 512  # nesting limit the server applies to msgpack frames (mirrored in strict mode)


def _strict_int(s: str) -> int:
    v = int(s)
    if not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER:
        raise DecodeError(f"integer {s[:40]} is beyond 2^53-1 in magnitude")
    return v


def _strict_float(s: str) -> float:
    v = float(s)
    if v in (math.inf, -math.inf):
        raise DecodeError(f"number {s[:40]} overflows to infinity")
    return v


def _strict_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k == "__proto__":
            raise DecodeError('object key "__proto__" is not allowed')
        out[k] = v
    return out


def decode_json(data: str | bytes, *, strict: bool = False, max_bytes: int | None = None) -> Any:
    """Decode a JSON text frame. NaN/Infinity literals are always refused; ``strict`` also refuses
    what the server refuses (integers beyond 2^53-1, overflow to Infinity, ``__proto__`` keys,
    invalid UTF-8). ``max_bytes`` refuses larger frames with code ``TOO_LARGE``."""
    _check_size(data, max_bytes)
    try:
        if not strict:
            return json.loads(data, parse_constant=_reject_constant)
        if isinstance(data, (bytes, bytearray)):
            data = bytes(data).decode("utf-8")
        return json.loads(
            data,
            parse_constant=_reject_constant,
            parse_int=_strict_int,
            parse_float=_strict_float,
            object_pairs_hook=_strict_pairs,
        )
    except DecodeError:
        raise
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise DecodeError(f"invalid JSON: {exc}") from None


# ---------------------------------------------------------------------------------- msgpack

_INT32_MIN = -(2**31)
_UINT32_MAX = 2**32 - 1


def _msgpack_default(obj: Any) -> Any:
    raise TypeError(f"cannot msgpack {type(obj).__name__}")


def _widen(v: Any) -> Any:
    """msgpackr encodes integers outside int32/uint32 as float64: do the same for identical bytes."""
    t = type(v)
    if t is int:
        return float(v) if (v < _INT32_MIN or v > _UINT32_MAX) else v
    if t is dict:
        return {k: _widen(x) for k, x in v.items()}
    if t is list:
        return [_widen(x) for x in v]
    return v


def _has_wide_int(v: Any) -> bool:
    t = type(v)
    if t is int:
        return bool(v < _INT32_MIN or v > _UINT32_MAX)
    if t is dict:
        return any(_has_wide_int(x) for x in v.values())
    if t is list:
        return any(_has_wide_int(x) for x in v)
    return False


_packer = msgpack.Packer(use_bin_type=True, default=_msgpack_default, autoreset=True)


def _msgpack_bytes(wire: Any) -> bytes:
    if _has_wide_int(wire):
        wire = _widen(wire)
    try:
        data: bytes = _packer.pack(wire)
    except UnicodeEncodeError as e:
        # msgpack strings are UTF-8: a lone surrogate has no encoding (JSON escapes it; msgpack cannot).
        raise EncodeError(
            f"a string holds a lone surrogate ({e.object[e.start : e.end]!r}), which msgpack cannot carry: use JSON"
        ) from None
    return data


def encode_msgpack(value: Any) -> bytes:
    """Encode a value as a msgpack binary frame."""
    return _msgpack_bytes(to_wire(value))


def _check_strict(v: Any, depth: int) -> None:
    t = type(v)
    if t is float:
        if v != v or v in (math.inf, -math.inf):
            raise DecodeError("NaN and Infinity are not allowed")
    elif t is int:
        if not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER:
            raise DecodeError(f"integer {v} is beyond 2^53-1 in magnitude")
    elif t is dict or t is list:
        if depth >= MAX_DEPTH:
            raise DecodeError(f"nesting deeper than {MAX_DEPTH}")
        if t is dict:
            for k, x in v.items():
                if type(k) is not str:
                    raise DecodeError("msgpack map keys must be strings")
                if k == "__proto__":
                    raise DecodeError('object key "__proto__" is not allowed')
                _check_strict(x, depth + 1)
        else:
            for x in v:
                _check_strict(x, depth + 1)
    elif t is str or t is bool or v is None:
        pass
    elif t is bytes:
        raise DecodeError("msgpack bin values are not part of the protocol data model")
    else:
        raise DecodeError(f"msgpack {t.__name__} values are not part of the protocol data model")


def _ext_hook(code: int, data: bytes) -> Any:
    raise DecodeError("msgpack ext values are not part of the protocol data model")


def decode_msgpack(data: bytes, *, strict: bool = False, max_bytes: int | None = None) -> Any:
    """Decode a msgpack binary frame. ``strict`` refuses everything the server refuses (bin/ext
    values, non-string or ``__proto__`` keys, NaN/Infinity, integers beyond 2^53-1, invalid UTF-8,
    trailing bytes, nesting deeper than 512). ``max_bytes`` refuses larger frames (``TOO_LARGE``)."""
    _check_size(data, max_bytes)
    if not data:
        raise DecodeError("empty msgpack frame")
    try:
        value = msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=strict,
            ext_hook=_ext_hook,
            use_list=True,
        )
    except DecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - msgpack raises several unrelated exception types
        raise DecodeError(f"invalid msgpack: {exc}") from None
    if strict:
        _check_strict(value, 0)
    if b"\xcb" in data or b"\xca" in data:
        # The server writes integers beyond 32 bits as float64 (msgpackr); JSON would carry them as
        # integers. Give both encodings the same Python values: integral floats become ints.
        value = _integral_floats_to_int(value)
    return value


def _integral_floats_to_int(v: Any) -> Any:
    t = type(v)
    if t is float:
        return int(v) if v.is_integer() and -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER else v
    if t is list:
        return [_integral_floats_to_int(x) for x in v]
    if t is dict:
        return {k: _integral_floats_to_int(x) for k, x in v.items()}
    return v


# ---------------------------------------------------------------------------------- both


def encode(value: Any, encoding: str) -> str | bytes:
    """Encode for ``encoding`` ``"json"`` (str, a text frame) or ``"msgpack"`` (bytes, binary)."""
    if encoding == "json":
        return encode_json(value)
    if encoding == "msgpack":
        return encode_msgpack(value)
    raise ValueError(f"unknown encoding {encoding!r} (use 'json' or 'msgpack')")


def decode(data: str | bytes, *, strict: bool = False, max_bytes: int | None = None) -> Any:
    """Decode a frame: text frames (str) are JSON, binary frames (bytes) are msgpack."""
    if isinstance(data, str):
        return decode_json(data, strict=strict, max_bytes=max_bytes)
    return decode_msgpack(bytes(data), strict=strict, max_bytes=max_bytes)
