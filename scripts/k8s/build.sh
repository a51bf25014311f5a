#!/usr/bin/env bash
# Builds the Kubernetes binaries the local single-node cluster needs (scripts/k8s/up.sh) from the
# k8s.io/kubernetes source on the Go module proxy: there is no container registry or release download here.
# Cached per version under ~/.cache/sandgym/bin/kubernetes-<version>/ (idempotent: a complete cache is a
# no-op). Each binary is built into <cache>.partial/ and the directory is renamed into place once all are
# there, so an interrupted build never leaves a half-filled cache, and the next run resumes with the
# binaries that were done (a cold build takes 11 min on 2 idle cores, well over 40 under heavy load).
#
# The module zip has no staging/ and no vendor/: the go.mod's `k8s.io/X => ./staging/src/k8s.io/X` replace
# lines are dropped and the `k8s.io/X v0.0.0` requirements point at the published v0.<minor>.<patch> modules.
# Prints the binary dir on its last line. SANDGYM_K8S_BUILD_TIMES=FILE appends "binary seconds" lines.
set -euo pipefail

K8S_VERSION="${SANDGYM_K8S_VERSION:-v1.37.2}"
BIN_DIR="${SANDGYM_K8S_BIN_DIR:-$HOME/.cache/sandgym/bin/kubernetes-$K8S_VERSION}"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy)

complete() { for b in "${BINARIES[@]}"; do [ -x "$BIN_DIR/$b" ] || return 1; done; }
if complete; then echo "$BIN_DIR"; exit 0; fi

command -v go >/dev/null 2>&1 || { echo "build.sh: go is not installed (any go: Debian's golang-go will do)" >&2; exit 1; }
# k8s.io/kubernetes v1.37 needs go 1.26: a go >= 1.21 fetches that toolchain through the module proxy itself
# (GOTOOLCHAIN=auto). An older one (Debian 12's golang-go is 1.19) cannot, so we download the toolchain module
# with it (a plain module download), cache it under ~/.cache/sandgym and build with that go.
GO_TOOLCHAIN_VERSION=go1.26.8
if ! command go version | grep -Eq 'go1\.(2[1-9]|[3-9][0-9])'; then
  go_tc="$HOME/.cache/sandgym/$GO_TOOLCHAIN_VERSION"
  if [ ! -x "$go_tc/bin/go" ]; then
    tc_tmp="$(mktemp -d)"
    tc_src="$(cd "$tc_tmp" && command go mod init tc >/dev/null 2>&1 && GOFLAGS=-mod=mod command go mod download -json "golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN_VERSION.linux-amd64" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
    rm -rf "$tc_tmp" "$go_tc" && cp -r "$tc_src" "$go_tc.tmp" && chmod -R u+w "$go_tc.tmp" && chmod +x "$go_tc.tmp"/bin/* "$go_tc.tmp"/pkg/tool/*/*
    mv "$go_tc.tmp" "$go_tc"
  fi
  go() { "$go_tc/bin/go" "$@"; }
  export GOTOOLCHAIN=local
fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false"
# SANDGYM_K8S_BUILD_JOBS=N builds at most N packages at once (go build -p; default: one per core). .ci/run
# sets 1 and runs this under nice, so the build takes the CPU the rest of CI leaves idle.
jobs=()
[ -n "${SANDGYM_K8S_BUILD_JOBS:-}" ] && jobs=(-p "$SANDGYM_K8S_BUILD_JOBS")
minor="${K8S_VERSION#v1.}"; staging_version="v0.$minor" # v1.37.2 -> v0.37.2
major=1; minor_only="${minor%%.*}"

work="$(mktemp -d "${TMPDIR:-/tmp}/sandgym-k8s-build.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
src_dir="$(cd "$work" && go mod init tmp >/dev/null 2>&1 && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
cp -r "$src_dir" "$work/src" && chmod -R u+w "$work/src"
cd "$work/src"
rm -rf vendor go.work go.work.sum
# Drop the ./staging replaces and require the published staging modules instead.
sed -i -E '/^[[:space:]]*k8s\.io\/[^ ]+ => \.\/staging\//d' go.mod
sed -i -E "s#^([[:space:]]*k8s\.io/[^ ]+) v0\.0\.0\$#\1 $staging_version#" go.mod
sed -i -E '/^replace \($/,/^\)$/{/^replace \($/{N;/\n\)$/d}}' go.mod

ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor_only -X $pkg.gitTreeState=clean"
done
partial="$BIN_DIR.partial"
mkdir -p "$partial"
for b in "${BINARIES[@]}"; do
  [ -x "$partial/$b" ] && continue
  start=$(date +%s)
  echo "build.sh: building $b $K8S_VERSION" >&2
  CGO_ENABLED=0 go build "${jobs[@]}" -mod=mod -trimpath -ldflags "$ldflags" -o "$partial/$b.tmp" "./cmd/$b"
  mv "$partial/$b.tmp" "$partial/$b"
  secs=$(( $(date +%s) - start ))
  echo "build.sh: $b built in ${secs}s" >&2
  [ -n "${SANDGYM_K8S_BUILD_TIMES:-}" ] && echo "$b $secs" >>"$SANDGYM_K8S_BUILD_TIMES"
done
rm -rf "$BIN_DIR" && mv "$partial" "$BIN_DIR"
echo "$BIN_DIR"
