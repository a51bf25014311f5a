# WRONG: on equal updated_at the first record is kept, not the later one.
"""Deduplicate JSON Lines records by key (see the task instructions)."""
import argparse
import datetime as dt
import json
import sys


def _instant(value):
    if not isinstance(value, str):
        raise ValueError("not a string")
    t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--key", required=True)
    a = ap.parse_args(argv)
    best = {}
    rejected = []
    with open(a.src, encoding="utf-8") as fh:
        for pos, line in enumerate(fh):
            raw = line.rstrip("\n")
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
                if not isinstance(rec, dict) or a.key not in rec:
                    raise ValueError("no key")
                when = _instant(rec.get("updated_at"))
                k = json.dumps(rec[a.key], sort_keys=True)
            except ValueError:
                rejected.append(raw)
                continue
            prev = best.get(k)
            if prev is None or when > prev[0]:
                best[k] = (when, pos, raw)
    kept = sorted(best.values(), key=lambda v: v[1])
    with open(a.dst, "w", encoding="utf-8") as out:
        for _, _, raw in kept:
            out.write(raw + "\n")
    if rejected:
        with open(a.dst + ".rejected", "w", encoding="utf-8") as out:
            out.write("\n".join(rejected) + "\n")
    print(f"kept {len(kept)} rejected {len(rejected)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
