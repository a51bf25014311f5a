// The in-sandbox half of the command channel: one persistent POSIX sh process per sandbox, reached over
// a single stream (docker attach, or the bwrap child's stdio). It must run on busybox ash and on Debian's
// dash with no network and nothing but /bin/sh, setsid, nsenter, head, mkfifo, dd, rm, sleep and kill.
//
// Two trust domains (docs/SANDBOX.md, "Threat model"). This script is the JUDGE: it runs as the sandbox's
// judge identity (uid 0 inside the sandbox, holding only CAP_SETUID, CAP_SETGID and CAP_KILL, with
// no_new_privs), owns the state directory (0700: scripts, stdin files, pid files, the lease) and the
// output directory (0711: per-command output files it creates and hands to commands as open fds), and
// knows the nonce. Every command it runs for the host drops to the AGENT uid first
// (`nsenter -S A -G A`: setresuid/setresgid + an empty group list; the kernel clears every capability),
// with oom_score_adj 1000 so the OOM killer takes agent processes before any judge process. The agent
// uid can therefore not read, write, signal or ptrace anything of the judge; judge processes are
// exempt from RLIMIT_NPROC (uid 0), which caps the agent uid's process count.
//
// The judge never follows an agent-made path: it reads only files in its own directories, hands
// scripts to commands as `sh -c` text (read with builtins, never by opening a path the agent chose),
// and `cd`s as the judge only into the workspace root (a mount point the agent cannot replace); every
// other cwd is entered by the command itself, as the agent.
//
// Two shell processes: the main loop reads host lines (so kill requests are handled while a command
// runs) and a persistent job runner, fed through a FIFO, that starts each command in its own session,
// waits for it and reports. Background processes: with the `k` flag (the default policy, "kill") every
// agent-uid process is killed when the command that started it ends; with `x` (exclusive, used for
// checks and wipes) every agent-uid process is killed before the command starts, so nothing of the
// agent runs beside it.
//
// Protocol (host -> agent): line 1 is "<nonce> <lease_ticks> <agent_uid> <data_limit_kib>". Every later line is
// "<nonce> <call>"; the call is shell code built by the host from the functions below (the host quotes
// every argument), or "<nonce> f <runner call>", forwarded verbatim to the runner. Lines without the
// nonce are ignored. Raw payloads follow an `a` call as exactly N bytes, read by `dd iflag=fullblock`.
//
// Protocol (agent -> host); every frame is "\n<nonce> <fields>\n", one writer (the runner) at a time:
//   "<nonce> h 2 <pid>"           ready (written by the main loop before the runner exists)
//   "<nonce> o <id>" + raw bytes  stdout of a command (at most cap bytes; `d` commands stream it live)
//   "<nonce> e <id>" + raw bytes  stderr
//   "<nonce> x <id> <status> <oom>"  end of the command; status from `wait` (held only in shell memory),
//                                 oom 1 when the sandbox's OOM-kill counter rose during the command
//   "<nonce> y <id> <why>"        the judge could not run the command (its own state failed): infrastructure
// Output is raw: the host takes everything up to the next "\n<nonce> " as payload, so output cannot end
// a payload or forge a frame without the nonce, which lives only in this process's memory (the agent uid
// cannot read /proc/<judge>/fd, mem or environ).
//
// Lease: the host writes an incrementing counter with `l` every few seconds; a watchdog checks it every
// 5 s and kills the whole sandbox after `lease_ticks` checks without a change.
//
// `ka` (kill all, judge included) is guarded by the name of pid 1 so that this script, if ever run
// outside a fresh pid namespace, cannot `kill -1` a host.

export const AGENT_VERSION = 2;

/** Judge-only state (0700): scripts, stdin files, pid files, the lease, the runner FIFO. */
export const AGENT_STATE_DIR = '/run/sandgym';
/** Judge-owned output directory (0711): per-command stdout/stderr files, open in commands as fds only. */
export const AGENT_IO_DIR = '/run/sandgym-io';

export const AGENT_SCRIPT = String.raw`
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; export PATH
d=$1; x=$2; m=$3
umask 077
IFS=' ' read -r N T A DK || exit 0
[ -n "$N" ] || exit 0
case $A in ''|0|*[!0-9]*) echo "sandgym-agent: invalid agent uid '$A'" >&2; exit 113;; esac
# DK: the agent's per-process data limit (RLIMIT_DATA, KiB); the cgroup caps all processes together.
case $DK in ''|*[!0-9]*) DK=unlimited;; esac
# Fail fast with a reason (it ends up in the creation error) instead of hanging every command later.
for t in setsid nsenter mkfifo dd head rm sleep; do
  command -v "$t" >/dev/null 2>&1 || { echo "sandgym-agent: required tool '$t' not found in the image" >&2; exit 112; }
done
[ -O "$d" ] && [ -O "$x" ] || { echo "sandgym-agent: $d and $x must belong to the judge identity" >&2; exit 111; }
nsenter -S "$A" -G "$A" -- sh -c '[ ! -r "$1" ] && [ ! -w "$1" ] && [ ! -w "$2" ]' sandgym-probe "$d" "$x" 2>/dev/null ||
  { echo "sandgym-agent: cannot run commands as agent uid $A apart from the judge (needs CAP_SETUID/CAP_SETGID, a private $d and $x)" >&2; exit 114; }
printf '0\n' >"$d/lease" || { echo "sandgym-agent: state directory $d is not writable" >&2; exit 111; }
mkfifo -m 600 "$d/q" || { echo "sandgym-agent: cannot create the runner FIFO in $d" >&2; exit 111; }
mkdir -m 700 "$d/judge" || { echo "sandgym-agent: cannot create the judge's working directory in $d" >&2; exit 111; }
cd / || exit 111
# The cgroup's OOM-kill counter (v1 or v2); empty where there is none (bubblewrap).
of=/sys/fs/cgroup/memory/memory.oom_control; [ -r "$of" ] || of=/sys/fs/cgroup/memory.events; [ -r "$of" ] || of=
oc() { oq=0; [ -n "$of" ] || return 0; while read -r k v; do [ "$k" = oom_kill ] && oq=$v; done <"$of"; }
# ka: kill every process but this one; status 1 (and nothing killed) outside a sandbox's pid namespace.
ka() {
  c=; IFS= read -r c </proc/1/comm 2>/dev/null
  case $c in docker-init|tini|bwrap|sandgym-init) kill -s KILL -- -1 2>/dev/null || kill -s KILL -1 2>/dev/null;; *) return 1;; esac
  return 0
}
# al: kill (with the judge's CAP_KILL, builtins only) every live process whose real, effective, saved or
# filesystem uid is the agent's; status 0 when there was one. Reads /proc/<pid>/status, which a
# process cannot hide from (unlike /proc/<pid> ownership, which PR_SET_DUMPABLE changes).
al() {
  g=1
  for p in /proc/[0-9]*; do
    s=; u=
    while IFS= read -r l; do case $l in State:*) s=$l;; Uid:*) u=$l; break;; esac; done 2>/dev/null <"$p/status"
    case $s in *zombie*|*dead*|'') continue;; esac
    set -- $u
    if [ "$2" = "$A" ] || [ "$3" = "$A" ] || [ "$4" = "$A" ] || [ "$5" = "$A" ]; then kill -s KILL "${'$'}{p#/proc/}" 2>/dev/null; g=0; fi
  done
  return $g
}
# sw: nothing of the agent uid survives. kill -1 as the agent is atomic against fork loops; the scan
# catches what it could not reach (e.g. when the agent's process count is at RLIMIT_NPROC, the
# dropped kill cannot even start).
sw() {
  al || return 0
  nsenter -S "$A" -G "$A" -- kill -s KILL -1 2>/dev/null
  sc=0
  while al; do
    sc=$((sc+1)); [ "$sc" -lt 300 ] || return 1
    sleep 0.01 2>/dev/null || sleep 1
  done
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
# Calls that write judge state record failures (af); the runner reports them as 'y' frames.
af=
s() { if printf "$3" >"$d/c.$1"; then printf 'j %s %s %s\n' "$1" "$2" "$4" >&4; else printf 'jf %s\n' "$1" >&4; fi; }
a() { dd bs="$2" count=1 iflag=fullblock 2>/dev/null >>"$d/$3.$1" || af="$af $1"; }
r() { case " $af " in *" $1 "*) af=; printf 'jf %s\n' "$1" >&4;; *) printf 'j %s %s %s\n' "$1" "$2" "$3" >&4;; esac; }
k() {
  p=; IFS= read -r p <"$d/p.$1" 2>/dev/null || return 0
  [ -n "$p" ] && { kill -s "$2" -- "-$p" 2>/dev/null || kill -s "$2" "-$p" 2>/dev/null; }
  return 0
}
# ag: in the forked subshell that becomes an agent command: the OOM killer's first choice, and the
# per-process data limit (the judge keeps neither).
ag() { echo 1000 2>/dev/null >/proc/self/oom_score_adj; ulimit -d "$DK" 2>/dev/null; }
# Job runner: reads runner calls from the FIFO (its fd 3, a dup of fd 4), one command at a time.
R() { while IFS= read -r q <&3; do eval "$q"; done; }
jf() { printf '\n%s y %s judge-state-write-failed\n' "$N" "$1"; }
# j ID CAP FLAGS: run the uploaded script $d/c.ID as the agent (as the judge itself with flag J: grader
# commands the host asks for explicitly; the script's first line enters its cwd). The judge reads it (builtins, its own
# file) and passes it as 'sh -c' text: the agent never opens anything in the state directory.
j() {
  n=$1; c=$2; f=$3
  case $f in *x*) sw || { printf '\n%s y %s agent-processes-survived\n' "$N" "$n"; return; };; esac
  S=; while IFS= read -r l || [ -n "$l" ]; do S="$S$l
"; done <"$d/c.$n"
  : >"$d/c.$n"
  i=/dev/null; [ -f "$d/i.$n" ] && i="$d/i.$n"
  oc; o0=$oq
  case $f in
    *J*) ( cd "$d/judge" || exit 126; SANDGYM_AGENT_UID=$A; export SANDGYM_AGENT_UID; exec setsid sh -c "$S" sandgym ) <"$i" >"$x/o.$n" 2>"$x/e.$n" 3<&- & ;;
    *d*) printf '\n%s o %s\n' "$N" "$n"
         ( ag; exec setsid nsenter -S "$A" -G "$A" -- sh -c "$S" sandgym ) <"$i" 2>"$x/e.$n" 3<&- & ;;
    *) ( ag; exec setsid nsenter -S "$A" -G "$A" -- sh -c "$S" sandgym ) <"$i" >"$x/o.$n" 2>"$x/e.$n" 3<&- & ;;
  esac
  S=
  fin "$n" "$c" "$f" "$i"
}
# jx ID CAP FLAGS CWD EXPORTS ARGV...: fast path for argv commands without a script or an extra sh. The
# host sends it only when CWD is the workspace root (a mount point the agent cannot replace).
jx() {
  n=$1; c=$2; f=$3; w=$4; v=$5; shift 5
  case $f in *x*) sw || { printf '\n%s y %s agent-processes-survived\n' "$N" "$n"; return; };; esac
  i=/dev/null; [ -f "$d/i.$n" ] && i="$d/i.$n"
  oc; o0=$oq
  ( cd "$w" || exit 126; eval "$v"; ag; exec setsid nsenter -S "$A" -G "$A" -- "$@" ) <"$i" >"$x/o.$n" 2>"$x/e.$n" 3<&- &
  fin "$n" "$c" "$f" "$i"
}
fin() {
  p=$!; printf '%s\n' "$p" >"$d/p.$1"
  wait "$p"; st=$?
  oc; om=0; [ "$oq" = "$o0" ] || om=1
  em "$1" "$2" "$st" "$om" "$4" "$3"
  case $3 in *k*) sw;; esac
}
# em ID CAP STATUS OOM STDIN FLAGS: emit output (raw, capped) and the status.
em() {
  case $6 in *d*) ;; *) if [ -s "$x/o.$1" ]; then printf '\n%s o %s\n' "$N" "$1"; head -c "$2" "$x/o.$1"; fi;; esac
  if [ -s "$x/e.$1" ]; then printf '\n%s e %s\n' "$N" "$1"; head -c "$2" "$x/e.$1"; fi
  printf '\n%s x %s %s %s\n' "$N" "$1" "$3" "$4"
  # Truncate at once (builtins, no fork) so a huge output does not hold tmpfs memory until removal.
  : >"$x/o.$1"; : >"$x/e.$1"; [ "$5" = /dev/null ] || : >"$5"
  # Files of finished commands are removed 16 at a time (one rm per 16 commands, after the result
  # is out): ids at least 16 below the current one are complete, the host runs one at a time.
  if [ $(($1 % 16)) -eq 0 ]; then
    f=; n=$(($1 - 31)); while [ "$n" -le $(($1 - 16)) ]; do f="$f $d/c.$n $d/i.$n $d/p.$n $x/o.$n $x/e.$n"; n=$((n+1)); done
    rm -f $f
  fi
}
wd </dev/null >/dev/null 2>&1 &
printf '\n%s h 2 %s\n' "$N" "$$"
# Read-write open: never blocks, and the FIFO always has a reader (this loop never reads it), so a
# write while the runner is busy waits in the pipe instead of raising SIGPIPE here. The path is
# removed at once and commands never inherit fds 3/4.
exec 4<>"$d/q"
rm -f "$d/q"
R 3<&4 4<&- </dev/null &
while IFS= read -r q; do
  case $q in "$N f "*) printf '%s\n' "${'$'}{q#"$N f "}" >&4 ;; "$N "*) eval "${'$'}{q#* }" ;; esac
done
[ "$m" = attach ] && ka
exit 0
`;
