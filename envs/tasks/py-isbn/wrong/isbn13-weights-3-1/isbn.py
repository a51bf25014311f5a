# WRONG: ISBN-13 weights start at 3 (3, 1, 3, ...) instead of 1, 3, 1, ...
def _clean(s):
    return s.replace("-", "").replace(" ", "")


def _valid10(s):
    if len(s) != 10 or not s[:9].isdigit() or not (s[9].isdigit() or s[9] in "Xx"):
        return False
    digits = [int(c) for c in s[:9]] + [10 if s[9] in "Xx" else int(s[9])]
    return sum(d * (10 - i) for i, d in enumerate(digits)) % 11 == 0


def _check13(digits12):
    total = sum(int(c) * (1 if i % 2 else 3) for i, c in enumerate(digits12))
    return str((10 - total % 10) % 10)


def is_valid_isbn(s: str) -> bool:
    s = _clean(s)
    if len(s) == 13 and s.isdigit():
        return _check13(s[:12]) == s[12]
    return _valid10(s)


def to_isbn13(isbn10: str) -> str:
    s = _clean(isbn10)
    if not _valid10(s):
        raise ValueError("invalid ISBN-10")
    body = "978" + s[:9]
    return body + _check13(body)
