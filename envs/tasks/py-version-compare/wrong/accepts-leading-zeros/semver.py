# WRONG: accepts leading zeros ("01.0.0", "1.0.0-01"), which must raise ValueError.
import functools
import re

_NUM = r"(\d+)"
_RE = re.compile(rf"{_NUM}\.{_NUM}\.{_NUM}(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]+)?")


def _parse(v):
    m = _RE.fullmatch(v)
    if not m:
        raise ValueError(f"invalid version {v!r}")
    pre = m.group(4).split(".") if m.group(4) else []
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
    return _cmp(len(pa), len(pb))


def sort_versions(vs):
    return sorted(vs, key=functools.cmp_to_key(compare))
