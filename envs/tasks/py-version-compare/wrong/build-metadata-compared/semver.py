# WRONG: uses the build metadata as a tie-breaker although it must be ignored.
import functools
import re

_NUM = r"(0|[1-9]\d*)"
_RE = re.compile(rf"{_NUM}\.{_NUM}\.{_NUM}(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z.-]+))?")


def _parse(v):
    m = _RE.fullmatch(v)
    if not m:
        raise ValueError(f"invalid version {v!r}")
    pre = m.group(4).split(".") if m.group(4) else []
    for ident in pre:
        if ident.isdigit() and len(ident) > 1 and ident[0] == "0":
            raise ValueError(f"leading zero in {v!r}")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))), pre


def _cmp(x, y):
    return (x > y) - (x < y)


def _cmp_ident(a, b):
    an, bn = a.isdigit(), b.isdigit()
    if an and bn:
        return _cmp(int(a), int(b))
    if an != bn:
        return -1 if an else 1
    return _cmp(a, b)


def compare(a: str, b: str) -> int:
    (ca, pa), (cb, pb) = _parse(a), _parse(b)
    if ca != cb:
        return _cmp(ca, cb)
    if not pa or not pb:
        return _cmp(not pa, not pb)
    for x, y in zip(pa, pb):
        c = _cmp_ident(x, y)
        if c:
            return c
    c = _cmp(len(pa), len(pb))
    return c or _cmp(a.partition("+")[2], b.partition("+")[2])


def sort_versions(vs):
    return sorted(vs, key=functools.cmp_to_key(compare))
