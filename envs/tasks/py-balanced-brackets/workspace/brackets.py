def is_balanced(s: str) -> bool:
    raise NotImplementedError
