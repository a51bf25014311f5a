# WRONG: "X" is read as 10 in every position of an ISBN-10, not only as the check character
def _clean(s):
    return s.replace("-", "").replace(" ", "")


def _valid10(s):
    if len(s) != 10 or not all(c.isdigit() or c in "Xx" for c in s):
        return False
    digits = [10 if c in "Xx" else int(c) for c in s]
    return sum(d * (10 - i) for i, d in enumerate(digits)) % 11 == 0


def _valid13(s):
    if len(s) != 13 or not s.isdigit():
        return False
    return sum(int(c) * (3 if i % 2 else 1) for i, c in enumerate(s)) % 10 == 0


def is_valid_isbn(s: str) -> bool:
    s = _clean(s)
    return _valid10(s) or _valid13(s)


def to_isbn13(isbn10: str) -> str:
    s = _clean(isbn10)
    if not _valid10(s):
        raise ValueError("invalid ISBN-10")
    body = "978" + s[:9]
    total = sum(int(c) * (3 if i % 2 else 1) for i, c in enumerate(body))
    return body + str(-total % 10)
