#!/usr/bin/env bash
# Builds the sandgym server's container image offline (docs/DEPLOY.md): no registry and no `FROM`.
# Like the sandbox images (server/src/sandbox/images/build.ts) it is a root filesystem assembled on
# this machine and `docker import`ed, labelled with a content hash so an unchanged checkout is not
# rebuilt, its finished root filesystem cached as a tar under $SANDGYM_CACHE_DIR.
#
# What goes in (a "distroless" image: no shell, no package manager, nothing the server does not run):
#   - this machine's Node (>= 20) binary, stripped, and exactly the shared libraries `ldd` names for
#     it and for the native addons of the installed dependencies;
#   - the package as npm ships it (`npm pack` of a staging copy of the checkout, as
#     test/package/package.test.ts makes it), installed at /app with its production dependencies
#     from package-lock.json (`npm ci --omit=dev --ignore-scripts`: no install script runs);
#   - /etc/passwd and /etc/group naming the non-root user sandgym (10001), /tmp for an emptyDir.
# Entrypoint `node /app/bin/sandgym.js`, default command `serve --host 0.0.0.0`, user 10001.
#
# Usage: scripts/build-server-image.sh [--force] [--tag NAME]
#   prints the image name, its size, the content hash and the seconds taken; exits 0 when the image
#   is up to date. Needs docker, node/npm (npm reaches the npm registry or a warm npm cache), tar.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSION=$(node -p "require('$REPO/package.json').version")
TAG="sandgym/server:$VERSION"
FORCE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force) FORCE=1 ;;
    --tag) TAG="${2:?--tag needs a name}"; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "build-server-image: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
CACHE_DIR=${SANDGYM_CACHE_DIR:-/var/cache/sandgym}
LABEL=sandgym.server-image
# The non-root user the server runs as (the manifests' runAsUser says the same).
APP_UID=10001
NODE_BIN=$(readlink -f "$(command -v node)")
T0=$(date +%s.%N)
log() { echo "[server-image] $(date +%T) $*" >&2; }
elapsed() { echo "$(date +%s.%N) - $T0" | bc 2>/dev/null || awk "BEGIN{print $(date +%s.%N) - $T0}"; }

NODE_MAJOR=$("$NODE_BIN" -p 'process.versions.node.split(".")[0]')
if [ "$NODE_MAJOR" -lt 20 ]; then echo "build-server-image: node $NODE_MAJOR at $NODE_BIN; the server needs >= 20" >&2; exit 1; fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sandgym-server-image-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
STAGE=$WORK/stage
mkdir -p "$STAGE"

# What the build needs from the checkout (the same list and exclusions as the package test).
STAGED=(package.json package-lock.json tsconfig.json tsconfig.build.json README.md CHANGELOG.md bin scripts docs protocol sandbox-contract envs server/src clients/ts)
tar -C "$REPO" --exclude=node_modules --exclude=dist --exclude=test --exclude=.venv --exclude=__pycache__ -cf - "${STAGED[@]}" | tar -C "$STAGE" -xf -

# The content hash: every staged file, this script, the Node binary. Same inputs, same image.
HASH=$( { (cd "$STAGE" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); sha256sum "$0" "$NODE_BIN"; } | sha256sum | cut -c1-16)
log "checkout staged, content hash $HASH"
CURRENT=$(docker image inspect --format "{{ index .Config.Labels \"$LABEL\" }}" "$TAG" 2>/dev/null || true)
report() {
  local size
  size=$(docker image inspect --format '{{.Size}}' "$TAG")
  echo "image=$TAG hash=$HASH status=$1 size_bytes=$size seconds=$(elapsed)"
}
if [ "$FORCE" = 0 ] && [ "$CURRENT" = "$HASH" ]; then
  report up-to-date
  exit 0
fi

import_tar() {
  docker import \
    --change "LABEL $LABEL=$HASH" \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin NODE_ENV=production' \
    --change "USER $APP_UID:$APP_UID" \
    --change 'WORKDIR /app' \
    --change 'EXPOSE 8765' \
    --change 'ENTRYPOINT ["/usr/local/bin/node", "/app/bin/sandgym.js"]' \
    --change 'CMD ["serve", "--host", "0.0.0.0"]' \
    - "$TAG" <"$1" >/dev/null
  docker tag "$TAG" "${TAG%%:*}:$VERSION-$HASH"
  # Older content tags of this image would pile up (~200 MB each): untag them.
  docker images --format '{{.Repository}}:{{.Tag}}' "${TAG%%:*}" | grep -E ":$VERSION-[0-9a-f]{16}\$" | grep -v ":$VERSION-$HASH\$" | xargs -r docker rmi >/dev/null 2>&1 || true
}

mkdir -p "$CACHE_DIR"
CACHE_PREFIX="$CACHE_DIR/$(printf '%s' "${TAG%%:*}" | tr '/:' '__')_$VERSION"
CACHED="$CACHE_PREFIX-$HASH.tar"
if [ "$FORCE" = 0 ] && [ -f "$CACHED" ]; then
  import_tar "$CACHED"
  report imported-from-cache
  exit 0
fi

log "building the package (scripts/build.mjs) and packing it"
ln -s "$REPO/node_modules" "$STAGE/node_modules"
(cd "$STAGE" && node scripts/build.mjs >"$WORK/build.log" 2>&1) || { cat "$WORK/build.log" >&2; exit 1; }
TGZ=$(cd "$STAGE" && npm pack --ignore-scripts --silent --pack-destination "$WORK" | tail -n 1)

ROOT=$WORK/rootfs
mkdir -p "$ROOT/app" "$ROOT/usr/local/bin" "$ROOT/etc" "$ROOT/tmp" "$ROOT/proc" "$ROOT/sys" "$ROOT/dev"
tar -xzf "$WORK/$TGZ" -C "$ROOT/app" --strip-components=1
cp "$STAGE/package-lock.json" "$ROOT/app/"
log "installing the production dependencies from package-lock.json"
(cd "$ROOT/app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error >"$WORK/npm.log" 2>&1) || { cat "$WORK/npm.log" >&2; exit 1; }

cp "$NODE_BIN" "$ROOT/usr/local/bin/node"
strip --strip-all "$ROOT/usr/local/bin/node" 2>/dev/null || true
# The shared libraries the loader will look for, at the paths ldd resolved them to on this machine.
{
  ldd "$NODE_BIN"
  find "$ROOT/app/node_modules" -name '*.node' -type f -print0 | xargs -0 -r -n1 ldd 2>/dev/null || true
} | awk '/=> \// {print $3} /^[ \t]*\/[^ ]+ \(/ {print $1}' | sort -u | while read -r lib; do
  mkdir -p "$ROOT$(dirname "$lib")"
  cp -L "$lib" "$ROOT$lib"
done
cat >"$ROOT/etc/passwd" <<EOF
root:x:0:0:root:/root:/sbin/nologin
sandgym:x:$APP_UID:$APP_UID:sandgym server:/tmp:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
EOF
cat >"$ROOT/etc/group" <<EOF
root:x:0:
sandgym:x:$APP_UID:
nogroup:x:65534:
EOF
echo 'hosts: files dns' >"$ROOT/etc/nsswitch.conf"
chmod 1777 "$ROOT/tmp"
# Everything read-only to the server's user: it writes only to /tmp (an emptyDir in the manifests).
chmod -R go-w "$ROOT/app"

log "root filesystem assembled; importing"
tar --numeric-owner --owner=0 --group=0 -C "$ROOT" -cf "$CACHED.partial" .
mv "$CACHED.partial" "$CACHED"
# Drop cached root filesystems of older builds.
find "$CACHE_DIR" -maxdepth 1 -name "$(basename "$CACHE_PREFIX")-*.tar" ! -name "$(basename "$CACHED")" -delete
import_tar "$CACHED"
# The image runs: Node loads with only the copied libraries, and the CLI with only the installed tree.
docker run --rm --network none "$TAG" --version >/dev/null || { echo "build-server-image: $TAG does not run" >&2; exit 1; }
log "node $("$NODE_BIN" --version), package $TGZ"
report built
