# WRONG: compares every interval with the first merged group only, so later groups never grow.
def merge(intervals):
    items = sorted((s, e) for s, e in intervals)
    for s, e in items:
        if s > e:
            raise ValueError(f"invalid interval ({s}, {e})")
    out = []
    for s, e in items:
        if out and s <= out[0][1]:
            out[0] = (out[0][0], max(out[0][1], e))
        else:
            out.append((s, e))
    return out
