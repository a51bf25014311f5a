#!/usr/bin/env bash
# Starts dockerd when no daemon answers; idempotent. dockerd is not running at boot here.
set -euo pipefail
if docker info >/dev/null 2>&1; then echo "dockerd already running"; exit 0; fi
if ! command -v dockerd >/dev/null 2>&1; then echo "dockerd not installed" >&2; exit 1; fi
mkdir -p /var/log
nohup dockerd >>/var/log/sandgym-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then echo "dockerd started"; exit 0; fi
  sleep 1
done
echo "dockerd did not start; last log lines:" >&2
tail -n 30 /var/log/sandgym-dockerd.log >&2
exit 1
