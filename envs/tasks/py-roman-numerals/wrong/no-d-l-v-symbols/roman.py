# WRONG: the table has no D, L or V, so 500 comes out as "CDC", 50 as "XLX", 5 as "IVI"
_VALUES = [(1000, "M"), (900, "CM"), (400, "CD"), (100, "C"), (90, "XC"),
           (40, "XL"), (10, "X"), (9, "IX"), (4, "IV"), (1, "I")]


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


_CANON = {to_roman(i): i for i in range(1, 4000)}


def from_roman(s: str) -> int:
    if not isinstance(s, str) or s not in _CANON:
        raise ValueError(f"not a canonical roman numeral: {s!r}")
    return _CANON[s]
