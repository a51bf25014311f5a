# WRONG: Counter.most_common breaks ties by first occurrence, not alphabetically.
import re
from collections import Counter


def top_words(text: str, k: int) -> list[tuple[str, int]]:
    if k <= 0:
        return []
    words = [w.strip("'").lower() for w in re.findall(r"[A-Za-z']+", text)]
    return Counter(w for w in words if w).most_common(k)
