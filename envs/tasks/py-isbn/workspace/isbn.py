def is_valid_isbn(s: str) -> bool:
    raise NotImplementedError


def to_isbn13(isbn10: str) -> str:
    raise NotImplementedError
