#!/usr/bin/env bash
# Starts dockerd when no daemon answers; idempotent. dockerd is not running at boot here.
#
# Why the retry: after a crash or a hard stop with hundreds of containers, dockerd's own containerd
# spends its start-up cleaning one dead shim per container (~40 ms each, longer under load) and dockerd
# gives up with "timeout waiting for containerd to start". Each attempt cleans a share of the backlog,
# so trying again converges (measured here: 847 dead shims, up on the fifth attempt). A CI run on this
# machine once failed at this step after a 1,000-sandbox benchmark left such a backlog.
set -euo pipefail
if docker info >/dev/null 2>&1; then echo "dockerd already running"; exit 0; fi
if ! command -v dockerd >/dev/null 2>&1; then echo "dockerd not installed" >&2; exit 1; fi
mkdir -p /var/log
log=/var/log/sandgym-dockerd.log
attempts=${SANDGYM_DOCKERD_ATTEMPTS:-20}
for attempt in $(seq 1 "$attempts"); do
  # A containerd left by the previous attempt still holds its socket and state: let it exit first.
  for _ in $(seq 1 30); do
    pgrep -f '^containerd --config /var/run/docker/containerd/containerd.toml' >/dev/null 2>&1 || break
    sleep 1
  done
  setsid nohup dockerd >>"$log" 2>&1 </dev/null &
  pid=$!
  for _ in $(seq 1 120); do
    if docker info >/dev/null 2>&1; then echo "dockerd started (attempt $attempt)"; exit 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  if kill -0 "$pid" 2>/dev/null; then
    # Alive for 120 s and still not answering: stop it cleanly before the next attempt.
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  fi
  echo "dockerd attempt $attempt did not come up: $(tail -n 1 "$log")" >&2
done
echo "dockerd did not start after $attempts attempts; last log lines:" >&2
tail -n 30 "$log" >&2
exit 1
