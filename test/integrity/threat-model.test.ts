// The threat model, enumerated from inside a live sandbox as the agent uid (issue 11): what it can write,
// which judge paths it can read, which pids it can signal, which sockets exist, and what it sees in
// /proc, compared with the documented lists below. Real server, real docker and bubblewrap drivers,
// commands played as shell-v0 `bash` actions over the wire.
//
// The expected lists are the ones in docs/SANDBOX.md, section "Threat model" (who can touch what, by
// uid, path, socket and signal). Change them together.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type EnvHandle, type SandgymClient } from '../../clients/ts/src/index.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { HAS_BWRAP, HAS_DOCKER } from '../sandbox-e2e/e2e-helpers.js';

// --- docs/SANDBOX.md, "Threat model" -------------------------------------------------------------
/** Directories the agent uid can write (every other path: read-only mount, or not its own). */
const AGENT_WRITABLE_DIRS = {
  docker: ['/dev/mqueue', '/dev/shm', '/tmp', '/workspace'],
  local: ['/dev/shm', '/tmp', '/workspace'],
};
/** Device nodes the agent uid can write (harmless: null sinks, entropy, terminals; /dev/ptmx is a symlink to /dev/pts/ptmx). */
const AGENT_WRITABLE_DEVICES = ['/dev/full', '/dev/null', '/dev/pts/ptmx', '/dev/random', '/dev/tty', '/dev/urandom', '/dev/zero'];
/** Judge state the agent uid can read: none. */
const JUDGE_PATHS = ['/run/sandgym', '/run/sandgym/lease', '/run/sandgym-io', '/run/sandgym-io/o.1', '/run/sandgym-io/e.1'];
/** /proc/<judge pid>/ entries the agent may read: what the kernel shows every uid (no secrets: the judge's argv is the public agent script). */
const JUDGE_PROC_PUBLIC = [
  'arch_status',
  'autogroup',
  'cgroup',
  'cmdline',
  'comm',
  'coredump_filter',
  'cpuset',
  'gid_map',
  'limits',
  'loginuid',
  'mountinfo',
  'mounts',
  'oom_adj',
  'oom_score',
  'oom_score_adj',
  'projid_map',
  'sched',
  'schedstat',
  'sessionid',
  'setgroups',
  'stat',
  'statm',
  'status',
  'timens_offsets',
  'uid_map',
  'wchan',
  'children',
];
/** /proc/<judge pid>/ entries that would leak the nonce or the judge's state: never readable by the agent uid. */
const JUDGE_PROC_PRIVATE = [
  'auxv',
  'cwd',
  'environ',
  'exe',
  'fd',
  'fdinfo',
  'io',
  'map_files',
  'maps',
  'mem',
  'pagemap',
  'personality',
  'root',
  'smaps',
  'stack',
  'syscall',
];
/** Agent uid ranges (one uid per sandbox). */
const AGENT_UID: Record<'docker' | 'local', [number, number]> = { docker: [2_000_000, 2_000_000 + 2 ** 20], local: [1_000_000, 1_060_000] };
/**
 * Judge processes: uid 0. pid 1 (docker-init or bwrap) and the channel's judge: one process for the binary
 * agent (sandbox-agent/), three shells for the sh agent (main loop, runner, watchdog).
 */
const MIN_JUDGE_PROCS = 2;
// -------------------------------------------------------------------------------------------------

type Action = { name: string; arguments: Record<string, unknown> };
const bash = (command: string, timeout_s = 30): Action => ({ name: 'bash', arguments: { command, timeout_s } });
const lines = (obs: string, tag: string) =>
  obs
    .split('\n')
    .filter((l) => l.startsWith(`${tag} `))
    .map((l) => l.slice(tag.length + 1));

const DRIVERS = [
  { name: 'docker' as const, ok: HAS_DOCKER },
  { name: 'local' as const, ok: HAS_BWRAP },
];

for (const drv of DRIVERS) {
  describe.skipIf(!drv.ok)(`threat model, enumerated as the agent uid: ${drv.name} driver`, () => {
    let server: TestServer;
    let client: SandgymClient;
    let env: EnvHandle<string, Action>;
    let agentUid = 0;

    async function run(command: string): Promise<string> {
      const s = await env.step(bash(command));
      expect(s.reward).toBe(0);
      expect(s.observation, command).toMatch(/^exit code: 0/);
      expect(s.observation).not.toMatch(/truncated/);
      return s.observation;
    }

    beforeAll(async () => {
      server = await startServer({ driver: drv.name, fixtures: false, pools: { min_idle: 1, max_total: 4 } });
      client = await connect(server.url);
      env = await client.make<string, Action>('shell-v0', { shaping: 'every_step' });
      await env.reset({ options: { task_id: 'create-file' } });
    }, 90_000);
    afterAll(async () => {
      await client?.close();
      await server?.close();
    }, 60_000);

    it('identity: a per-sandbox agent uid with no capabilities', async () => {
      const obs = await run('id -u; id -g; grep -E "^(Cap(Inh|Prm|Eff|Amb)|NoNewPrivs)" /proc/self/status');
      const [uid = NaN, gid = NaN] = obs.split('\n').slice(2, 4).map(Number);
      agentUid = uid;
      expect(uid).toBeGreaterThanOrEqual(AGENT_UID[drv.name][0]);
      expect(uid).toBeLessThan(AGENT_UID[drv.name][1]);
      expect(gid).toBe(uid);
      for (const cap of ['CapPrm', 'CapEff', 'CapAmb']) expect(obs).toMatch(new RegExp(`${cap}:\\s+0{16}`));
      // no_new_privs: no exec can gain privileges (setuid bits and file capabilities are ignored), which
      // also makes a non-empty inheritable set inert (bubblewrap run as root leaves CapInh full).
      expect(obs).toMatch(/NoNewPrivs:\s+1/);
      if (drv.name === 'docker') expect(obs).toMatch(/CapInh:\s+0{16}/);
    }, 30_000);

    it('writable: exactly the documented directories and devices (every rw mount walked; ro mounts refuse writes)', async () => {
      // Each mount is walked on its own (-xdev): read-only mounts are skipped whole (EROFS for any write,
      // whatever the mode bits), everything on a writable mount is tested with access(W_OK) as the agent.
      // Symlinks are skipped: /dev/stdin & co. resolve through the probing process's own fds.
      const obs = await run(
        'while read -r _ _ _ _ mp opts _; do case ",$opts," in *,ro,*) continue;; esac; case $mp in /proc|/proc/*|/sys|/sys/*) continue;; esac; ' +
          'find "$mp" -xdev ! -type l 2>/dev/null | while IFS= read -r f; do [ -w "$f" ] && echo "W $f"; done; echo "M $mp"; done </proc/self/mountinfo | sort -u',
      );
      const writable = lines(obs, 'W');
      expect(lines(obs, 'M')).toContain('/workspace');
      const dirs = writable.filter((p) => !p.startsWith('/dev/') || p === '/dev/shm' || p === '/dev/mqueue').sort();
      const devices = writable.filter((p) => !dirs.includes(p)).sort();
      expect(dirs).toEqual(AGENT_WRITABLE_DIRS[drv.name]);
      expect(devices).toEqual(AGENT_WRITABLE_DEVICES);
    }, 60_000);

    it('readable judge state: none of /run/sandgym*, and only the public /proc entries of judge pids', async () => {
      const paths = await run(
        `for f in ${JUDGE_PATHS.join(' ')}; do if ls "$f" >/dev/null 2>&1 && { [ -d "$f" ] || head -c 1 "$f" >/dev/null 2>&1; }; then echo "R $f"; else echo "D $f"; fi; done; true`,
      );
      expect(lines(paths, 'R')).toEqual([]);
      expect(lines(paths, 'D').sort()).toEqual([...JUDGE_PATHS].sort());
      const obs = await run(
        'me=$(id -u); for p in /proc/[0-9]*; do u=; while read -r k a b; do if [ "$k" = Uid: ]; then u=$a; break; fi; done <"$p/status" 2>/dev/null; ' +
          '[ "$u" = 0 ] || continue; echo "J ${p#/proc/}"; for f in "$p"/* "$p"/task/*/*; do n=${f##*/}; ' +
          'if [ -d "$f" ]; then ls "$f" >/dev/null 2>&1 && echo "R $n"; else head -c 1 "$f" >/dev/null 2>&1 && echo "R $n"; fi; done; done | sort -u',
      );
      expect(lines(obs, 'J').length).toBeGreaterThanOrEqual(MIN_JUDGE_PROCS);
      const readable = lines(obs, 'R').filter((n) => n !== 'task' && n !== 'attr' && n !== 'net' && n !== 'ns');
      for (const n of readable) expect(JUDGE_PROC_PUBLIC, `/proc/<judge>/${n} is readable by the agent`).toContain(n);
      for (const n of JUDGE_PROC_PRIVATE) expect(readable, n).not.toContain(n);
    }, 60_000);

    it('signals: the agent can signal only its own processes; /proc shows only uid 0 (judge) and the agent uid', async () => {
      const obs = await run(
        'for p in /proc/[0-9]*; do u=; while read -r k a b; do if [ "$k" = Uid: ]; then u=$a; break; fi; done <"$p/status" 2>/dev/null; [ -n "$u" ] || continue; ' +
          'if kill -0 ${p#/proc/} 2>/dev/null; then s=yes; else s=no; fi; echo "P ${p#/proc/} $u $s"; done',
      );
      const procs = lines(obs, 'P')
        .map((l) => l.split(' '))
        .map(([pid, uid, sig]) => ({ pid: Number(pid), uid: Number(uid), sig: sig === 'yes' }));
      const uids = new Set(procs.map((p) => p.uid));
      expect([...uids].sort()).toEqual([0, agentUid].sort((a, b) => a - b));
      expect(procs.filter((p) => p.uid === 0).length).toBeGreaterThanOrEqual(MIN_JUDGE_PROCS);
      for (const p of procs) expect({ ...p, signalable: p.sig }).toMatchObject({ signalable: p.uid === agentUid });
      expect(procs.find((p) => p.pid === 1)?.uid).toBe(0);
    }, 30_000);

    it('sockets and IPC: nothing listens or exists (tcp, tcp6, udp, udp6, raw, unix, SysV IPC)', async () => {
      const obs = await run(
        'for f in tcp tcp6 udp udp6 raw raw6 unix; do sed 1d /proc/net/$f 2>/dev/null | sed "s/^/S $f /"; done; for f in shm msg sem; do sed 1d /proc/sysvipc/$f 2>/dev/null | sed "s/^/I $f /"; done; echo end',
      );
      expect(lines(obs, 'S')).toEqual([]);
      expect(lines(obs, 'I')).toEqual([]);
    }, 30_000);
  });
}
