# WRONG: Counter.most_common breaks ties in top_paths by first appearance, not by path.
"""Access log statistics (see the task instructions)."""
import datetime as dt
import json
import re
import sys
from collections import Counter

_RE = re.compile(r'(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) (\S+)(?: [^"]*)?" (\d{3}) (\d+|-)$')


def parse_line(line):
    m = _RE.match(line.strip())
    if not m:
        return None
    try:
        t = dt.datetime.strptime(m.group(2), "%d/%b/%Y:%H:%M:%S %z")
    except ValueError:
        return None
    return {"ip": m.group(1), "time": t.isoformat(), "method": m.group(3),
            "path": m.group(4).split("?", 1)[0], "status": int(m.group(5)),
            "bytes": 0 if m.group(6) == "-" else int(m.group(6))}


def main():
    requests = malformed = 0
    status = Counter()
    paths = Counter()
    for line in sys.stdin:
        if not line.strip():
            continue
        d = parse_line(line)
        if d is None:
            malformed += 1
            continue
        requests += 1
        status[str(d["status"])] += 1
        paths[d["path"]] += 1
    top = paths.most_common(3)
    print(json.dumps({"requests": requests, "malformed": malformed, "status": dict(sorted(status.items())),
                      "top_paths": [[p, n] for p, n in top]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
