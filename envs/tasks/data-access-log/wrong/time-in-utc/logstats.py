# WRONG: the time is converted to UTC instead of keeping the line's own offset.
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
    return {"ip": m.group(1), "time": t.astimezone(dt.timezone.utc).isoformat(), "method": m.group(3),
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
    top = sorted(paths.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    print(json.dumps({"requests": requests, "malformed": malformed, "status": dict(sorted(status.items())),
                      "top_paths": [[p, n] for p, n in top]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
