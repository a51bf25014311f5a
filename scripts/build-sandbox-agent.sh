#!/usr/bin/env bash
# Builds the binary judge agent (sandbox-agent/, Go standard library only, static: CGO off) into
# sandbox-agent/dist/sandgym-agent, which the Docker and bubblewrap drivers bind-mount read-only into
# every sandbox (server/src/sandbox/channel/agent-binary.ts). Cached by a hash of the sources and the Go
# version: an unchanged tree is a no-op. Needs Go >= 1.19 (nothing is downloaded: no module dependencies).
# Prints the binary's path.
set -euo pipefail
cd "$(dirname "$0")/../sandbox-agent"
GO="${GO:-go}"
if ! command -v "$GO" >/dev/null 2>&1; then
  # .ci/run's MinIO build leaves a newer toolchain here on machines whose go is too old or missing.
  for g in "$HOME"/.cache/sandgym/go*/bin/go; do [ -x "$g" ] && GO="$g"; done
fi
command -v "$GO" >/dev/null 2>&1 || { echo "build-sandbox-agent: no go toolchain (apt-get install golang-go)" >&2; exit 1; }
hash="$( { "$GO" version; cat go.mod ./*.go ./*.s; } | sha256sum | cut -d' ' -f1)"
out=dist/sandgym-agent
if [ -x "$out" ] && [ "$(cat dist/.source-hash 2>/dev/null)" = "$hash" ]; then
  echo "$PWD/$out"
  exit 0
fi
mkdir -p dist
CGO_ENABLED=0 GOOS=linux GOFLAGS=-buildvcs=false GOTOOLCHAIN=local "$GO" build -trimpath -ldflags='-s -w' -o "$out.tmp" .
chmod 0755 "$out.tmp"
mv "$out.tmp" "$out"
echo "$hash" >dist/.source-hash
echo "$PWD/$out"
