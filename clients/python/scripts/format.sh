#!/usr/bin/env bash
# `ruff format` over the Python client (settings: clients/python/pyproject.toml). `--check` fails on any file
# that would change (npm run format:check, part of npm test); without it, files are rewritten (npm run format).
# Uses the ruff of the client's .venv (pinned in its test extra), installing that pin there first when it is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
VENV="${SANDGYM_VENV:-$ROOT/.venv}"
RUFF="$VENV/bin/ruff"
if [ ! -x "$RUFF" ]; then
  # A fresh clone runs this (npm test's format:check) before run-tests.sh has made the venv: make it here and install
  # the ruff pinned in the test extra, so the check uses the same version as the lint (run-tests.sh adds the rest).
  pin="$(grep -o '"ruff==[^"]*"' "$ROOT/clients/python/pyproject.toml" | tr -d '"')"
  [ -n "$pin" ] || { echo "format.sh: no ruff pin in clients/python/pyproject.toml" >&2; exit 2; }
  if [ ! -x "$VENV/bin/python" ]; then "${PYTHON:-python3}" -m venv "$VENV"; fi
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$pin" >&2
fi
cd "$ROOT/clients/python"
if [ "${1:-}" = "--check" ]; then exec "$RUFF" format --check --quiet; fi
exec "$RUFF" format --quiet
