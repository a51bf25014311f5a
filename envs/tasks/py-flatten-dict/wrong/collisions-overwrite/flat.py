# WRONG: a flat key produced twice is silently overwritten (the later path wins) instead of raising ValueError
def flatten(d: dict, sep: str = ".") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            for sub, leaf in flatten(v, sep).items():
                out[f"{k}{sep}{sub}"] = leaf
        else:
            out[str(k)] = v
    return out


def unflatten(d: dict, sep: str = ".") -> dict:
    out = {}
    for key, value in d.items():
        parts = key.split(sep)
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return out
