#!/usr/bin/env bash
# Registers gVisor's runsc as the Docker runtime `runsc` (docs/SANDBOX.md, "gVisor (runsc)"); idempotent.
# Merges into /etc/docker/daemon.json (other keys kept) and, when a daemon is running, reloads it with
# SIGHUP: runtimes are live-reloadable, so containers running on it (others' tests) are not touched.
# Debian's runsc (0.0~20221219) works here only on the ptrace platform (systrap is unknown to that
# version, KVM is absent) and only without its own network stack (sandboxes have no network anyway).
set -euo pipefail
RUNSC="${RUNSC:-$(command -v runsc || true)}"
if [ -z "$RUNSC" ]; then echo "runsc not installed (apt-get install runsc)" >&2; exit 1; fi
CONF="${DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}"
mkdir -p "$(dirname "$CONF")"
changed="$(python3 - "$CONF" "$RUNSC" <<'EOF'
import json, os, sys
conf, runsc = sys.argv[1], sys.argv[2]
cur = {}
if os.path.exists(conf) and os.path.getsize(conf) > 0:
    with open(conf) as f:
        cur = json.load(f)
want = {"path": runsc, "runtimeArgs": ["--platform=ptrace", "--network=none"]}
if cur.get("runtimes", {}).get("runsc") == want:
    print("no")
else:
    cur.setdefault("runtimes", {})["runsc"] = want
    tmp = conf + ".tmp"
    with open(tmp, "w") as f:
        json.dump(cur, f, indent=2)
        f.write("\n")
    os.replace(tmp, conf)
    print("yes")
EOF
)"
if ! docker info >/dev/null 2>&1; then echo "daemon.json updated (changed: $changed); no daemon running"; exit 0; fi
if docker info --format '{{json .Runtimes}}' | grep -q '"runsc"' && [ "$changed" = no ]; then echo "runsc already registered"; exit 0; fi
pid="$(cat /var/run/docker.pid 2>/dev/null || true)"
if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then echo "dockerd pid not found (/var/run/docker.pid)" >&2; exit 1; fi
kill -HUP "$pid"
for _ in $(seq 1 50); do
  if docker info --format '{{json .Runtimes}}' | grep -q '"runsc"'; then echo "runsc registered with dockerd (pid $pid)"; exit 0; fi
  sleep 0.2
done
echo "dockerd did not pick up the runsc runtime after SIGHUP" >&2
exit 1
