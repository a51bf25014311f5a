// Judge isolation (issue 11), shell-v0 over the wire: a real server (buildApp on a loopback port) with the
// real docker and bubblewrap drivers, the TS client, and every attack from the issue played as an agent
// that has read the source. Each attack must score what the task deserves (0 for an unsolved task),
// never 1, never an error: the step resolves (a SandgymError fails the test with its code), the episode
// goes on, and a later correct solution still scores 1. The channel nonce is taken from the live sandbox
// (white box) to prove it never reaches anything the agent can print or write.
// Gates: skipped with the reason without Docker / bubblewrap, a failure under SANDGYM_REQUIRE_DOCKER=1 /
// SANDGYM_REQUIRE_BWRAP=1 (CI).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type EnvHandle, type SandgymClient } from '../../clients/ts/src/index.js';
import type { PooledSandboxService } from '../../server/src/env-host/sandbox-adapter.js';
import type { DriverSandbox } from '../../server/src/sandbox/index.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { HAS_BWRAP, HAS_DOCKER } from '../sandbox-e2e/e2e-helpers.js';

type Action = { name: string; arguments: Record<string, unknown> };
interface Info {
  task_id?: string;
  sandbox?: string;
  exit_code?: number | null;
  timed_out?: boolean;
  oom_killed?: boolean;
  truncated_output?: boolean;
  reward_components?: { solved: number };
  zero_reason?: string;
}
interface Step {
  observation: string;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: Info;
}

const bash = (command: string, timeout_s?: number): Action => ({ name: 'bash', arguments: timeout_s === undefined ? { command } : { command, timeout_s } });
const SOLVE_CREATE_FILE = "printf 'hello world\\n' > /workspace/hello.txt";

/** Lists the agent uid's processes (pid and argv) from a scan of /proc, as the agent itself. */
const AGENT_PROCS =
  'me=$(id -u); for p in /proc/[0-9]*; do u=; while read -r k a b; do if [ "$k" = Uid: ]; then u=$a; break; fi; done <"$p/status" 2>/dev/null; ' +
  '[ "$u" = "$me" ] && echo "agent-proc ${p#/proc/} $(tr \'\\0\' \' \' <"$p/cmdline" 2>/dev/null | head -c 100)"; done; echo scan-done';

/** The uid-0 (judge) pids, as the agent sees them in /proc. */
const JUDGE_PIDS =
  'J=; for p in /proc/[0-9]*; do while read -r k a b; do if [ "$k" = Uid: ]; then [ "$a" = 0 ] && J="$J ${p#/proc/}"; break; fi; done <"$p/status" 2>/dev/null; done';

const DRIVERS = [
  { name: 'docker' as const, ok: HAS_DOCKER },
  { name: 'local' as const, ok: HAS_BWRAP },
];

/** The live driver sandbox behind a session's info.sandbox id (white box: the pool's owner map). */
function liveSandbox(server: TestServer, id: string): DriverSandbox {
  const service = server.built.core.sandbox as PooledSandboxService;
  const owner = (service.pools as unknown as { owner: Map<DriverSandbox, unknown> }).owner;
  for (const sb of owner.keys()) if (sb.id === id) return sb;
  throw new Error(`sandbox ${id} is not in use`);
}
const channelOf = (sb: DriverSandbox) => (sb as unknown as { channel: { nonce: string; agentPid: number } }).channel;

for (const drv of DRIVERS) {
  describe.skipIf(!drv.ok)(`judge isolation, shell-v0 over the wire: ${drv.name} driver`, () => {
    let server: TestServer;
    let client: SandgymClient;

    beforeAll(async () => {
      server = await startServer({ driver: drv.name, fixtures: false, pools: { min_idle: 2, max_total: 8 } });
      client = await connect(server.url);
    }, 90_000);
    afterAll(async () => {
      await client?.close();
      await server?.close();
    }, 60_000);

    /** A fresh episode on a task (replace mode: a fresh sandbox from the pool). */
    async function episode(taskId: string, kwargs: Record<string, unknown> = {}): Promise<{ env: EnvHandle<string, Action>; sandbox: string }> {
      // every_step: the check runs after every command, so every attack below meets a live check.
      const env = await client.make<string, Action>('shell-v0', { shaping: 'every_step', ...kwargs });
      const r = await env.reset({ seed: 0, options: { task_id: taskId } });
      return { env, sandbox: (r.info as Info).sandbox! };
    }
    /** One step; it must resolve (an error fails the test) and, unsolved, score 0 and go on. */
    async function attack(env: EnvHandle<string, Action>, command: string, timeout_s?: number): Promise<Step> {
      const s = (await env.step(bash(command, timeout_s))) as unknown as Step;
      expect({ command, reward: s.reward, terminated: s.terminated, truncated: s.truncated }).toEqual({
        command,
        reward: 0,
        terminated: false,
        truncated: false,
      });
      expect(s.info.reward_components).toEqual({ solved: 0 });
      return s;
    }
    async function solves(env: EnvHandle<string, Action>, command = SOLVE_CREATE_FILE): Promise<void> {
      const s = (await env.step(bash(command))) as unknown as Step;
      // Solving never ends the episode (the agent does, with submit); submit then confirms the check.
      expect({ reward: s.reward, terminated: s.terminated, obs: s.observation }).toMatchObject({ reward: 1, terminated: false });
      const end = (await env.step({ name: 'submit', arguments: {} })) as unknown as Step;
      expect({ reward: end.reward, terminated: end.terminated, obs: end.observation }).toEqual({ reward: 0, terminated: true, obs: 'submitted: solved' });
    }

    it('state-dir / io-dir fill is refused; every agent tmpfs filled to ENOSPC scores 0; a normal solve still scores 1', async () => {
      const { env } = await episode('create-file');
      const s1 = await attack(
        env,
        'dd if=/dev/zero of=/run/sandgym/fill bs=1M count=400; dd if=/dev/zero of=/run/sandgym-io/fill bs=1M count=400; ' +
          'mkfifo /run/sandgym/c.3 /run/sandgym-io/o.3; ln -s /workspace /run/sandgym/x; ls /run/sandgym /run/sandgym-io; echo end',
      );
      expect(s1.observation).toMatch(/Permission denied/);
      expect(s1.observation).not.toMatch(/records out/);
      // Every place the agent can write, to the last byte (workspace, /tmp, /dev/shm).
      const s2 = await attack(
        env,
        'for d in /workspace /tmp /dev/shm; do dd if=/dev/zero of=$d/fill bs=1M count=400 2>&1 | tail -n 1; done; df /workspace /tmp /dev/shm',
      );
      expect(s2.observation.match(/100%/g)?.length).toBe(3);
      // With the disks full, the agent's own write fails and the check (which writes nothing) says so.
      const s3 = await attack(env, SOLVE_CREATE_FILE);
      expect(s3.info.exit_code).not.toBe(0);
      // Flooding stdout on top of full disks (the io dir fills: output is cut, the check still runs).
      const s4 = await attack(env, 'head -c 60000000 /dev/zero; echo rc=$?');
      expect(s4.info.truncated_output).toBe(true);
      await solves(env, `rm -f /workspace/fill /tmp/fill /dev/shm/fill && ${SOLVE_CREATE_FILE}`);
      await env.close();
    }, 60_000);

    it('output floods of 120 MB on stdout and on stderr: truncated observation, reward 0, the next check still runs', async () => {
      const { env } = await episode('create-file');
      const out = await attack(env, 'yes | head -c 120000000; echo rc=$?');
      expect(out.info.truncated_output).toBe(true);
      expect(out.observation).toMatch(/stdout truncated at 8192 bytes/);
      expect(out.observation.length).toBeLessThanOrEqual(32_768);
      const err = await attack(env, 'yes | head -c 120000000 >&2; echo rc=$?');
      expect(err.info.truncated_output).toBe(true);
      expect(err.observation).toMatch(/stderr truncated at 8192 bytes/);
      const both = await attack(env, '(yes | head -c 120000000 >&2) & yes | head -c 120000000; wait');
      expect(both.info.truncated_output).toBe(true);
      // A flood in the same command as a real solution: the check after it runs and passes.
      await solves(env, `${SOLVE_CREATE_FILE}; yes | head -c 120000000; yes | head -c 120000000 >&2`);
      await env.close();
    }, 90_000);

    it('a FIFO where the check reads scores 0 (the check times out), then the episode goes on', async () => {
      const { env } = await episode('create-file');
      // A writer left behind would feed the FIFO: nothing of the agent survives into the check.
      const s = await attack(env, "mkfifo hello.txt; (sleep 1; printf 'hello world\\n' > hello.txt) & ls -l hello.txt");
      expect(s.observation).toMatch(/^p/m);
      // Fail closed, and say why: the zero is an integrity event, not a silent "not solved".
      expect(s.info.zero_reason).toBe('check timed out after 10s');
      await solves(env, `rm -f hello.txt; ${SOLVE_CREATE_FILE}`);
      await env.close();
    }, 60_000);

    it('symlinks to judge files (/run/sandgym/*, /proc/1/*, /proc/<judge pid>/fd/0) score 0 and leave the channel intact', async () => {
      const { env, sandbox } = await episode('create-file');
      const judge = channelOf(liveSandbox(server, sandbox)).agentPid;
      expect(judge).toBeGreaterThan(0);
      const targets = [
        '/run/sandgym/lease',
        '/run/sandgym-io/o.1',
        '/proc/1/fd/0',
        '/proc/1/environ',
        `/proc/${judge}/fd/0`,
        `/proc/${judge}/fd/1`,
        '/proc/1/mem',
      ];
      for (const t of targets) {
        const s = await attack(env, `ln -sfn ${t} hello.txt; cat hello.txt >/dev/null; echo status=$?`);
        expect(s.observation, t).toMatch(/status=[1-9]/);
      }
      // The judge's pids seen from inside (uid 0): symlink each one's stdin and read it as the check would.
      const s = await attack(env, `${JUDGE_PIDS}; for p in $J; do ln -sfn /proc/$p/fd/0 hello.txt; head -c 1 hello.txt; done; echo judges=$J`);
      expect(s.observation).toMatch(/judges= ?\d+/);
      await solves(env, `rm -f hello.txt; ${SOLVE_CREATE_FILE}`);
      await env.close();
    }, 60_000);

    it('nonce theft: judge fd/environ/mem are permission errors, and the channel nonce is in nothing the agent can read', async () => {
      const { env, sandbox } = await episode('create-file');
      const sb = liveSandbox(server, sandbox);
      const nonce = channelOf(sb).nonce;
      expect(nonce).toMatch(/^[0-9a-f]{32}$/);
      // Every process not owned by the agent uid: fd/*, environ, mem, cmdline.
      const probe = await attack(
        env,
        'me=$(id -u); n=0; for p in /proc/[0-9]*; do u=; while read -r k a b; do if [ "$k" = Uid: ]; then u=$a; break; fi; done <"$p/status" 2>/dev/null; ' +
          '[ -z "$u" ] || [ "$u" = "$me" ] && continue; n=$((n+1)); ' +
          'for f in fd environ mem; do if ls "$p/$f/" >/dev/null 2>&1 || head -c 1 "$p/$f" >/dev/null 2>&1; then echo "READABLE $p/$f"; else echo "denied $p/$f"; fi; done; ' +
          'for f in 0 1 2 3 4; do head -c 1 "$p/fd/$f" >/dev/null 2>&1 && echo "READABLE $p/fd/$f"; done; ' +
          'done; echo others=$n',
      );
      expect(probe.observation).not.toContain('READABLE');
      const others = Number(/others=(\d+)/.exec(probe.observation)?.[1]);
      expect(others).toBeGreaterThanOrEqual(2); // docker-init or bwrap and the judge (binary agent; the sh agent: 3 shells)
      expect(probe.observation.match(/denied \/proc\/\d+\/(fd|environ|mem)/g)?.length).toBe(3 * others);
      // Dump everything readable under /proc and /run into the workspace (per file capped, fds with a
      // timeout since a pipe blocks), then read the dump out on the host side and look for the nonce.
      const dump = await attack(
        env,
        'out=/workspace/dump; : >$out; ' +
          'for p in /proc/[0-9]* /proc/self /proc/thread-self; do for f in "$p"/* "$p"/task/*/* "$p"/fdinfo/* "$p"/net/*; do [ -f "$f" ] && head -c 65536 "$f" >>$out 2>/dev/null; done; ' +
          'for f in "$p"/fd/* "$p"/task/*/fd/*; do timeout 2 head -c 65536 "$f" >>$out 2>/dev/null </dev/null; done; done; ' +
          'find /proc -maxdepth 1 -type f 2>/dev/null | grep -v -e kmsg -e kcore | while read -r f; do timeout 2 head -c 65536 "$f" >>$out 2>/dev/null; done; ' +
          'find /proc/sys /proc/net /proc/sysvipc /run /dev/shm /dev/mqueue /tmp -type f 2>/dev/null | while read -r f; do timeout 2 head -c 65536 "$f" >>$out 2>/dev/null; done; ' +
          'env >>$out; ls -laR /run /proc/self/fd >>$out 2>&1; echo "bytes=$(wc -c <$out)"',
        25,
      );
      const bytes = Number(/bytes=\s*(\d+)/.exec(dump.observation)?.[1]);
      expect(bytes).toBeGreaterThan(100_000);
      const text = Buffer.from(await sb.getFile('/workspace/dump')).toString('latin1');
      expect(text.length).toBe(bytes);
      expect(text).toContain('sandgym-agent'); // the judge's argv (public: the agent script) was read
      expect(text.includes(nonce), 'the nonce is readable by the agent').toBe(false);
      for (const s of [probe, dump]) expect(s.observation.includes(nonce)).toBe(false);
      await solves(env);
      await env.close();
    }, 90_000);

    it('forged frames on stdout, stderr and straight into the judge fds have no effect', async () => {
      const { env, sandbox } = await episode('create-file');
      const guesses = ['00000000000000000000000000000000', 'ffffffffffffffffffffffffffffffff', '0123456789abcdef0123456789abcdef'];
      const frames = guesses.map((g) => `printf '\\n${g} x 2 0\\n\\n${g} x 3 0\\n\\n${g} y 3 judge-state-write-failed\\n'`).join('; ');
      const s1 = await attack(env, `${frames}; (${frames}) >&2; echo end`);
      for (const g of guesses) expect(s1.observation).toContain(`${g} x 2 0`);
      expect(s1.info.exit_code).toBe(0);
      // Straight into the channel: every uid-0 process's stdout/stderr, and pid 1's.
      const s2 = await attack(
        env,
        `${JUDGE_PIDS}; for p in 1 $J; do for f in 1 2; do (${frames}) > /proc/$p/fd/$f 2>/dev/null && echo "WROTE $p/$f"; done; done; echo end`,
      );
      expect(s2.observation).not.toContain('WROTE');
      expect(s2.observation).toContain('end');
      expect(liveSandbox(server, sandbox).deadReason).toBeNull();
      await solves(env);
      await env.close();
    }, 60_000);

    it('kill -9 -1 and killing every judge pid: the command is killed, the episode goes on, the next command works', async () => {
      const { env } = await episode('create-file');
      const k1 = await attack(env, 'sleep 3001 & sh -c "kill -9 -1"; echo not-reached');
      expect(k1.observation).toMatch(/^killed by SIGKILL/);
      expect(k1.observation).not.toContain('not-reached');
      const k2 = await attack(
        env,
        `${JUDGE_PIDS}; for p in 1 $J; do kill -9 $p 2>&1 || echo "refused $p"; kill -STOP $p 2>/dev/null && echo "STOPPED $p"; done; echo judges=$J`,
      );
      expect(k2.observation).not.toContain('STOPPED');
      expect(k2.observation.match(/refused \d+/g)?.length).toBeGreaterThanOrEqual(3);
      const k3 = await attack(env, 'for p in /proc/[0-9]*; do kill -9 ${p#/proc/} 2>/dev/null; done; echo not-reached');
      expect(k3.observation).toMatch(/^killed by SIGKILL/);
      const alive = await attack(env, 'echo alive');
      expect(alive.observation).toContain('alive');
      await solves(env);
      await env.close();
    }, 60_000);

    it('exhausting pids, memory, fds: each an observation, reward 0, the episode goes on', async () => {
      const { env } = await episode('create-file');
      // Fork bomb (RLIMIT_NPROC on the agent uid; the judge is exempt and keeps its own pids).
      const bomb = await attack(env, 'f() { f | f & }; f; sleep 2; echo bombed', 5);
      expect(bomb.observation).toMatch(/timed out|exit code|killed/);
      // Memory by many processes: 3 x 200 MiB against a 256 MiB sandbox (each alone under the agent's 256 MiB
      // data ulimit). Each dd fills a 200 MiB buffer from /dev/zero (kernel memset, milliseconds) and holds it,
      // blocked writing into a pipe nobody reads, for 3 s; two kills leave 200 MiB, far enough below the limit
      // that the survivor does not thrash. Shell loops that build the memory (`$(head | tr)`, busybox awk
      // doubling a string: 9 s for one 64 MiB string here) took seconds of CPU, and many small processes left
      // the survivors thrashing at the limit: on a loaded machine both ran past the command's deadline (a
      // timeout instead of a clean OOM kill, seen in CI). Up to 3 tries until the kernel kills one.
      const hog = 'for i in 1 2 3; do dd if=/dev/zero bs=200M count=1 2>/dev/null | sleep 3 & done; wait; echo done';
      let many = await attack(env, hog, 15);
      for (let i = 1; i < 3 && drv.name === 'docker' && many.info.oom_killed !== true; i++) many = await attack(env, hog, 15);
      if (drv.name === 'docker') {
        expect(many.info.oom_killed).toBe(true);
        expect(many.observation).toMatch(/^killed: memory limit exceeded/);
      }
      // One big allocation (RLIMIT_DATA per process).
      const big = await attack(env, 'x=$(head -c 400000000 /dev/zero | tr "\\0" a); echo "len ${#x}"', 25);
      expect(big.observation).not.toMatch(/len 400000000/);
      // File descriptors: 16 processes each opening 1100 files (past RLIMIT_NOFILE) and holding them.
      const fds = await attack(
        env,
        'set --; i=0; while [ $i -lt 1100 ]; do set -- "$@" /dev/null; i=$((i+1)); done; ' +
          'i=0; while [ $i -lt 16 ]; do timeout 2 tail -f "$@" 2>&1 | grep -m 1 "Too many open files" & i=$((i+1)); done; wait; echo held',
        20,
      );
      expect(fds.observation).toMatch(/held/);
      expect(fds.observation).toMatch(/Too many open files/);
      const after = await attack(env, `${AGENT_PROCS}`);
      expect(after.observation).not.toMatch(/agent-proc \d+ (sleep|python3|sh -c f)/);
      await solves(env);
      await env.close();
    }, 120_000);

    it('exhausting inodes of every agent tmpfs (metadata, not counted by size=): reward 0, the episode goes on', async () => {
      const { env } = await episode('create-file');
      // Empty files cost no tmpfs blocks but pin kernel memory (inode + dentry, ~1 KiB each). On Docker
      // that memory is charged to the sandbox's cgroup and cannot be reclaimed by killing a process, so
      // it eats the judge's reserve. (Local: host kernel memory, bounded here to spare the machine.)
      // Docker caps inodes per tmpfs (32768 at most), so 100,000 names exhaust every one of them.
      const n = drv.name === 'docker' ? 100_000 : 300_000;
      for (const dir of ['/tmp', '/workspace', '/dev/shm']) {
        const s = await attack(env, `cd ${dir} && seq 1 ${n} | xargs touch; ls | wc -l`, 20);
        expect(s.observation).toMatch(/exit code|killed|timed out/);
      }
      // Deleting the files frees their memory: the episode is back to normal.
      // (busybox find has no -delete)
      const cleaned = await attack(env, 'for d in /tmp /workspace /dev/shm; do cd $d && ls -A | xargs rm -rf; done; echo cleaned', 25);
      expect(cleaned.observation).toContain('cleaned');
      await solves(env);
      await env.close();
    }, 120_000);

    it('setsid, double-fork and nohup processes die with their command and cannot touch a later check', async () => {
      const { env } = await episode('create-file');
      // Each one would "solve" the task a little later if it survived into the next step's check.
      const plant = await attack(
        env,
        `setsid sh -c 'sleep 2; ${SOLVE_CREATE_FILE}' & nohup sh -c 'sleep 2; ${SOLVE_CREATE_FILE}' >/dev/null 2>&1 & ` +
          `(setsid sh -c 'trap "" HUP TERM; sleep 2; ${SOLVE_CREATE_FILE}' &) ; (sh -c 'sleep 3011' &) ; echo planted`,
      );
      expect(plant.observation).toContain('planted');
      const later = await attack(env, 'sleep 4; ls -A /workspace; echo listed', 15);
      expect(later.observation).toContain('listed');
      expect(later.observation).not.toContain('hello.txt');
      // Only the scanning command itself (its shell and subshells) is alive, nothing planted earlier.
      const scan = await attack(env, AGENT_PROCS);
      expect(scan.observation).toContain('scan-done');
      expect(scan.observation).toMatch(/agent-proc \d+ sh -c/);
      expect(scan.observation).not.toMatch(/sleep|nohup/);
      await solves(env);
      await env.close();
    }, 60_000);

    it('squatting sockets: a listener left by the agent does not survive, and nothing of the judge listens', async () => {
      const { env } = await episode('create-file');
      const listen =
        "if command -v python3 >/dev/null; then python3 -c \"import socket,time\nt=socket.socket(); t.bind(('127.0.0.1',8080)); t.listen()\n" +
        "u=socket.socket(socket.AF_UNIX); u.bind('/tmp/sq.sock'); u.listen()\na=socket.socket(socket.AF_UNIX); a.bind('\\0sandgym-squat'); a.listen()\ntime.sleep(300)\" & " +
        'else nc -l -p 8080 </dev/null >/dev/null 2>&1 & httpd -p 127.0.0.1:8081 -h /tmp; fi; ' +
        // Until the listener is up (python3 can take over a second to start on a loaded machine), at most 8 s.
        "i=0; while [ $i -lt 80 ] && ! grep -Eq ':1F9[01] 0+:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null; do sleep 0.1; i=$((i+1)); done; " +
        'cat /proc/net/tcp /proc/net/tcp6 /proc/net/unix';
      const s1 = await attack(env, listen, 10);
      // The squat was real: a listening (0A) socket on 8080 (1F90) existed while the command ran.
      expect(s1.observation).toMatch(/:1F9[01] 0+:0000 0A/);
      const s2 = await attack(env, 'cat /proc/net/tcp /proc/net/tcp6 /proc/net/unix /proc/net/udp /proc/net/udp6 /proc/net/raw 2>/dev/null; echo end');
      const rows = s2.observation.split('\n').filter((l) => /^\s*[0-9a-f]+: /i.test(l));
      expect(rows, 'no socket of any kind exists between commands').toEqual([]);
      expect(s2.observation).toContain('end');
      await solves(env);
      await env.close();
    }, 60_000);

    it('timeout races: a command that ignores SIGTERM past its timeout, with setsid children, is deterministically "timed out", 3 of 3', async () => {
      const { env } = await episode('create-file');
      for (let run = 0; run < 3; run++) {
        const s = await attack(
          env,
          `trap '' TERM; setsid sh -c 'trap "" TERM; sleep 3021' & sh -c 'trap "" TERM; sleep 3022' & (setsid sh -c 'trap "" TERM; sleep 3023' &); ${SOLVE_CREATE_FILE}.no; sleep 3024`,
          1,
        );
        expect(s.observation, `run ${run}`).toMatch(/^timed out after 1 s \(killed\)/);
        expect(s.info.timed_out).toBe(true);
        const scan = await attack(env, AGENT_PROCS);
        expect(scan.observation).not.toMatch(/sleep 302/);
      }
      await solves(env);
      await env.close();
    }, 90_000);
  });

  describe.skipIf(!drv.ok)(`judge isolation, cross-session poisoning through the pool (reuse 'wipe'): ${drv.name} driver`, () => {
    let server: TestServer;
    beforeAll(async () => {
      // One sandbox per pool: session B necessarily receives the sandbox session A released.
      server = await startServer({ driver: drv.name, fixtures: false, pools: { min_idle: 1, max_total: 1 } });
    }, 90_000);
    afterAll(async () => server?.close(), 60_000);

    it('session A plants everything it can and releases; session B on another connection gets the same sandbox, clean, and scores 0', async () => {
      const c1 = await connect(server.url);
      const c2 = await connect(server.url);
      try {
        const a = await c1.make<string, Action>('shell-v0', { reuse: 'wipe', shaping: 'every_step' });
        const ra = await a.reset({ options: { task_id: 'count-rows' } });
        const sandboxA = (ra.info as Info).sandbox!;
        const plant = [
          // A correct answer for the next episode's task, everywhere the agent can write.
          `for d in /workspace /tmp /dev/shm; do printf 'hello world\\n' > $d/hello.txt; mkdir -p $d/.hidden/deep/er; touch $d/.hidden/deep/er/x "$d/-rf" "$d/..dots" "$d/new
line"; mkfifo $d/fifo; ln -s /run/sandgym $d/link; chmod 000 $d/.hidden/deep; done`,
          // A read-only directory holding the answer, and a message queue.
          `mkdir /workspace/ro && printf 'hello world\\n' > /workspace/ro/hello.txt && chmod 555 /workspace/ro; : > /dev/mqueue/sandgym-q 2>/dev/null; ls /dev/mqueue 2>/dev/null`,
          // Background processes that would recreate the answer later, and a state-dir plant attempt.
          `setsid sh -c 'while :; do ${SOLVE_CREATE_FILE} 2>/dev/null; sleep 0.2; done' & nohup sh -c 'sleep 3031' >/dev/null 2>&1 & ` +
            `(setsid sh -c 'trap "" HUP TERM; sleep 3032' &); printf 'exit 0\\n' > /run/sandgym/c.2 2>/dev/null; echo planted`,
        ];
        for (const cmd of plant) {
          const s = (await a.step(bash(cmd))) as unknown as Step;
          expect(s.reward).toBe(0);
        }
        await a.close();

        const b = await c2.make<string, Action>('shell-v0', { reuse: 'wipe', shaping: 'every_step' });
        const rb = await b.reset({ options: { task_id: 'create-file' } });
        expect((rb.info as Info).sandbox, 'the pool (max_total 1) hands B the sandbox A released').toBe(sandboxA);
        const look = (await b.step(
          bash(
            `sleep 1; for d in /workspace /tmp /dev/shm /dev/mqueue; do [ -d $d ] || continue; for f in $d/* $d/.[!.]* $d/..?*; do if [ -e "$f" ] || [ -L "$f" ]; then echo "LEFT $f"; fi; done; done; ${AGENT_PROCS}`,
          ),
        )) as unknown as Step;
        expect({ reward: look.reward, terminated: look.terminated }).toEqual({ reward: 0, terminated: false });
        expect(look.observation).toContain('scan-done');
        expect(look.observation).not.toContain('LEFT');
        expect(look.observation).not.toMatch(/sleep 303|while :/);
        const sub = (await b.step({ name: 'submit', arguments: {} })) as unknown as Step;
        expect({ reward: sub.reward, terminated: sub.terminated }).toEqual({ reward: 0, terminated: true });
        // And the same sandbox still serves a correct solution.
        await b.reset({ options: { task_id: 'create-file' } });
        const ok = (await b.step(bash(SOLVE_CREATE_FILE))) as unknown as Step;
        expect(ok.reward).toBe(1);
        await b.close();
      } finally {
        await c1.close();
        await c2.close();
      }
    }, 90_000);
  });
}
