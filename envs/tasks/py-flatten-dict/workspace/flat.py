def flatten(d: dict, sep: str = ".") -> dict:
    raise NotImplementedError


def unflatten(d: dict, sep: str = ".") -> dict:
    raise NotImplementedError
