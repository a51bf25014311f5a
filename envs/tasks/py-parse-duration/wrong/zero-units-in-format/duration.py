# WRONG: format_duration writes every unit after the first non-zero one, zeros included ("1d0h1m0s").
import re

_UNITS = [("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1)]
_RE = re.compile(r"(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def parse_duration(s: str) -> int:
    s = s.strip()
    if s.isdigit():
        return int(s)
    m = _RE.fullmatch(s)
    if not s or not m:
        raise ValueError(f"invalid duration {s!r}")
    return sum(int(v) * mult for v, (_, mult) in zip(m.groups(), _UNITS) if v)


def format_duration(seconds: int) -> str:
    if seconds < 0:
        raise ValueError("negative duration")
    if seconds == 0:
        return "0s"
    out = []
    for unit, mult in _UNITS:
        q, seconds = divmod(seconds, mult)
        if q or out:
            out.append(f"{q}{unit}")
    return "".join(out)
