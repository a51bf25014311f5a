# WRONG: sentences() splits on every run of . ! ?, even inside "3.14" or "i.e.," (no whitespace check).
import re


def tokenize(text: str) -> list:
    """Words: runs of letters, digits and inner apostrophes ("don't" is one word), lower-cased."""
    return re.findall(r"[a-z0-9]+(?:'[a-z0-9]+)*", text.lower())


def sentences(text: str) -> list:
    """Split on ., ! or ? followed by whitespace or the end; drop empty sentences."""
    parts = re.split(r"[.!?]+", text)
    return [p.strip() for p in parts if p.strip()]
