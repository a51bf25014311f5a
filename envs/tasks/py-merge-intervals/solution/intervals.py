def merge(intervals):
    items = [(s, e) for s, e in intervals]
    for s, e in items:
        if s > e:
            raise ValueError(f"invalid interval ({s}, {e})")
    items.sort()
    out = []
    for s, e in items:
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out
