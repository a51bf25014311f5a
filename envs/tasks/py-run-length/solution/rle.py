import itertools
import re


def encode(s: str) -> str:
    out = []
    for ch, group in itertools.groupby(s):
        n = len(list(group))
        out.append(f"{n}{ch}" if n > 1 else ch)
    return "".join(out)


def decode(s: str) -> str:
    out = []
    pos = 0
    for m in re.finditer(r"(\d*)(\D)", s):
        if m.start() != pos:
            break
        count = m.group(1)
        if count and int(count) == 0:
            raise ValueError("zero count")
        out.append(m.group(2) * (int(count) if count else 1))
        pos = m.end()
    if pos != len(s):
        raise ValueError(f"malformed input at {pos}")
    return "".join(out)
