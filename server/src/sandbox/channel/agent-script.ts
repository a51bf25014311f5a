// The in-sandbox half of the command channel: one persistent POSIX sh process per sandbox, reached over
// a single stream (docker attach / exec, or the bwrap child's stdio). It must run on busybox ash and on
// Debian's dash with no network and nothing but /bin/sh, setsid, head, mkfifo, dd, rm, sleep and kill.
//
// Why a shell and not a binary agent: every image we care about has /bin/sh, and the notes measured a
// persistent shell at ~0.35 ms per round trip versus 115-155 ms for `docker exec`.
//
// Two shell processes: the main loop reads host lines (so kill requests are handled while a command
// runs) and a persistent job runner, fed through a FIFO, that starts each command in its own session
// (`setsid`: without a tty, `set -m` job control is refused by ash and dash), waits for it and reports.
// A persistent runner saves one fork per command over a subshell per command. Per command: one fork
// for the command (+ the setsid exec), and one `head` per non-empty output stream.
//
// Protocol (host -> agent): line 1 is "<nonce> <lease_ticks>". Every later line is "<nonce> <call>"; the
// call is shell code built by the host from the functions below (the host quotes every argument), or
// "<nonce> f <runner call>", forwarded verbatim to the runner. Lines without the nonce are ignored. Raw
// payloads follow an `a` call as exactly N bytes, read by `dd iflag=fullblock` (busybox `head -c`
// over-reads a pipe through stdio, so it cannot be used here).
//
// Protocol (agent -> host); every frame is "\n<nonce> <fields>\n", one writer (the runner) at a time:
//   "<nonce> h 1 <pid>"          ready (written by the main loop before the runner exists)
//   "<nonce> o <id>" + raw bytes  stdout of a finished command (at most cap bytes, as is)
//   "<nonce> e <id>" + raw bytes  stderr
//   "<nonce> x <id> <status>"     end of the command; status from `wait`, held only in shell memory
// Output is raw: the host takes everything up to the next "\n<nonce> " as payload, so output cannot
// end a payload or forge a frame without the nonce. The nonce is an unexported shell variable: it is
// not in any command's environment, argv or files, and command output never reaches the channel
// except between frames the runner writes after the command ended.
//
// Lease: the host writes an incrementing counter with `l` every few seconds; a watchdog checks it every
// 5 s and kills the whole sandbox after `lease_ticks` checks without a change. So a sandbox whose server
// vanished dies by itself even if no server ever restarts (and in attach mode also at once on stdin EOF).
//
// `ka` (kill all) is guarded by the name of pid 1 so that this script, if ever run outside a fresh pid
// namespace, cannot `kill -1` a host.

export const AGENT_VERSION = 1;

/** Where the agent keeps its per-command files (a tmpfs in both drivers). */
export const AGENT_STATE_DIR = '/run/sandgym';

export const AGENT_SCRIPT = String.raw`
d=$1; m=$2
umask 077
mkdir -p "$d" 2>/dev/null
IFS=' ' read -r N T || exit 0
[ -n "$N" ] || exit 0
umask 022
# Fail fast with a reason (it ends up in the creation error) instead of hanging every command later.
for t in setsid mkfifo dd head rm sleep; do
  command -v "$t" >/dev/null 2>&1 || { echo "sandgym-agent: required tool '$t' not found in the image" >&2; exit 112; }
done
printf '0\n' >"$d/lease" || { echo "sandgym-agent: state directory $d is not writable" >&2; exit 111; }
mkfifo -m 600 "$d/q" || { echo "sandgym-agent: cannot create the runner FIFO in $d" >&2; exit 111; }
cd / || exit 111
# ka: kill every process but this one; status 1 (and nothing killed) outside a sandbox's pid namespace.
ka() {
  c=; IFS= read -r c </proc/1/comm 2>/dev/null
  case $c in docker-init|tini|bwrap|sandgym-init) kill -s KILL -- -1 2>/dev/null || kill -s KILL -1 2>/dev/null;; *) return 1;; esac
  return 0
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
s() { printf "$3" >"$d/c.$1"; printf 'j %s %s\n' "$1" "$2" >&4; }
a() { dd bs="$2" count=1 iflag=fullblock 2>/dev/null >>"$d/$3.$1"; }
r() { printf 'j %s %s\n' "$1" "$2" >&4; }
k() {
  p=; IFS= read -r p <"$d/p.$1" 2>/dev/null || return 0
  [ -n "$p" ] && { kill -s "$2" -- "-$p" 2>/dev/null || kill -s "$2" "-$p" 2>/dev/null; }
  return 0
}
# Job runner: reads runner calls from the FIFO (its fd 3, a dup of fd 4), one command at a time.
R() { while IFS= read -r q <&3; do eval "$q"; done; }
rs() { R 3<&4 4<&- </dev/null & rp=$!; }
# z: after kill-all, reap the killed runner and start a new one (calls queued in the FIFO meanwhile
# wait there).
z() { if ka; then wait "$rp" 2>/dev/null; rs; fi; wd </dev/null >/dev/null 2>&1 4<&- & }
# j ID CAP: run the uploaded script $d/c.ID in its own session, wait, report.
j() {
  i=/dev/null; [ -f "$d/i.$1" ] && i="$d/i.$1"
  setsid sh "$d/c.$1" <"$i" >"$d/o.$1" 2>"$d/e.$1" 3<&- &
  p=$!; printf '%s\n' "$p" >"$d/p.$1"
  wait "$p"; em "$1" "$2" $? "$i"
}
# jx ID CAP CWD EXPORTS ARGV...: fast path for argv commands without a script file or an extra sh:
# the fork for '&' is the subshell, which applies cwd and exports and execs setsid.
jx() {
  n=$1; c=$2; w=$3; v=$4; shift 4
  i=/dev/null; [ -f "$d/i.$n" ] && i="$d/i.$n"
  ( cd "$w" || exit 126; eval "$v"; exec setsid "$@" ) <"$i" >"$d/o.$n" 2>"$d/e.$n" 3<&- &
  p=$!; printf '%s\n' "$p" >"$d/p.$n"
  wait "$p"; em "$n" "$c" $? "$i"
}
# em ID CAP STATUS STDIN: emit output (raw, capped) and the status.
em() {
  if [ -s "$d/o.$1" ]; then printf '\n%s o %s\n' "$N" "$1"; head -c "$2" "$d/o.$1"; fi
  if [ -s "$d/e.$1" ]; then printf '\n%s e %s\n' "$N" "$1"; head -c "$2" "$d/e.$1"; fi
  printf '\n%s x %s %s\n' "$N" "$1" "$3"
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
printf '\n%s h 1 %s\n' "$N" "$$"
# Read-write open: never blocks, and the FIFO always has a reader (this loop never reads it), so a
# write while the runner is being restarted waits in the pipe instead of raising SIGPIPE here.
# The path is removed at once and commands never inherit fds 3/4: a command that could write to the
# FIFO could make the runner (which knows the nonce) run its code.
exec 4<>"$d/q"
rm -f "$d/q"
rs
while IFS= read -r q; do
  case $q in "$N f "*) printf '%s\n' "${'$'}{q#"$N f "}" >&4 ;; "$N "*) eval "${'$'}{q#* }" ;; esac
done
[ "$m" = attach ] && ka
exit 0
`;
