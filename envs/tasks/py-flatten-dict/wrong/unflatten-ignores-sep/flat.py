# WRONG: unflatten always splits on "." whatever sep it is given
def flatten(d: dict, sep: str = ".") -> dict:
    out = {}

    def walk(node, prefix):
        for k, v in node.items():
            key = f"{prefix}{sep}{k}" if prefix is not None else str(k)
            if isinstance(v, dict) and v:
                walk(v, key)
            else:
                if key in out:
                    raise ValueError(f"duplicate flat key {key!r}")
                out[key] = v

    walk(d, None)
    return out


def unflatten(d: dict, sep: str = ".") -> dict:
    out = {}
    for key, value in d.items():
        parts = key.split(".")
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return out
