# WRONG: leading/trailing apostrophes stay part of the word ("'tis" != "tis").
import re
from collections import Counter


def top_words(text: str, k: int) -> list[tuple[str, int]]:
    if k <= 0:
        return []
    counts = Counter(w.lower() for w in re.findall(r"[A-Za-z']+", text) if w.strip("'"))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
