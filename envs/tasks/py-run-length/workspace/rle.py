def encode(s: str) -> str:
    raise NotImplementedError


def decode(s: str) -> str:
    raise NotImplementedError
