# WRONG: rejects any count containing the digit 0, so "10a" raises instead of giving "a" * 10.
import itertools
import re


def encode(s: str) -> str:
    out = []
    for ch, group in itertools.groupby(s):
        n = len(list(group))
        out.append(f"{n}{ch}" if n > 1 else ch)
    return "".join(out)


def decode(s: str) -> str:
    if re.search(r"\d$", s):
        raise ValueError("count without a character")
    out = []
    for count, ch in re.findall(r"(\d*)(\D)", s):
        if "0" in count:
            raise ValueError("zero count")
        out.append(ch * (int(count) if count else 1))
    return "".join(out)
