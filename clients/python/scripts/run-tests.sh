#!/usr/bin/env bash
# Runs the Python client's linters and test suite (called by `npm test`).
# Creates .venv at the repo root when missing, (re)installs ./clients/python[test,gymnasium] when
# pyproject.toml or the sources changed since the last install, runs `ruff check` (src and tests) and
# `mypy --strict` (src) with the versions pinned in the test extra, then pytest (arguments go to pytest).
# The tests start the real server CLI (`node bin/sandgym.js`, or $SANDGYM_NODE instead of `node`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
VENV="${SANDGYM_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating $VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi

# Staleness key: the package's metadata and sources (the generated error map included).
stamp_file="$VENV/.sandgym-client-stamp"
stamp="$(cd clients/python && find pyproject.toml README.md src -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 \
  | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp_file" ] || [ "$(cat "$stamp_file")" != "$stamp" ] || ! "$VENV/bin/python" -c 'import sandgym, pytest, gymnasium, mypy, ruff' >/dev/null 2>&1; then
  echo "==> installing clients/python[test,gymnasium] into $VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "./clients/python[test,gymnasium]"
  echo "$stamp" > "$stamp_file"
fi

# Lint first: it fails in seconds where the tests take minutes. Settings are in pyproject.toml.
echo "==> ruff check clients/python"
(cd clients/python && "$VENV/bin/ruff" check --quiet)
echo "==> mypy --strict clients/python/src"
(cd clients/python && "$VENV/bin/mypy" --strict src)

echo "==> pytest clients/python/tests"
set +e
"$VENV/bin/python" -m pytest clients/python/tests -q -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
