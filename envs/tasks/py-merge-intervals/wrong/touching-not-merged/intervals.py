# WRONG: uses a strict < so intervals that only touch (end == next start) stay separate.
def merge(intervals):
    items = sorted((s, e) for s, e in intervals)
    for s, e in items:
        if s > e:
            raise ValueError(f"invalid interval ({s}, {e})")
    out = []
    for s, e in items:
        if out and s < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out
