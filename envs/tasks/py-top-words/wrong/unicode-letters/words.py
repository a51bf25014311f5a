# WRONG: str.isalpha() accepts any Unicode letter, so "café" is one word instead of "caf".
from collections import Counter


def top_words(text: str, k: int) -> list[tuple[str, int]]:
    if k <= 0:
        return []
    cleaned = "".join(c if c.isalpha() or c == "'" else " " for c in text)
    counts = Counter(w.strip("'").lower() for w in cleaned.split() if w.strip("'"))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
