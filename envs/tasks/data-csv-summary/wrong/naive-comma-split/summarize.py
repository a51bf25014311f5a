# WRONG: splits lines on "," by hand, so a quoted field containing a comma breaks the row.
import json
import math
import sys


def main(argv):
    if len(argv) != 1:
        print("usage: summarize.py <input.csv>", file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as e:
        print(f"cannot open {argv[0]}: {e}", file=sys.stderr)
        return 2
    header = [h.strip() for h in lines[0].split(",")] if lines else []
    if "category" not in header or "amount" not in header:
        print("missing required column category/amount", file=sys.stderr)
        return 2
    ci, ai = header.index("category"), header.index("amount")
    totals = {}
    skipped = 0
    for line in lines[1:]:
        if not line.strip():
            continue
        cells = [c.strip().strip('"') for c in line.split(",")]
        try:
            amount = float(cells[ai])
            if not math.isfinite(amount):
                raise ValueError
        except (ValueError, IndexError):
            skipped += 1
            continue
        cat = cells[ci].strip()
        c = totals.setdefault(cat, [0, 0.0])
        c[0] += 1
        c[1] += amount
    out = {"_skipped": skipped}
    for cat, (n, t) in totals.items():
        out[cat] = {"count": n, "total": round(t, 2), "mean": round(t / n, 2)}
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
