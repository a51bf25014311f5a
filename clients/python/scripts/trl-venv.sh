#!/usr/bin/env bash
# Makes (once) and prints the path of the venv that runs the Python client's TRL tests
# (clients/python/tests/trl): torch, transformers, trl ... pinned in clients/python/requirements-trl.txt.
# The stack is 5.9 GB installed (PyPI's torch needs the CUDA runtime wheels even on CPU) and took 635 s
# to install cold on the 2-core machine under load, so the venv lives outside the work tree, in a machine-wide
# cache keyed by the requirements file and the Python version: a fresh clone on the same machine reuses
# it; a fresh machine builds it once. A venv is complete only when its marker exists (an interrupted
# build is removed and redone). The sandgym client itself is installed into it by run-tests.sh.
# Usage: bash clients/python/scripts/trl-venv.sh   (prints the venv directory on the last line of stdout)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
PY="${PYTHON:-python3}"
REQ="$ROOT/clients/python/requirements-trl.txt"
CACHE="${SANDGYM_CACHE_DIR:-/var/cache/sandgym}"
key="$( (cat "$REQ"; "$PY" -c 'import sys; print(sys.version_info[:2])') | sha256sum | cut -c1-12)"
VENV="${SANDGYM_TRL_VENV:-$CACHE/venv-trl-$key}"
marker="$VENV/.sandgym-complete"
if [ ! -f "$marker" ]; then
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  echo "==> creating $VENV (torch, transformers, trl: several GB, minutes)" >&2
  start=$(date +%s)
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQ" >&2
  echo "$(( $(date +%s) - start ))" > "$marker"
  echo "==> $VENV ready in $(cat "$marker") s" >&2
fi
echo "$VENV"
