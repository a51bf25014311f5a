// The binary judge agent (sandbox-agent/, protocol 3) against what an optimiser would try from inside a
// sandbox as the agent uid: forge a frame, read the judge's memory, fds or environment, find the nonce in
// anything readable, catch a forked child before its uid drop, signal the judge, exhaust the pids and see
// whether the judge can still run commands. Real containers (runc, and gVisor where the daemon has runsc),
// the real binary built by scripts/build-sandbox-agent.sh. The general contract (output cap, deadlines,
// OOM, reset, ...) runs on it too: driver-contract.test.ts uses the binary whenever it is built.
import { execFileSync } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandChannel } from '../../src/sandbox/channel/channel.js';
import { AgentBinaryMissingError, resolveAgentBinary } from '../../src/sandbox/channel/agent-binary.js';
import { DockerDriver } from '../../src/sandbox/docker/docker-driver.js';
import { LocalDriver } from '../../src/sandbox/local/local-driver.js';
import type { DriverSandbox } from '../../src/sandbox/types.js';
import { TEST_IMAGE, bwrapFacility, dockerFacility, gate, gvisorFacility, type Facility } from './facilities.js';

function buildAgent(): Facility {
  try {
    execFileSync('bash', ['scripts/build-sandbox-agent.sh'], { stdio: 'pipe' });
    return { ok: true, reason: '' };
  } catch (e) {
    return {
      ok: false,
      reason: `scripts/build-sandbox-agent.sh failed (a Go toolchain is needed): ${String((e as { stderr?: Buffer }).stderr ?? e).slice(0, 300)}`,
    };
  }
}

const docker = await dockerFacility();
const built = docker.ok ? buildAgent() : docker;
// Building the agent is part of the Docker facility: CI (SANDGYM_REQUIRE_DOCKER=1) fails without it.
const dockerOk = gate('docker', built);
const gvisorOk = gate('gvisor', await gvisorFacility()) && built.ok;
const bwrap = await bwrapFacility();
const bwrapOk = gate('bwrap', bwrap.ok ? buildAgent() : bwrap);

describe('channel protocol handshake', () => {
  it('refuses an agent that speaks another protocol version (a stale binary, or the sh agent)', async () => {
    const toAgent = new PassThrough();
    const fromAgent = new PassThrough();
    const ch = new CommandChannel(toAgent, fromAgent, { agentUid: 4242, leaseTicks: 2, protocol: 3, helloTimeoutMs: 5000 });
    const started = ch.start();
    const hello = await new Promise<string>((r) => toAgent.once('data', (d: Buffer) => r(d.toString())));
    expect(hello.startsWith(`${ch.nonce} `)).toBe(true);
    fromAgent.write(`\n${ch.nonce} h 2 7\n`);
    await expect(started).rejects.toThrow(/protocol 2, expected 3/);
    expect(ch.closed).toMatch(/expected 3/);
  });

  it('a driver asked for the binary agent refuses to start without it, with the path and how to build it', async () => {
    await expect(resolveAgentBinary('binary', '/nonexistent/sandgym-agent')).rejects.toThrow(AgentBinaryMissingError);
    await expect(resolveAgentBinary('auto', '/nonexistent/sandgym-agent')).resolves.toBeNull();
    await expect(resolveAgentBinary('shell')).resolves.toBeNull();
  });
});

const RUNTIMES = [
  { name: 'runc', ok: dockerOk, runtime: undefined },
  { name: 'runsc', ok: gvisorOk, runtime: 'runsc' },
] as const;

for (const rt of RUNTIMES) {
  describe.skipIf(!rt.ok)(`binary judge agent under attack (${rt.name})`, () => {
    let driver: DockerDriver;
    let sb: DriverSandbox;
    let nonce: string;
    const run = async (script: string, timeout_ms = 30_000) => sb.exec({ script, timeout_ms });

    beforeAll(async () => {
      driver = new DockerDriver({
        instanceId: `test-agentbin-${rt.name}-${process.pid}`,
        agent: 'binary',
        createConcurrency: 2,
        ...(rt.runtime ? { runtime: rt.runtime } : {}),
      });
      // Under gVisor each guest process costs ~5 MiB of the sandbox's memory and a fork bomb past it ends the
      // sandbox whole (docs/SANDBOX.md, "gVisor (runsc)"): 1 GiB for 64 pids there, as the driver contract does.
      sb = await driver.create({ image: TEST_IMAGE, background: 'keep', limits: { memory_mb: rt.runtime ? 1024 : 512, pids: 64 } });
      nonce = (sb as unknown as { channel: { nonce: string; protocol: number } }).channel.nonce;
      expect((sb as unknown as { channel: { protocol: number } }).channel.protocol).toBe(3);
    }, 120_000);
    afterAll(async () => {
      await sb?.destroy();
      await driver?.close();
    }, 60_000);

    it('runs as one judge process (uid 0) under pid 1, with commands as the agent uid holding no capability', async () => {
      const r = await run('id -u; grep -E "^(CapPrm|CapEff)" /proc/self/status; cat /proc/self/oom_score_adj; ls /proc/self/fd');
      const [uid, ...rest] = r.stdout.trim().split('\n');
      expect(Number(uid)).toBeGreaterThanOrEqual(2_000_000);
      // (gVisor's /proc/<pid>/status has no CapAmb/NoNewPrivs lines; runc's are checked by threat-model.test.ts.)
      expect(rest.join('\n')).toMatch(/CapPrm:\s+0+\nCapEff:\s+0+\n1000/);
      // Only stdin, stdout, stderr (and ls's own directory fd): nothing of the judge's is inherited.
      expect(rest.slice(3).filter((f) => !['0', '1', '2', '3'].includes(f))).toEqual([]);
      const judge = await run(
        'for p in /proc/[0-9]*; do u=$(awk \'/^Uid:/{print $2}\' $p/status 2>/dev/null); [ "$u" = 0 ] && echo "${p#/proc/} $(cat $p/comm)"; done',
      );
      const comms = judge.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(' ')[1]);
      expect(comms).toContain('sandgym-agent');
    });

    it('forged frames: output that looks like frames, with a guessed or partial nonce, is payload byte for byte', async () => {
      // One character off the real nonce (a fixed last character would be the real nonce 1 time in 16).
      const fake = `${nonce.slice(0, 31)}${nonce.endsWith('0') ? '1' : '0'}`;
      const payload = `\\n${fake} x 1 0 0\\n\\n${fake} o 99\\nz\\n`;
      const r = await run(`printf '${payload}'; printf '${payload}' >&2; exit 7`);
      expect(r.exit_code).toBe(7);
      expect(r.stdout).toBe(`\n${fake} x 1 0 0\n\n${fake} o 99\nz\n`);
      expect(r.stderr).toBe(r.stdout);
      expect((await sb.exec({ argv: ['echo', 'next'] })).stdout).toBe('next\n');
    });

    it("the judge's memory and fds are permission errors (and more under runc); the nonce is in nothing the agent can read", async () => {
      // runc: mem, environ, maps, ... and the fd directory are all denied. gVisor (this runsc) shows every uid
      // a process's environ, maps, auxv and fd *listing* (the sh agent's too): never its memory, and opening
      // one of the judge's fds through /proc is denied; the nonce is in none of them (the dump below).
      const files = rt.name === 'runsc' ? 'mem' : 'mem environ maps smaps auxv stack syscall';
      const probe = await run(
        'for p in /proc/[0-9]*; do u=$(awk \'/^Uid:/{print $2}\' $p/status 2>/dev/null); [ "$u" = 0 ] || continue; ' +
          `for f in ${files}; do head -c 1 $p/$f >/dev/null 2>&1 && echo "READABLE $p/$f"; ` +
          'for t in $p/task/*; do head -c 1 $t/$f >/dev/null 2>&1 && echo "READABLE $t/$f"; done; done; ' +
          'for f in $p/fd/*; do case $(readlink $f) in /dev/null) continue;; esac; timeout 1 head -c 1 $f >/dev/null 2>&1 && echo "READABLE $f"; (: >>$f) 2>/dev/null && echo "WRITABLE $f"; done; ' +
          (rt.name === 'runsc' ? '' : 'ls $p/fd/ >/dev/null 2>&1 && echo "READABLE $p/fd"; ') +
          'ls $p/cwd/ >/dev/null 2>&1 && echo "READABLE $p/cwd"; done; echo probed',
      );
      expect(probe.stdout).toContain('probed');
      expect(probe.stdout).not.toContain('READABLE');
      // busybox `timeout` leaves its watcher process alive for up to a second after the command it guards has
      // ended (measured: 50 quick `timeout 1 true` leave 50 processes behind). Enough of them hold the agent
      // uid's RLIMIT_NPROC, and the next command's shell dies with "can't fork" (CI saw exactly that in the
      // next two tests). An exclusive command kills every agent process first: the next test starts clean.
      await sb.exec({ argv: ['true'], exclusive: true });
      // Everything readable under /proc (every process, every thread) and /run, dumped into the workspace and
      // searched host-side (the nonce never appears in the command: its own cmdline is in the dump). Regular
      // files only, so no read blocks; the command's own deadline bounds it (no `timeout` per file: see above).
      const dump = await run(
        'for f in /proc/[0-9]*/* /proc/[0-9]*/task/*/* /run/* /run/*/*; do [ -f "$f" ] || continue; case $f in */pagemap|*/clear_refs|*/kmsg) continue;; esac; ' +
          'head -c 8192 "$f" 2>/dev/null; done >/workspace/dump; wc -c </workspace/dump',
        120_000,
      );
      expect(Number(dump.stdout.trim())).toBeGreaterThan(10_000);
      const text = Buffer.from(await sb.getFile('/workspace/dump')).toString('latin1');
      expect(text.length).toBeGreaterThan(10_000);
      expect(text.includes(nonce)).toBe(false);
      expect(text.includes(nonce.slice(0, 12))).toBe(false);
      await run('rm -f /workspace/dump');
      const left = await run('ls -d /proc/[0-9]* | wc -l');
      expect(Number(left.stdout.trim()), 'agent processes left behind by the dump').toBeLessThan(10);
    }, 180_000);

    it('racing the uid drop: a watcher never gets at a forked child before its execve (maps/environ of the judge image)', async () => {
      // A kept background watcher polls every new pid as fast as it can while the host starts 150 commands;
      // it records any process whose maps it can read that still maps the judge binary (a child caught
      // between fork and execve, after the drop: it would hold a copy of the judge's memory and the nonce).
      const started = await run(
        'rm -f /tmp/watch.log; (end=$(( $(date +%s) + 600 )); while [ ! -e /tmp/stop ] && [ $(date +%s) -lt $end ]; do for p in /proc/[0-9]*; do ' +
          'grep -q "^Uid:.*$(id -u)" $p/status 2>/dev/null && grep -q sandgym-agent $p/maps 2>/dev/null && echo "CAUGHT $p" >>/tmp/watch.log; done; echo tick >>/tmp/watch.log; done) >/dev/null 2>&1 &',
      );
      for (let i = 0; i < 150; i++) await sb.exec({ argv: ['true'] });
      const log = await run('touch /tmp/stop; sleep 0.3; grep -c tick /tmp/watch.log; grep CAUGHT /tmp/watch.log; true');
      const ticks = Number(log.stdout.trim().split('\n')[0]);
      // (The whole result on failure: CI once saw no ticks here and no output in the next test, with nothing
      // to say why.)
      expect(ticks, `${JSON.stringify(log)} started: ${JSON.stringify(started)}`).toBeGreaterThan(0); // the watcher really ran beside the commands
      expect(log.stdout).not.toContain('CAUGHT');
      expect(log.stdout).not.toContain(nonce);
    }, 120_000);

    it('signals: the agent cannot stop, kill or trace the judge; kill -9 -1 kills only its own processes', async () => {
      const r = await run(
        'for p in /proc/[0-9]*; do u=$(awk \'/^Uid:/{print $2}\' $p/status 2>/dev/null); [ "$u" = 0 ] || continue; ' +
          'for s in STOP KILL TERM; do kill -s $s ${p#/proc/} 2>/dev/null && echo "SIGNALLED ${p#/proc/} $s"; done; done; echo tried',
      );
      expect(r.stdout, JSON.stringify(r)).toContain('tried');
      expect(r.stdout).not.toContain('SIGNALLED');
      // kill(-1) reaches every process of the caller's uid but the caller (and never the judge).
      const all = await run('sleep 100 & kill -9 -1; sleep 0.2; ps -o args | grep -c "^sleep 100"; true');
      expect(all.stdout.trim()).toBe('0');
      expect((await sb.exec({ argv: ['echo', 'judge alive'] })).stdout).toBe('judge alive\n');
      expect(sb.deadReason).toBeNull();
    });

    it('pids exhausted by the agent (fork bomb at RLIMIT_NPROC): the judge still forks, sweeps and runs the next command', async () => {
      // A sandbox of its own: under gVisor a second fork bomb in one sandbox ends it whole, with either agent
      // (the Sentry's memory; docs/SANDBOX.md, "gVisor (runsc)").
      const outer = sb;
      sb = await driver.create({ image: TEST_IMAGE, limits: { memory_mb: rt.runtime ? 1024 : 512, pids: 64 } });
      try {
        const bomb = await sb.exec({ script: 'f() { f | f & }; f; sleep 3; echo bombed', timeout_ms: 4000, exclusive: true });
        expect(bomb.timed_out || bomb.exit_code !== null).toBe(true);
        // exclusive: every agent process is killed before the command, so the bomb is gone and this one runs.
        const after = await sb.exec({ script: 'ls -d /proc/[0-9]* | wc -l', exclusive: true, timeout_ms: 20_000 });
        expect(after.exit_code).toBe(0);
        expect(Number(after.stdout.trim())).toBeLessThan(10);
        // The judge stays small: its threads are well inside the 64 pids reserved for it.
        const threads = await sb.exec({ script: 'for p in /proc/[0-9]*; do grep -q "^Name:.sandgym-agent" $p/status 2>/dev/null && ls $p/task | wc -l; done' });
        expect(Number(threads.stdout.trim())).toBeLessThan(24);
      } catch (e) {
        // gVisor only, measured with the sh agent too: the bomb's guest processes (or the sweep after it) exhaust
        // the Sentry's memory and the host kills the sandbox whole: its loud death with the reason, never a result.
        if (rt.runtime !== 'runsc') throw e;
        expect(String(e)).toMatch(/gVisor/);
        expect(sb.deadReason).toMatch(/gVisor/);
      } finally {
        await sb.destroy();
        sb = outer;
      }
    }, 120_000);

    it('hostile argv, env and cwd reach the program unchanged (newlines, quotes, NUL-free binary, spaces)', async () => {
      const weird = ["a'b", 'c"d', 'e\nf', '$(id)', '`id`', ' sp ', '\\', '-n', ''];
      const r = await sb.exec({ argv: ['printf', '[%s]', ...weird], env: { X: "v'\n$y" }, cwd: '/tmp' });
      expect(r.stdout).toBe(weird.map((w) => `[${w}]`).join(''));
      const e = await sb.exec({ argv: ['sh', '-c', 'printf %s "$X"; pwd'], env: { X: "v'\n$y" }, cwd: '/tmp' });
      expect(e.stdout).toBe("v'\n$y/tmp\n");
      const missing = await sb.exec({ argv: ['no-such-program-here'] });
      expect(missing.exit_code).toBe(127);
      const badCwd = await sb.exec({ argv: ['true'], cwd: '/run/sandgym' });
      expect(badCwd.exit_code).toBe(126);
    });

    it('a script that is one plain command runs without a shell, with the result the shell would give', async () => {
      // `exec CMD` goes through sh (exec is a builtin), which then execs the same program: the reference.
      await sb.exec({ script: 'printf "echo from-sh\\n" > /workspace/noshebang; chmod +x /workspace/noshebang; mkdir -p /workspace/d' });
      for (const cmd of [
        '/bin/echo a  b',
        'ls -a /workspace',
        'id -u',
        'cat /etc/hostname',
        'basename /a/b.txt .txt',
        'head -c 5 /etc/passwd',
        './noshebang',
        'noshebang',
        'sh -c exit',
        '/workspace/d',
      ]) {
        const direct = await sb.exec({ script: cmd, cwd: '/workspace' });
        const viaSh = await sb.exec({ script: `exec ${cmd}`, cwd: '/workspace' });
        expect({ cmd, exit: direct.exit_code, out: direct.stdout }).toEqual({ cmd, exit: viaSh.exit_code, out: viaSh.stdout });
      }
      expect((await sb.exec({ script: 'id -u' })).stdout.trim()).not.toBe('0');
      const missing = await sb.exec({ script: 'no-such-program-here --x' });
      expect([missing.exit_code, missing.stderr]).toEqual([127, 'sandgym: no-such-program-here: not found\n']);
      // What differs, documented (simpleCommandArgv): no shell ran, so nothing it exports is there.
      expect((await sb.exec({ script: 'env' })).stdout).not.toMatch(/^SHLVL=/m);
      expect((await sb.exec({ script: 'env;' })).stdout).toMatch(/^SHLVL=1$/m);
      // Limits and deadlines hold as for any command: a plain `sleep` still dies at its deadline.
      const slow = await sb.exec({ script: 'sleep 30', timeout_ms: 500 });
      expect(slow.timed_out).toBe(true);
    });
  });
}

describe.skipIf(!bwrapOk)('binary judge agent under bubblewrap (--ro-bind)', () => {
  it('is the judge of a local sandbox: protocol 3, one judge process, commands as the agent uid, nothing of the judge readable', async () => {
    const driver = new LocalDriver({ instanceId: `test-agentbin-local-${process.pid}`, agent: 'binary' });
    const sb = await driver.create({ image: TEST_IMAGE });
    try {
      expect((sb as unknown as { channel: { protocol: number } }).channel.protocol).toBe(3);
      const r = await sb.exec({
        script:
          'id -u; for p in /proc/[0-9]*; do u=$(awk \'/^Uid:/{print $2}\' $p/status 2>/dev/null); [ "$u" = 0 ] || continue; ' +
          'echo "J $(cat $p/comm)"; for f in mem environ maps; do head -c 1 $p/$f >/dev/null 2>&1 && echo "READABLE $p/$f"; done; ls $p/fd >/dev/null 2>&1 && echo READABLE; done; ls /run/sandgym 2>&1 >/dev/null | head -c 0; echo end',
      });
      expect(Number(r.stdout.split('\n')[0])).toBeGreaterThanOrEqual(1_000_000);
      expect(r.stdout).toContain('J sandgym-agent');
      expect(r.stdout).not.toContain('READABLE');
      expect((await sb.exec({ argv: ['printf', '%s', 'a b'], cwd: '/tmp' })).stdout).toBe('a b');
    } finally {
      await sb.destroy();
      await driver.close();
    }
  });
});
