import re
from collections import Counter


def top_words(text: str, k: int) -> list[tuple[str, int]]:
    if k <= 0:
        return []
    words = [w.strip("'").lower() for w in re.findall(r"[A-Za-z']+", text)]
    counts = Counter(w for w in words if w)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
