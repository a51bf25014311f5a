#!/usr/bin/env bash
# The Kubernetes stage of `npm test`, run last (after vitest and the Python tests): the suites that need the
# local single-node cluster (scripts/k8s/README.md) against it:
#   test/kubernetes/ (the cluster itself, `serve --driver kubernetes` over the wire, docs/DEPLOY.md and the
#   manifests' server-side dry run), server/test/sandbox/kubernetes-*.test.ts (the driver and its pod spec,
#   checked by the API server) and the driver contract on pods (driver-contract.test.ts, kubernetes only:
#   its other drivers ran in the vitest stage).
#
# Under .ci/run (SANDGYM_K8S_CI names the directory of the Kubernetes build .ci/run started in the background
# as its first step: build.log, build.pid, then build.rc with its exit status) it waits for that build (it
# fails, never skips, when the build failed), brings the cluster up (.ci/run's exit trap brings it down) and
# runs the suites with SANDGYM_REQUIRE_KUBERNETES=1 and SANDGYM_KUBECONFIG set. Elsewhere it runs them
# against whatever cluster SANDGYM_KUBECONFIG (default /var/lib/sandgym-k8s/admin.kubeconfig) names: without
# one they skip, naming the missing API server, unless SANDGYM_REQUIRE_KUBERNETES=1.
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
say() { printf '[k8s stage %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [ -n "${SANDGYM_K8S_CI:-}" ]; then
  dir=$SANDGYM_K8S_CI
  say "waiting for the Kubernetes build (scripts/k8s/build.sh, started by .ci/run; log $dir/build.log)"
  # Nothing else runs now: a build still going gets normal priority back (.ci/run started it at nice 19, idle
  # I/O, in a process group of its own).
  if [ ! -s "$dir/build.rc" ] && pgid="$(cat "$dir/build.pid" 2>/dev/null)"; then
    renice -n 0 -g "$pgid" >/dev/null 2>&1 || true
    ionice -c 2 -n 4 -P "$pgid" >/dev/null 2>&1 || true
  fi
  while [ ! -s "$dir/build.rc" ]; do
    # Gone without an exit status (killed): nothing will ever write it.
    if ! kill -0 "$(cat "$dir/build.pid" 2>/dev/null || echo 0)" 2>/dev/null && [ ! -s "$dir/build.rc" ]; then
      say "the Kubernetes build is gone without an exit status:"; tail -n 40 "$dir/build.log" >&2 || true; exit 1
    fi
    sleep 5
  done
  if [ "$(cat "$dir/build.rc")" != 0 ]; then
    say "the Kubernetes build failed (exit $(cat "$dir/build.rc")):"; tail -n 60 "$dir/build.log" >&2; exit 1
  fi
  say "build done (waited $(( $(date +%s) - t0 )) s); bringing the cluster up"
  touch "$dir/up" # from here on .ci/run's exit trap runs scripts/k8s/down.sh
  SANDGYM_KUBECONFIG="$(bash scripts/k8s/up.sh | tail -n1)"
  export SANDGYM_KUBECONFIG SANDGYM_REQUIRE_KUBERNETES=1
  say "cluster up $(( $(date +%s) - t0 )) s into the stage"
fi

t1=$(date +%s)
SANDGYM_CONTRACT_DRIVERS=kubernetes npx vitest run test/kubernetes/ server/test/sandbox/kubernetes- server/test/sandbox/driver-contract.test.ts
say "suites took $(( $(date +%s) - t1 )) s; the stage $(( $(date +%s) - t0 )) s"
