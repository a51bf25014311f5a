// The in-sandbox half of the command channel: one persistent POSIX sh process per sandbox, reached over
// a single stream (docker attach / exec, or the bwrap child's stdio). It must run on busybox ash and on
// Debian's dash with no network and nothing but /bin/sh, setsid, head, base64, dd, rm, sleep and kill.
//
// Why a shell and not a binary agent: every image we care about has /bin/sh, and the notes measured a
// persistent shell at ~0.35 ms per round trip versus 115-155 ms for `docker exec`.
//
// Protocol (host -> agent): line 1 is "<nonce> <lease_ticks>". Every later line is "<nonce> <call>"; the
// call is shell code built by the host from the functions below (the host quotes every argument). Lines
// without the nonce are ignored. Raw payloads follow an `a` call as exactly N bytes, read by `dd
// iflag=fullblock` (busybox `head -c` over-reads a pipe through stdio, so it cannot be used here).
//
// Protocol (agent -> host), one writer at a time (the host runs one command per sandbox at a time):
//   "<nonce> h 1 <pid>"          ready
//   "<nonce> o <id>" + base64     stdout of a finished command (at most cap bytes, base64 lines)
//   "<nonce> e <id>" + base64     stderr
//   "<nonce> x <id> <status>"     end of the command; status from `wait`, held only in shell memory
// Command output never reaches the channel raw: it is written to files and re-emitted as base64, so a
// command cannot print a frame. The nonce is an unexported shell variable: it is not in any command's
// environment or argv, so a command writing straight into the channel cannot forge an `x` frame either.
//
// Lease: the host writes an incrementing counter with `l` every few seconds; a watchdog checks it every
// 5 s and kills the whole sandbox after `lease_ticks` checks without a change. So a sandbox whose server
// vanished dies by itself even if no server ever restarts (and in attach mode also at once on stdin EOF).
//
// `ka` (kill all) is guarded by the name of pid 1 so that this script, if ever run outside a fresh pid
// namespace, cannot `kill -1` a host.

export const AGENT_VERSION = 1;

export const AGENT_SCRIPT = String.raw`
d=$1; m=$2
umask 077
mkdir -p "$d" 2>/dev/null
IFS=' ' read -r N T || exit 0
[ -n "$N" ] || exit 0
umask 022
# Fail fast with a reason (it ends up in the creation error) instead of hanging every command later.
for t in setsid base64 dd head rm sleep; do
  command -v "$t" >/dev/null 2>&1 || { echo "sandgym-agent: required tool '$t' not found in the image" >&2; exit 112; }
done
printf '0\n' >"$d/lease" || { echo "sandgym-agent: state directory $d is not writable" >&2; exit 111; }
cd / || exit 111
ka() {
  c=; IFS= read -r c </proc/1/comm 2>/dev/null
  case $c in docker-init|tini|bwrap|sandgym-init) kill -s KILL -- -1 2>/dev/null || kill -s KILL -1 2>/dev/null;; esac
}
wd() {
  o=; n=0
  while sleep 5; do
    v=; IFS= read -r v <"$d/lease" 2>/dev/null
    if [ "$v" = "$o" ]; then n=$((n+1)); else n=0; o=$v; fi
    if [ "$n" -ge "$T" ]; then ka; exit 0; fi
  done
}
l() { printf '%s\n' "$1" >"$d/lease"; }
s() { printf "$3" >"$d/c.$1"; j "$1" "$2"; }
a() { dd bs="$2" count=1 iflag=fullblock 2>/dev/null >>"$d/$3.$1"; }
r() { j "$1" "$2"; }
k() {
  p=; IFS= read -r p <"$d/p.$1" 2>/dev/null || return 0
  [ -n "$p" ] && { kill -s "$2" -- "-$p" 2>/dev/null || kill -s "$2" "-$p" 2>/dev/null; }
  return 0
}
z() { ka; wd </dev/null >/dev/null 2>&1 & }
# j ID CAP: run the uploaded script $d/c.ID in a job runner (the subshell), which waits and reports.
j() {
  (
    i=/dev/null; [ -f "$d/i.$1" ] && i="$d/i.$1"
    setsid sh "$d/c.$1" <"$i" >"$d/o.$1" 2>"$d/e.$1" &
    p=$!; printf '%s\n' "$p" >"$d/p.$1"
    wait "$p"; em "$1" "$2" $? "$i"
  ) </dev/null &
}
# jx ID CAP CWD ARGV...: fast path for argv commands, called inside a job-runner subshell the host
# opens (after its exports): one exec fewer than going through sh and a script file.
jx() {
  n=$1; c=$2; w=$3; shift 3
  i=/dev/null; [ -f "$d/i.$n" ] && i="$d/i.$n"
  if cd "$w" 2>"$d/e.$n"; then
    setsid "$@" <"$i" >"$d/o.$n" 2>"$d/e.$n" &
    p=$!; printf '%s\n' "$p" >"$d/p.$n"
    wait "$p"; x=$?
  else x=126; fi
  em "$n" "$c" "$x" "$i"
}
# em ID CAP STATUS STDIN: emit output (base64, capped) and the status; runs in the job runner.
em() {
  if [ -s "$d/o.$1" ]; then printf '%s o %s\n' "$N" "$1"; head -c "$2" "$d/o.$1" | base64; fi
  if [ -s "$d/e.$1" ]; then printf '%s e %s\n' "$N" "$1"; head -c "$2" "$d/e.$1" | base64; fi
  printf '%s x %s %s\n' "$N" "$1" "$3"
  # Truncate at once (builtins, no fork) so a huge output does not hold tmpfs memory until removal.
  : >"$d/o.$1"; : >"$d/e.$1"; [ "$4" = /dev/null ] || : >"$4"
  # Files of finished commands are removed 16 at a time (one rm per 16 commands, after the result
  # is out): ids at least 16 below the current one are complete, the host runs one at a time.
  if [ $(($1 % 16)) -eq 0 ]; then
    f=; n=$(($1 - 31)); while [ "$n" -le $(($1 - 16)) ]; do f="$f $d/c.$n $d/i.$n $d/o.$n $d/e.$n $d/p.$n"; n=$((n+1)); done
    rm -f $f
  fi
}
wd </dev/null >/dev/null 2>&1 &
printf '%s h 1 %s\n' "$N" "$$"
while IFS= read -r q; do
  case $q in "$N "*) eval "${'$'}{q#* }" ;; esac
done
[ "$m" = attach ] && ka
exit 0
`;
