def slugify(text: str) -> str:
    """Return a URL slug for text (see the task instructions)."""
    raise NotImplementedError
