// The judge's shell script that grades a Go repository task in its grading sandbox (repo-grade-go.ts; docs/TASKS.md,
// "Go repository tasks"). A module of its own, importing nothing, so repo-grade.ts can put it into the grader version.
//
// Run as the judge (cwd the judge's grading dir; the frame nonce on stdin). $1 judge dir, $2 limit (s) per phase, $3 the
// grading tree's directory (created here, by the judge), $4 the agent's scratch directory, $5 the judge's directory of
// test binaries. $1/packages: one line per test package, "<index> <dir> <import path> <-test.run regex>".
//  1. As the JUDGE, with an empty environment of its own (GOPROXY=off, GOFLAGS=-mod=mod, GOTOOLCHAIN=local, GOWORK=off,
//     GOENV=off, CGO_ENABLED=0): `go test -c` of each package. Compiling runs no submitted code, so its exit status is
//     the judge's own: a failure is the submission's build failure.
//  2. As the AGENT UID, each test binary with -test.v=test2json, its stdout and stderr into a pipe read by the judge
//     (append-only for the agent: nothing written can be taken back), every agent process killed before the status
//     is written.
//  3. As the judge, the toolchain's test2json over what the binary wrote; the events are framed back.
/**
 * Kills every process of the agent uid (as that uid: kill(-1) reaches only its own processes and never the caller),
 * until none is left to signal (at most 20 rounds: a process forking while it is killed is caught by the next round;
 * zombies answer too, so the bound ends the loop). A shell function for both grade scripts (repo-grade.ts too). It
 * uses the shell's builtin `kill` through `sh -c`: `nsenter ... -- kill` needs a kill *program*, which the slim
 * images (sandgym/python:1 and the environments built on it) do not have, so that line used to fail silently and
 * left the agent's processes running while the verdict was read.
 */
export const KILL_AGENT_SH = `killagent() { k=0; while [ "$k" -lt 20 ] && nsenter -S "$U" -G "$U" -- sh -c 'kill -9 -1' 2>/dev/null; do k=$((k + 1)); done; }`;

export const GO_GRADE_SH = `set -u
${KILL_AGENT_SH}
IFS= read -r nonce || exit 97
jroot=$1; limit=$2; tree=$3; scratch=$4; bindir=$5
G=/usr/local/go
frame() { printf '\\n%s:%s\\n' "$nonce" "$1"; }
infra() { frame preflight:failed; frame log:begin; printf '%s' "$1" | base64 | tr -d '\\n'; frame log:end; frame done; exit 0; }
case "\${SANDGYM_AGENT_UID:-}" in ''|0|*[!0-9]*) infra 'no agent uid (SANDGYM_AGENT_UID) in the judge environment';; esac
U=$SANDGYM_AGENT_UID
for c in nsenter timeout tar base64 head; do command -v "$c" >/dev/null 2>&1 || infra "$c is not installed in the grading image"; done
[ -x "$G/bin/go" ] && [ -x "$G/pkg/tool/linux_amd64/test2json" ] || infra "no Go toolchain with test2json at $G in the grading image"
umask 022
mkdir "$tree" || infra "cannot create the grading tree $tree"
tar -xf "$jroot/tree.tar" -C "$tree" --no-same-owner 2>"$jroot/out/tar.log" || infra "cannot unpack the grading tree: $(head -c 300 "$jroot/out/tar.log")"
mkdir -m 755 "$bindir" || infra "cannot create $bindir"
mkdir -m 700 "$jroot/home" "$jroot/gocache" "$jroot/gopath" || infra 'cannot create the judge go directories'
nsenter -S "$U" -G "$U" -- mkdir -m 700 "$scratch" || infra "cannot create the agent's scratch directory"
while read -r idx dir pkg run; do
  ( cd "$tree/repo/$dir" && exec timeout -k 5 "$limit" env -i "PATH=$G/bin:/usr/bin:/bin" "HOME=$jroot/home" "GOROOT=$G" "GOCACHE=$jroot/gocache" "GOPATH=$jroot/gopath" GOTOOLCHAIN=local GOPROXY=off GOSUMDB=off GOFLAGS=-mod=mod GOWORK=off GOENV=off CGO_ENABLED=0 GOTELEMETRY=off GODEBUG=installgoroot=all LANG=C.UTF-8 go test -c -vet=off -o "$bindir/$idx.test" . </dev/null ) >"$jroot/out/build-$idx.log" 2>&1
  st=$?
  if [ "$st" -ne 0 ]; then
    frame "build:$idx:$st"
    frame buildlog:begin
    head -c 6000 "$jroot/out/build-$idx.log" | base64 -w 0
    frame buildlog:end
    frame "status:0"
    frame done
    exit 0
  fi
done <"$jroot/packages"
while read -r idx dir pkg run; do
  cd "$tree/repo/$dir" || infra "no package directory $dir"
  ( ulimit -f 131072
    timeout -k 5 "$limit" nsenter -S "$U" -G "$U" -- env -i "PATH=$G/bin:/usr/bin:/bin" "HOME=$scratch" "TMPDIR=$scratch" "GOROOT=$G" "GOCACHE=$scratch/go-build" "GOPATH=$scratch/gopath" GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod GOWORK=off GOENV=off CGO_ENABLED=0 GOTELEMETRY=off LANG=C.UTF-8 "$bindir/$idx.test" -test.v=test2json -test.paniconexit0 -test.count=1 -test.run "$run" 2>&1 </dev/null
    st=$?
    # Nothing of the agent outlives its binary: a process left behind could write more into the pipe.
    killagent
    echo "$st" >"$jroot/out/status-$idx"
  ) | head -c 4194304 >"$jroot/out/run-$idx.out"
  frame "run:$idx:$(cat "$jroot/out/status-$idx" 2>/dev/null || echo none)"
  frame "events-$idx:begin"
  "$G/pkg/tool/linux_amd64/test2json" -p "$pkg" <"$jroot/out/run-$idx.out" 2>/dev/null | head -c 8388608 | base64 -w 0
  frame "events-$idx:end"
done <"$jroot/packages"
killagent
frame "status:0"
frame done
`;
