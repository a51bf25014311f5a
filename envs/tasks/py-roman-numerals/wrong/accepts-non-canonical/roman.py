# WRONG: from_roman adds symbol values (subtracting before a larger one) without checking the numeral is canonical
_VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
           (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
_SYMBOL = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(n: int) -> str:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError("an integer is required")
    if not 1 <= n <= 3999:
        raise ValueError("out of range 1..3999")
    out = []
    for value, sym in _VALUES:
        while n >= value:
            out.append(sym)
            n -= value
    return "".join(out)


def from_roman(s: str) -> int:
    if not isinstance(s, str) or not s or any(c not in _SYMBOL for c in s):
        raise ValueError(f"not a roman numeral: {s!r}")
    total = 0
    for i, c in enumerate(s):
        v = _SYMBOL[c]
        if i + 1 < len(s) and _SYMBOL[s[i + 1]] > v:
            total -= v
        else:
            total += v
    if not 1 <= total <= 3999:
        raise ValueError(f"out of range: {s!r}")
    return total
