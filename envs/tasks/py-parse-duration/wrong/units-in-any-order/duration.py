# WRONG: accepts the units in any order and repeated ("1m1h", "1h1h"), summing whatever it finds.
import re

_MULT = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(s: str) -> int:
    s = s.strip()
    if s.isdigit():
        return int(s)
    if not re.fullmatch(r"(?:\d+[wdhms])+", s):
        raise ValueError(f"invalid duration {s!r}")
    return sum(int(n) * _MULT[u] for n, u in re.findall(r"(\d+)([wdhms])", s))


def format_duration(seconds: int) -> str:
    if seconds < 0:
        raise ValueError("negative duration")
    if seconds == 0:
        return "0s"
    out = []
    for unit, mult in _MULT.items():
        q, seconds = divmod(seconds, mult)
        if q:
            out.append(f"{q}{unit}")
    return "".join(out)
