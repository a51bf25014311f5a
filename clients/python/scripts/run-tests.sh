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
"$VENV/bin/python" -m pytest clients/python/tests -q -p no:cacheprovider --ignore=clients/python/tests/trl "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi

# The TRL tests (tests/trl: GRPOTrainer against a live server) need torch, transformers and trl, which live in
# the cached venv of scripts/trl-venv.sh (.ci/run makes it and sets SANDGYM_TRL_VENV and SANDGYM_REQUIRE_TRL=1).
# They run on a full run (no pytest arguments) when that venv is given or required.
TRL_VENV="${SANDGYM_TRL_VENV:-}"
if [ -z "$TRL_VENV" ] && [ "${SANDGYM_REQUIRE_TRL:-}" = "1" ]; then
  TRL_VENV="$(bash clients/python/scripts/trl-venv.sh | tail -n1)"
fi
if [ "$#" -eq 0 ] && [ -n "$TRL_VENV" ]; then
  trl_stamp_file="$TRL_VENV/.sandgym-client-stamp"
  if [ ! -f "$trl_stamp_file" ] || [ "$(cat "$trl_stamp_file")" != "$stamp" ]; then
    "$TRL_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall ./clients/python
    echo "$stamp" > "$trl_stamp_file"
  fi
  echo "==> pytest clients/python/tests/trl (with $TRL_VENV)"
  set +e
  HF_HUB_OFFLINE=1 TRL_EXPERIMENTAL_SILENCE=1 "$TRL_VENV/bin/python" -m pytest clients/python/tests/trl -q -p no:cacheprovider
  trl_rc=$?
  set -e
  if [ "$trl_rc" -ne 0 ]; then rc=$trl_rc; fi
elif [ "$#" -eq 0 ]; then
  echo "==> clients/python/tests/trl not run: no TRL venv (bash clients/python/scripts/trl-venv.sh makes one; SANDGYM_TRL_VENV=<it> runs them)"
fi
exit "$rc"
