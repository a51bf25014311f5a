# WRONG: decode reads only the last digit before a character as the count ("12a" -> "aa").
import itertools


def encode(s: str) -> str:
    out = []
    for ch, group in itertools.groupby(s):
        n = len(list(group))
        out.append(f"{n}{ch}" if n > 1 else ch)
    return "".join(out)


def decode(s: str) -> str:
    out = []
    count = None
    for ch in s:
        if ch.isdigit():
            count = int(ch)
            if count == 0:
                raise ValueError("zero count")
            continue
        out.append(ch * (count or 1))
        count = None
    if count is not None:
        raise ValueError("count without a character")
    return "".join(out)
