# WRONG: splits on \W+, which keeps "_" (a word character) inside the slug
import re
import unicodedata


def slugify(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    ascii_text = decomposed.encode("ascii", "ignore").decode("ascii")
    return re.sub(r"\W+", "-", ascii_text.lower()).strip("-")
