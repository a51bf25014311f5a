import re
import unicodedata


def slugify(text: str) -> str:
    """Return a URL slug for text (see the task instructions)."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    slug = re.sub(r"[^a-z0-9]+", "-", stripped.lower())
    return slug.strip("-")
