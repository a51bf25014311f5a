def shift(text: str, k: int) -> str:
    raise NotImplementedError


def crack(ciphertext: str) -> int:
    raise NotImplementedError
