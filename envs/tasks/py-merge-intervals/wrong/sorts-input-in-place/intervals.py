# WRONG: sorts the caller's list in place (the input must not be modified).
def merge(intervals):
    if isinstance(intervals, list):
        intervals.sort()
        items = intervals
    else:
        items = sorted(intervals)
    out = []
    for s, e in items:
        if s > e:
            raise ValueError(f"invalid interval ({s}, {e})")
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out
