# WRONG: copies only the top level, so nested dicts/lists of the result are shared with the inputs.
import copy


def deep_merge(base: dict, override: dict) -> dict:
    """Return a NEW dict: keys of override win; nested dicts merge recursively; lists and
    other values from override replace those of base. Neither input is modified.
    A value of None in override deletes the key."""
    out = dict(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
