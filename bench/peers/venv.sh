#!/usr/bin/env bash
# Makes (once) and prints the path of the venv that runs the peer benchmark (bench/peers/): openenv-core
# (OpenEnv's server, pinned in bench/peers/requirements.txt), uvicorn and websockets (its dependencies; the
# load generator and the Python echo floor use the same websockets). It lives outside the work tree in a
# machine-wide cache keyed by the requirements file and the Python version, like the TRL venv
# (clients/python/scripts/trl-venv.sh): a fresh clone on the same machine reuses it. A venv is complete only
# when its marker exists (an interrupted build is removed and redone); the marker holds the build's seconds.
# Usage: bash bench/peers/venv.sh   (prints the venv directory on the last line of stdout)
#        bash bench/peers/venv.sh --path   (prints where the venv is or would be, builds nothing)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python3}"
REQ="$HERE/requirements.txt"
CACHE="${SANDGYM_CACHE_DIR:-/var/cache/sandgym}"
key="$( (cat "$REQ"; "$PY" -c 'import sys; print(sys.version_info[:2])') | sha256sum | cut -c1-12)"
VENV="${SANDGYM_PEERS_VENV:-$CACHE/venv-peers-$key}"
if [ "${1:-}" = "--path" ]; then echo "$VENV"; exit 0; fi
marker="$VENV/.sandgym-complete"
if [ ! -f "$marker" ]; then
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  echo "==> creating $VENV (openenv-core)" >&2
  start=$(date +%s)
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQ" >&2
  echo "$(( $(date +%s) - start ))" > "$marker"
  echo "==> $VENV ready in $(cat "$marker") s" >&2
fi
echo "$VENV"
