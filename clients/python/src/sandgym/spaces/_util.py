"""Helpers every part of :mod:`sandgym.spaces` uses: the issue shape, JSON pointers, number tests,
dtype ranges and box bounds."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

#: ``None`` when a value (or definition) is fine, else ``{"path": JSON pointer, "reason": text}``
Issue = dict[str, str] | None

INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**53 - 1), 2**53 - 1),  # 64-bit ints are limited to what the wire carries
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**53 - 1),
}
FLOAT_RANGES: dict[str, float] = {"float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}

#: the largest integer the wire carries exactly (2^53 - 1)
SAFE_INT = 2**53 - 1


def ptr(path: str, key: str | int) -> str:
    k = str(key).replace("~", "~0").replace("/", "~1")
    return f"{path}/{k}"


def issue(path: str, reason: str) -> dict[str, str]:
    return {"path": path, "reason": reason}


def is_number(v: Any) -> bool:
    return type(v) in (int, float) and (type(v) is int or math.isfinite(v))


def is_integer(v: Any) -> bool:
    if type(v) is int:
        return True
    return type(v) is float and math.isfinite(v) and v.is_integer()


def bound(b: Any) -> float:
    if b == "inf":
        return math.inf
    if b == "-inf":
        return -math.inf
    return float(b)


def bound_at(b: Any, index: tuple[int, ...]) -> float:
    """The bound of the element at ``index``: a scalar bound applies to every element."""
    for i in index:
        if isinstance(b, list):
            b = b[i]
        else:
            break
    return bound(b)


def codepoints(s: str) -> int:
    return len(s)  # Python str indexes code points already


def fmt(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return str(int(x)) if float(x).is_integer() else repr(x)


def int_in(v: Any, lo: int, hi: int) -> bool:
    return is_integer(v) and lo <= v <= hi


def walk_array(
    v: Any, dims: list[int], p: str, leaf: Callable[[Any, str, tuple[int, ...]], Issue], index: tuple[int, ...] = ()
) -> Issue:
    """Check that ``v`` is nested arrays of shape ``dims`` and each element passes ``leaf(element,
    path, index)``; the first issue found, or None."""
    if not dims:
        return leaf(v, p, index)
    if not isinstance(v, list):
        return issue(p, f"expected an array of length {dims[0]}")
    if len(v) != dims[0]:
        return issue(p, f"expected length {dims[0]}, got {len(v)}")
    for i, x in enumerate(v):
        r = walk_array(x, dims[1:], ptr(p, i), leaf, (*index, i))
        if r:
            return r
    return None
