#!/usr/bin/env bash
# `ruff format` over the Python client (settings: clients/python/pyproject.toml). `--check` fails on any file
# that would change (npm run format:check, part of npm test); without it, files are rewritten (npm run format).
# Uses the ruff of the client's .venv (pinned in its test extra; scripts/run-tests.sh creates it), else one on PATH.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
VENV="${SANDGYM_VENV:-$ROOT/.venv}"
RUFF="$VENV/bin/ruff"
if [ ! -x "$RUFF" ]; then
  RUFF="$(command -v ruff || true)"
  if [ -z "$RUFF" ]; then
    echo "format.sh: no ruff in $VENV (run npm run test:py once to create it) nor on PATH" >&2
    exit 2
  fi
fi
cd "$ROOT/clients/python"
if [ "${1:-}" = "--check" ]; then exec "$RUFF" format --check --quiet; fi
exec "$RUFF" format --quiet
