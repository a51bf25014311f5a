# WRONG: "_skipped" is left out when no row was skipped (it must always be present).
"""Summarise a CSV of amounts per category (see the task instructions)."""
import csv
import json
import math
import sys


def main(argv):
    if len(argv) != 1:
        print("usage: summarize.py <input.csv>", file=sys.stderr)
        return 2
    try:
        fh = open(argv[0], newline="", encoding="utf-8")
    except OSError as e:
        print(f"cannot open {argv[0]}: {e}", file=sys.stderr)
        return 2
    with fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or "category" not in reader.fieldnames or "amount" not in reader.fieldnames:
            print("missing required column category/amount", file=sys.stderr)
            return 2
        totals = {}
        skipped = 0
        for row in reader:
            if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
                continue
            try:
                amount = float((row.get("amount") or "").strip())
                if not math.isfinite(amount):
                    raise ValueError
            except ValueError:
                skipped += 1
                continue
            cat = (row.get("category") or "").strip()
            c = totals.setdefault(cat, [0, 0.0])
            c[0] += 1
            c[1] += amount
    out = {"_skipped": skipped} if skipped else {}
    for cat, (n, t) in totals.items():
        out[cat] = {"count": n, "total": round(t, 2), "mean": round(t / n, 2)}
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
