def top_words(text: str, k: int) -> list[tuple[str, int]]:
    raise NotImplementedError
