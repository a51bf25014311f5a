from .merge import deep_merge


def parse_env(lines) -> dict:
    """KEY=VALUE lines to a nested dict: APP__DB__HOST=x -> {"app": {"db": {"host": "x"}}}.
    Keys are lower-cased, "__" separates levels, blank lines and lines starting with # are
    skipped, whitespace around key and value is stripped, and the value may contain "="."""
    out = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, value = line.split("=", 1)
        node = out
        parts = key.strip().lower().split("__")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value.strip()
    return out


def layered(*layers: dict) -> dict:
    """Merge layers left to right (later layers win)."""
    out = {}
    for layer in layers:
        out = deep_merge(out, layer)
    return out
