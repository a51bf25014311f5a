#!/usr/bin/env bash
# `npm run bench:peers [-- --quick]`: builds (once, cached) the peer venv with openenv-core, then runs the
# peer benchmark in it (bench/peers/peers_bench.py: sandgym vs OpenEnv with raw echo floors, one load
# generator). Results: bench/results/peers.json and a markdown table on stdout.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$(bash "$HERE/venv.sh" | tail -n 1)"
cd "$HERE/../.."
exec "$VENV/bin/python" bench/peers/peers_bench.py "$@"
