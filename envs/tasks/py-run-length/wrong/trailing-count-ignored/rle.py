# WRONG: a count with no character after it is silently dropped instead of raising ValueError.
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
    for count, ch in re.findall(r"(\d*)(\D)", s):
        if count and int(count) == 0:
            raise ValueError("zero count")
        out.append(ch * (int(count) if count else 1))
    return "".join(out)
