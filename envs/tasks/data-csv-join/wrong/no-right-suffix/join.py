# WRONG: right columns that also exist on the left keep their name (no "_right" suffix).
import csv


def _read(path):
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return (rows[0] if rows else []), rows[1:]


def join_csv(left_path, right_path, out_path, on, how="inner"):
    if how not in ("inner", "left", "outer"):
        raise ValueError(f"unknown join type {how!r}")
    lh, lrows = _read(left_path)
    rh, rrows = _read(right_path)
    if on not in lh or on not in rh:
        raise KeyError(on)
    li, ri = lh.index(on), rh.index(on)
    rcols = [i for i in range(len(rh)) if i != ri]
    header = lh + [rh[i] for i in rcols]
    by_key = {}
    for row in rrows:
        by_key.setdefault(row[ri], []).append(row)
    matched = set()
    out = []
    for row in lrows:
        ms = by_key.get(row[li], [])
        for m in ms:
            matched.add(id(m))
            out.append(row + [m[i] for i in rcols])
        if not ms and how in ("left", "outer"):
            out.append(row + [""] * len(rcols))
    if how == "outer":
        for m in rrows:
            if id(m) not in matched:
                base = [""] * len(lh)
                base[li] = m[ri]
                out.append(base + [m[i] for i in rcols])
    with open(out_path, "w", newline="", encoding="utf-8") as fh:
        wr = csv.writer(fh)
        wr.writerow(header)
        wr.writerows(out)
    return len(out)
