#!/usr/bin/env bash
# Copies images from Docker's store into the local cluster's containerd (scripts/k8s/up.sh): there is no
# registry, so pods name these images with imagePullPolicy: Never. Usage: import-image.sh IMAGE...
# An image whose Docker id is unchanged since its last import is skipped.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"
[ "$#" -gt 0 ] || { echo "usage: $0 IMAGE..." >&2; exit 2; }
ctr --address "$CTR_SOCK" version >/dev/null 2>&1 || { echo "import-image.sh: the cluster's containerd is not running; run scripts/k8s/up.sh" >&2; exit 1; }
mkdir -p "$K8S_DIR/images"
for img in "$@"; do
  id="$(docker image inspect --format '{{.Id}}' "$img")" || { echo "import-image.sh: no Docker image $img" >&2; exit 1; }
  marker="$K8S_DIR/images/$(printf '%s' "$img" | tr '/:' '__').id"
  ref="$img"; case "${ref##*/}" in *:*|*@*) ;; *) ref="$ref:latest" ;; esac
  case "$ref" in */*) ;; *) ref="library/$ref" ;; esac
  case "${ref%%/*}" in *.*|*:*|localhost) ;; *) ref="docker.io/$ref" ;; esac
  if [ "$(cat "$marker" 2>/dev/null)" = "$id" ] && k8s_ctr images ls -q | grep -x "$ref" >/dev/null; then continue; fi # no -q: an early exit would SIGPIPE ctr (pipefail)
  k8s_log "importing $img"
  docker save "$img" | k8s_ctr images import -
  echo "$id" >"$marker"
done
