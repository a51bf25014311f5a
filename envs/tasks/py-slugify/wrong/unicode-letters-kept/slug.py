# WRONG: str.isalnum() keeps every Unicode letter or digit ("日本" stays), not only ASCII ones
import unicodedata


def slugify(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    out = []
    for c in decomposed.lower():
        if unicodedata.combining(c):
            continue
        out.append(c if c.isalnum() else "-")
    parts = "".join(out).split("-")
    return "-".join(p for p in parts if p)
