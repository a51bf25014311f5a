// Sandbox layer benchmark: `npx tsx bench/sandbox.bench.ts [--quick]`.
// Prints a markdown table and writes bench/results/sandbox.json. Needs a Docker daemon with
// sandgym/busybox:1 (`node bin/sandgym.js images build --only busybox`) and bubblewrap.
import { spawn } from 'node:child_process';
import { PassThrough, type Duplex } from 'node:stream';
import Docker from 'dockerode';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DockerDriver } from '../server/src/sandbox/docker/docker-driver.js';
import { LocalDriver, USR_ROOT_ARGS } from '../server/src/sandbox/local/local-driver.js';
import { SandboxPool } from '../server/src/sandbox/pool.js';
import type { DriverSandbox } from '../server/src/sandbox/types.js';
import { buildApp } from '../server/src/app.js';
import type { PooledSandboxService } from '../server/src/env-host/sandbox-adapter.js';
import { connect } from '../clients/ts/src/index.js';

const IMAGE = 'sandgym/busybox:1';
const quick = process.argv.includes('--quick');
const N_CHANNEL = quick ? 200 : 1000;
const N_EXEC = quick ? 15 : 40;
const N_COLD = quick ? 4 : 8;
const N_BWRAP = quick ? 10 : 30;
const FLEET = 32;
const FLEET_SECONDS = quick ? 3 : 8;
/** The issue-19 fleet: commands/s over 64 sandboxes through the whole stack (WebSocket step -> env -> channel). */
const WS_FLEET = 64;
const WS_FLEET_SECONDS = Number(process.env.BENCH_WS_SECONDS) || (quick ? 6 : 15);
const N_FLOOR = quick ? 300 : 1000;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}
const r2 = (x: number) => Math.round(x * 100) / 100;
const stat = (xs: number[]) => ({ n: xs.length, p50_ms: r2(pct(xs, 50)), p99_ms: r2(pct(xs, 99)) });

async function time<T>(f: () => Promise<T>): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}

async function channelVsExec(driver: DockerDriver) {
  const sb = await driver.create({ image: IMAGE });
  try {
    for (let i = 0; i < 20; i++) await sb.exec({ argv: ['true'] }); // warm up
    const ch: number[] = [];
    for (let i = 0; i < N_CHANNEL; i++) ch.push(await time(() => sb.exec({ argv: ['true'] })));
    const ex: number[] = [];
    for (let i = 0; i < N_EXEC; i++) ex.push(await time(() => (sb as unknown as { execViaDocker: DriverSandbox['exec'] }).execViaDocker({ argv: ['true'] })));
    return { channel: stat(ch), docker_exec: stat(ex), ratio_p50: r2(pct(ex, 50) / pct(ch, 50)) };
  } finally {
    await sb.destroy();
  }
}

async function poolVsCold(driver: DockerDriver) {
  const cold: number[] = [];
  for (let i = 0; i < N_COLD; i++) {
    let sb: DriverSandbox | undefined;
    cold.push(
      await time(async () => {
        sb = await driver.create({ image: IMAGE });
      }),
    );
    void sb?.destroy();
  }
  const pool = new SandboxPool(driver, { image: IMAGE }, { minIdle: 4, maxTotal: 8, refillConcurrency: 2 });
  pool.start();
  const warm: number[] = [];
  const waitIdle = async (n: number) => {
    while (pool.stats().idle < n) await new Promise((r) => setTimeout(r, 20));
  };
  for (let round = 0; round < (quick ? 2 : 4); round++) {
    await waitIdle(4);
    const got: DriverSandbox[] = [];
    for (let i = 0; i < 4; i++) {
      const t = performance.now();
      got.push(await pool.acquire());
      warm.push(performance.now() - t);
    }
    for (const sb of got) void pool.release(sb);
  }
  const stats = pool.stats();
  await pool.close();
  return { cold_create_start: stat(cold), warm_acquire: stat(warm), pool_stats: stats };
}

async function fleet(driver: DockerDriver) {
  const t0 = performance.now();
  const settled = await Promise.allSettled(Array.from({ length: FLEET }, () => driver.create({ image: IMAGE })));
  const sbs = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failures = settled.flatMap((s) => (s.status === 'rejected' ? [String((s.reason as Error).message).slice(0, 300)] : []));
  const startSeconds = (performance.now() - t0) / 1000;
  let count = 0;
  const end = performance.now() + FLEET_SECONDS * 1000;
  const lat: number[] = [];
  await Promise.all(
    sbs.map(async (sb) => {
      while (performance.now() < end) {
        const t = performance.now();
        await sb.exec({ argv: ['true'] });
        lat.push(performance.now() - t);
        count += 1;
      }
    }),
  );
  const elapsed = (performance.now() - (end - FLEET_SECONDS * 1000)) / 1000;
  await Promise.all(sbs.map((s) => s.destroy()));
  return {
    sandboxes: sbs.length,
    create_failures: failures,
    start_seconds: r2(startSeconds),
    commands: count,
    commands_per_s: Math.round(count / elapsed),
    latency: stat(lat),
  };
}

function bwrapRaw(): Promise<number> {
  const args = ['--unshare-all', '--die-with-parent', ...USR_ROOT_ARGS, '--proc', '/proc', '--dev', '/dev', '--', '/bin/true'];
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const c = spawn('bwrap', args, { stdio: 'ignore' });
    c.on('error', reject);
    c.on('exit', () => resolve(performance.now() - t));
  });
}

async function bwrap() {
  const raw: number[] = [];
  for (let i = 0; i < N_BWRAP; i++) raw.push(await bwrapRaw());
  const driver = new LocalDriver({ instanceId: 'bench' });
  const ready: number[] = [];
  const rt: number[] = [];
  for (let i = 0; i < N_BWRAP; i++) {
    let sb: DriverSandbox | undefined;
    ready.push(
      await time(async () => {
        sb = await driver.create({ image: IMAGE });
      }),
    );
    if (i === 0 && sb) for (let j = 0; j < 200; j++) rt.push(await time(() => sb!.exec({ argv: ['true'] })));
    await sb?.destroy();
  }
  await driver.close();
  return { bwrap_true: stat(raw), sandbox_ready: stat(ready), channel_round_trip: stat(rt) };
}

const N_EPISODES = quick ? 6 : 20;

/**
 * A full shell-v0 episode over the WebSocket (make + reset + 5 bash steps, the last one solving the
 * task, + close) against a real server with a warm pool. 'replace' waits (untimed) between episodes
 * until the pool has a sandbox idle again, so it measures a pool hit; 'wipe' reuses in place.
 */
async function shellEpisodes(driverKind: 'docker' | 'local', reuse: 'replace' | 'wipe') {
  const built = await buildApp({ driver: driverKind, pools: { min_idle: 2, max_total: 8 }, log_level: 'error', host: '127.0.0.1', port: 0 });
  await built.app.listen({ host: '127.0.0.1', port: 0 });
  const service = built.core.sandbox as PooledSandboxService;
  const idle = () => service.pools.stats().reduce((n, s) => n + s.idle, 0);
  const client = await connect(built.url());
  const times: number[] = [];
  const stepTimes: number[] = [];
  try {
    for (let i = 0; i < N_EPISODES + 2; i++) {
      while (idle() < 1) await new Promise((r) => setTimeout(r, 10));
      const t0 = performance.now();
      // every_step: the task's check after every command is part of what this bench measures.
      const env = await client.make<string>('shell-v0', { reuse, shaping: 'every_step' });
      await env.reset({ options: { task_id: 'create-file' } });
      const cmds = ['ls -la', 'cat hello.txt 2>/dev/null || echo missing', 'echo draft > hello.txt', 'wc -c hello.txt', "echo 'hello world' > hello.txt"];
      let last = 0;
      for (const c of cmds) {
        const ts = performance.now();
        last = (await env.step({ name: 'bash', arguments: { command: c } })).reward;
        if (i >= 2) stepTimes.push(performance.now() - ts);
      }
      await env.close();
      if (last !== 1) throw new Error('shell-v0 bench episode did not solve its task');
      if (i >= 2) times.push(performance.now() - t0); // first two are warm-up
    }
  } finally {
    await client.close();
    await built.app.close();
  }
  return { episode: stat(times), step: stat(stepTimes) };
}

/**
 * The cost of the second identity, measured two ways in the same run: (1) through the channel, a command
 * with the background policy 'keep' (drop only) vs 'kill' (drop + the /proc scan after it) vs an
 * exclusive one (scan before too); (2) inside a container with the judge's capabilities, a loop of the
 * per-command exec chain with and without the `nsenter` drop, and of the /proc scan alone.
 */
async function identityCost(driver: DockerDriver) {
  const out: Record<string, ReturnType<typeof stat>> = {};
  for (const [label, background, exclusive] of [
    ['keep', 'keep', false],
    ['kill', 'kill', false],
    ['exclusive', 'kill', true],
  ] as const) {
    const sb = await driver.create({ image: IMAGE, background });
    try {
      for (let i = 0; i < 20; i++) await sb.exec({ argv: ['true'], exclusive });
      const xs: number[] = [];
      for (let i = 0; i < N_CHANNEL / 2; i++) xs.push(await time(() => sb.exec({ argv: ['true'], exclusive })));
      out[label] = stat(xs);
    } finally {
      await sb.destroy();
    }
  }
  // busybox `time` prints "real 0m 0.12s" on stderr; 200 iterations each.
  const loop = (name: string, body: string) => `echo ${name} >&2; time sh -c 'i=0; while [ $i -lt 200 ]; do ${body}; i=$((i+1)); done'`;
  const scan = 'for p in /proc/[0-9]*; do while IFS= read -r l; do case $l in Uid:*) break;; esac; done 2>/dev/null <"$p/status"; done';
  const script = [loop('setsid', 'setsid true'), loop('drop', 'setsid nsenter -S 4242 -G 4242 -- true'), loop('scan', scan)].join('; ');
  const perCommandUs = await new Promise<Record<string, number>>((resolve, reject) => {
    const c = spawn('docker', [
      'run',
      '--rm',
      '--network',
      'none',
      '--cap-drop',
      'ALL',
      '--cap-add',
      'SETUID',
      '--cap-add',
      'SETGID',
      '--cap-add',
      'KILL',
      '--security-opt',
      'no-new-privileges',
      '--user',
      '0:0',
      IMAGE,
      'sh',
      '-c',
      script,
    ]);
    let text = '';
    c.stderr.on('data', (d: Buffer) => (text += d.toString()));
    c.on('error', reject);
    c.on('exit', () => {
      const r: Record<string, number> = {};
      let name = '';
      for (const line of text.split('\n')) {
        const m = /^real\s+(\d+)m\s*([\d.]+)s/.exec(line.trim());
        if (m) r[name] = Math.round(((Number(m[1]) * 60 + Number(m[2])) * 1e6) / 200);
        else if (/^[a-z]+$/.test(line.trim())) name = line.trim();
      }
      resolve(r);
    });
  });
  return { channel: out, in_container_us_per_iteration: perCommandUs };
}

/**
 * The floor: a raw attached process in a container of the same image, reached over the same kind of
 * hijacked attach stream, that reads a line and answers it, either with a builtin (`echo`: the stream
 * alone) or after fork + exec of `/bin/true` (the least any agent must do for such a command). No
 * judge, no second identity, no output capture: nothing sandgym could remove.
 */
class RawAttached {
  private waiters: (() => void)[] = [];
  private buf = '';
  private constructor(
    readonly container: Docker.Container,
    private readonly stream: Duplex,
  ) {}
  static async start(docker: Docker, loop: string, label: string): Promise<RawAttached> {
    const c = await docker.createContainer({
      Image: IMAGE,
      Cmd: ['sh', '-c', loop],
      OpenStdin: true,
      StdinOnce: true,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Labels: { 'sandgym.bench': label },
      HostConfig: { NetworkMode: 'none', AutoRemove: true, CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'] },
    });
    const stream = (await c.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as Duplex;
    const out = new PassThrough();
    docker.modem.demuxStream(stream, out, new PassThrough());
    const r = new RawAttached(c, stream);
    out.on('data', (d: Buffer) => {
      r.buf += d.toString('latin1');
      let nl: number;
      while ((nl = r.buf.indexOf('\n')) >= 0) {
        r.buf = r.buf.slice(nl + 1);
        r.waiters.shift()?.();
      }
    });
    await c.start();
    await r.call();
    return r;
  }
  call(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      this.stream.write('x\n');
    });
  }
  async stop(): Promise<void> {
    this.stream.destroy();
    await this.container.remove({ force: true }).catch(() => undefined);
  }
}
const FLOOR_EXEC = 'while read -r l; do /bin/true; echo .; done';
const FLOOR_BUILTIN = 'while read -r l; do echo .; done';

/**
 * `/bin/true` round trips, interleaved in blocks of 100 so that load drifts hit every path alike: the raw
 * floor (builtin; fork + exec), the binary judge agent and the sh judge agent (default policy `kill`).
 */
async function floorVsAgents(docker: Docker, binary: DockerDriver, shell: DockerDriver) {
  const label = `floor-${process.pid}`;
  const rawExec = await RawAttached.start(docker, FLOOR_EXEC, label);
  const rawBuiltin = await RawAttached.start(docker, FLOOR_BUILTIN, label);
  const sbBin = await binary.create({ image: IMAGE });
  const sbSh = await shell.create({ image: IMAGE });
  const sbKeep = await binary.create({ image: IMAGE, background: 'keep' });
  const paths: [string, () => Promise<unknown>][] = [
    ['raw_builtin', () => rawBuiltin.call()],
    ['raw_fork_exec', () => rawExec.call()],
    ['binary_agent', () => sbBin.exec({ argv: ['/bin/true'] })],
    ['binary_agent_keep', () => sbKeep.exec({ argv: ['/bin/true'] })],
    ['binary_agent_exclusive', () => sbBin.exec({ argv: ['/bin/true'], exclusive: true })],
    ['binary_agent_script', () => sbBin.exec({ script: 'echo hi; echo err >&2' })],
    ['shell_agent', () => sbSh.exec({ argv: ['/bin/true'] })],
    ['shell_agent_script', () => sbSh.exec({ script: 'echo hi; echo err >&2' })],
  ];
  const xs: Record<string, number[]> = Object.fromEntries(paths.map(([k]) => [k, []]));
  try {
    for (const [, f] of paths) for (let i = 0; i < 20; i++) await f(); // warm up
    for (let block = 0; block < N_FLOOR / 100; block++) {
      for (const [k, f] of paths) for (let i = 0; i < 100; i++) xs[k]!.push(await time(f));
    }
  } finally {
    await Promise.all([rawExec.stop(), rawBuiltin.stop(), sbBin.destroy(), sbSh.destroy(), sbKeep.destroy()]);
  }
  const st = Object.fromEntries(Object.entries(xs).map(([k, v]) => [k, stat(v)])) as Record<(typeof paths)[number][0] | string, ReturnType<typeof stat>>;
  const row = (k: string) => st[k] ?? stat([]);
  const p50 = (k: string) => pct(xs[k]!, 50);
  return {
    raw_builtin: row('raw_builtin'),
    raw_fork_exec: row('raw_fork_exec'),
    binary_agent: row('binary_agent'),
    binary_agent_keep: row('binary_agent_keep'),
    binary_agent_exclusive: row('binary_agent_exclusive'),
    binary_agent_script: row('binary_agent_script'),
    shell_agent: row('shell_agent'),
    shell_agent_script: row('shell_agent_script'),
    binary_over_floor_p50: r2(p50('binary_agent') / p50('raw_fork_exec')),
    shell_over_floor_p50: r2(p50('shell_agent') / p50('raw_fork_exec')),
    shell_over_binary_p50: r2(p50('shell_agent') / p50('binary_agent')),
  };
}

/** Commands/s of 64 raw attached fork + exec loops, all busy: the aggregate floor on this machine. */
async function floorFleet(docker: Docker) {
  const label = `floor-fleet-${process.pid}`;
  const raws: RawAttached[] = [];
  for (let i = 0; i < WS_FLEET; i += 8)
    raws.push(...(await Promise.all(Array.from({ length: Math.min(8, WS_FLEET - i) }, () => RawAttached.start(docker, FLOOR_EXEC, label)))));
  let count = 0;
  const t0 = performance.now();
  const end = t0 + WS_FLEET_SECONDS * 1000;
  try {
    await Promise.all(
      raws.map(async (r) => {
        while (performance.now() < end) {
          await r.call();
          count += 1;
        }
      }),
    );
  } finally {
    await Promise.all(raws.map((r) => r.stop()));
  }
  return { sandboxes: raws.length, commands: count, commands_per_s: Math.round(count / ((performance.now() - t0) / 1000)) };
}

/**
 * 64 shell-v0 sessions over one server's WebSocket, each stepping `bash {command: "/bin/true"}` as fast as
 * its replies come (shaping none: one command per step), for the given agent: whole-stack commands/s.
 *
 * Only steps are timed. shell-v0 ends an episode at 20 tool calls, so the run is a series of phases: every
 * session resets (reuse 'wipe': in place; untimed), the pool is left to settle (no wipe or creation in
 * flight), then all sessions step 17 times each under the clock. Before this, resets ran inside the timed
 * window with reuse 'replace': the container churn (runc create and teardown, ~0.4 s of CPU each) took most
 * of both cores and the figure was the churn's, not the step path's (91/s, 2026-12-02).
 */
async function wsFleet(agent: 'binary' | 'shell') {
  process.env.SANDGYM_SANDBOX_AGENT = agent;
  const built = await buildApp({
    driver: 'docker',
    pools: { min_idle: WS_FLEET, max_total: WS_FLEET, refill_concurrency: 4 },
    log_level: 'error',
    host: '127.0.0.1',
    port: 0,
  });
  delete process.env.SANDGYM_SANDBOX_AGENT;
  await built.app.listen({ host: '127.0.0.1', port: 0 });
  const service = built.core.sandbox as PooledSandboxService;
  const sum = (k: 'idle' | 'creating' | 'wiping') => service.pools.stats().reduce((n, s) => n + (s[k] as number), 0);
  const settled = async () => {
    const t0 = performance.now();
    while ((sum('creating') > 0 || sum('wiping') > 0) && performance.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 50));
  };
  const clients = await Promise.all(Array.from({ length: 8 }, () => connect(built.url())));
  const lat: number[] = [];
  let count = 0;
  let elapsed = 0;
  let phases = 0;
  const STEPS_PER_PHASE = 17;
  try {
    const t0 = performance.now();
    while (sum('idle') < WS_FLEET && performance.now() - t0 < 600_000) await new Promise((r) => setTimeout(r, 100));
    const envs = await Promise.all(Array.from({ length: WS_FLEET }, (_, i) => clients[i % clients.length]!.make<string>('shell-v0', { reuse: 'wipe' })));
    const step = { name: 'bash', arguments: { command: '/bin/true' } };
    const reset = async () => {
      await Promise.all(envs.map((env) => env.reset({ options: { task_id: 'create-file' } })));
      await settled();
    };
    await reset();
    for (const env of envs) for (let i = 0; i < 3; i++) await env.step(step); // warm up
    while (elapsed < WS_FLEET_SECONDS) {
      await reset();
      if (process.env.BENCH_TRACE) console.error(`${new Date().toISOString()} phase ${phases + 1} start`);
      const start = performance.now();
      await Promise.all(
        envs.map(async (env) => {
          for (let n = 0; n < STEPS_PER_PHASE; n++) {
            const t = performance.now();
            const r = await env.step(step);
            if (!String(r.observation).startsWith('exit code: 0')) throw new Error(`bench step failed: ${String(r.observation).slice(0, 200)}`);
            lat.push(performance.now() - t);
            count += 1;
          }
        }),
      );
      elapsed += (performance.now() - start) / 1000;
      phases += 1;
      if (process.env.BENCH_TRACE) console.error(`${new Date().toISOString()} phase ${phases}: ${((performance.now() - start) / 1000).toFixed(2)} s`);
    }
    await Promise.all(envs.map((e) => e.close()));
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await built.app.close();
  }
  return { agent, sessions: WS_FLEET, phases, steps: count, timed_s: r2(elapsed), steps_per_s: Math.round(count / elapsed), step_latency: stat(lat) };
}

const docker = new Docker();
const binaryDriver = new DockerDriver({ instanceId: `bench-bin-${Date.now().toString(36)}`, createConcurrency: 4, agent: 'binary' });
const shellDriver = new DockerDriver({ instanceId: `bench-sh-${Date.now().toString(36)}`, createConcurrency: 4, agent: 'shell' });
const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7);
if (only === 'ws-fleet') {
  // `npx tsx bench/sandbox.bench.ts --only=ws-fleet [--quick]`: the whole-stack 64-session fleet alone, binary agent (for profiling).
  console.log(JSON.stringify(await wsFleet('binary'), null, 2));
  await Promise.all([binaryDriver.close(), shellDriver.close()]);
  process.exit(0);
}
if (only === 'floor') {
  // `npx tsx bench/sandbox.bench.ts --only=floor [--quick]`: the issue-19 rows alone (floor, agents, 64-sandbox fleets).
  const load = os.loadavg();
  const floor = {
    when: new Date().toISOString(),
    loadavg_at_start: load.map(r2),
    agents: await floorVsAgents(docker, binaryDriver, shellDriver),
    floor_fleet: await floorFleet(docker),
    ws_fleet_binary: await wsFleet('binary'),
    ws_fleet_shell: await wsFleet('shell'),
    loadavg_at_end: os.loadavg().map(r2),
  };
  await Promise.all([binaryDriver.close(), shellDriver.close()]);
  console.log(JSON.stringify(floor, null, 2));
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'sandbox-floor.json'), `${JSON.stringify(floor, null, 2)}\n`);
  process.exit(0);
}

const driver = binaryDriver;
const load0 = os.loadavg();
const results = {
  when: new Date().toISOString(),
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? '', loadavg_at_start: load0.map(r2) },
  channel_vs_docker_exec: await channelVsExec(driver),
  floor: await floorVsAgents(docker, binaryDriver, shellDriver),
  floor_fleet: await floorFleet(docker),
  ws_fleet_binary: await wsFleet('binary'),
  ws_fleet_shell: await wsFleet('shell'),
  identity: await identityCost(driver),
  pool: await poolVsCold(driver),
  fleet: await fleet(driver),
  bwrap: await bwrap(),
  shell_v0: {
    docker_replace: await shellEpisodes('docker', 'replace'),
    docker_wipe: await shellEpisodes('docker', 'wipe'),
    local_replace: await shellEpisodes('local', 'replace'),
  },
  loadavg_at_end: os.loadavg().map(r2),
};
await Promise.all([binaryDriver.close(), shellDriver.close()]);

const c = results.channel_vs_docker_exec;
const rows: [string, string, string][] = [
  ['channel round trip (`true`, docker, busybox)', `${c.channel.p50_ms} ms`, `${c.channel.p99_ms} ms`],
  ['`docker exec` via dockerode (same command)', `${c.docker_exec.p50_ms} ms`, `${c.docker_exec.p99_ms} ms`],
  ['channel speed-up (p50 ratio)', `${c.ratio_p50}x`, ''],
  ['floor: raw attached process, builtin reply (the stream alone)', `${results.floor.raw_builtin.p50_ms} ms`, `${results.floor.raw_builtin.p99_ms} ms`],
  ['floor: raw attached process, fork + exec `/bin/true`', `${results.floor.raw_fork_exec.p50_ms} ms`, `${results.floor.raw_fork_exec.p99_ms} ms`],
  ['binary judge agent, `/bin/true`, policy kill (default)', `${results.floor.binary_agent.p50_ms} ms`, `${results.floor.binary_agent.p99_ms} ms`],
  ['binary judge agent, policy keep / exclusive', `${results.floor.binary_agent_keep.p50_ms} / ${results.floor.binary_agent_exclusive.p50_ms} ms`, ''],
  ['sh judge agent, `/bin/true`, policy kill', `${results.floor.shell_agent.p50_ms} ms`, `${results.floor.shell_agent.p99_ms} ms`],
  [
    'binary / floor, sh / floor, sh / binary (p50)',
    `${results.floor.binary_over_floor_p50}x / ${results.floor.shell_over_floor_p50}x / ${results.floor.shell_over_binary_p50}x`,
    '',
  ],
  [`floor: commands/s, ${WS_FLEET} raw attached fork + exec loops`, `${results.floor_fleet.commands_per_s}/s`, ''],
  [
    `shell-v0 steps/s over the WebSocket, ${WS_FLEET} sessions, bash /bin/true, binary agent`,
    `${results.ws_fleet_binary.steps_per_s}/s`,
    `lat p50 ${results.ws_fleet_binary.step_latency.p50_ms} ms`,
  ],
  [`… same, sh agent`, `${results.ws_fleet_shell.steps_per_s}/s`, `lat p50 ${results.ws_fleet_shell.step_latency.p50_ms} ms`],
  ['channel `true`, policy keep (drop to the agent uid only)', `${results.identity.channel.keep?.p50_ms} ms`, `${results.identity.channel.keep?.p99_ms} ms`],
  ['channel `true`, policy kill (default: + /proc scan after)', `${results.identity.channel.kill?.p50_ms} ms`, `${results.identity.channel.kill?.p99_ms} ms`],
  ['channel `true`, exclusive (+ scan before)', `${results.identity.channel.exclusive?.p50_ms} ms`, `${results.identity.channel.exclusive?.p99_ms} ms`],
  [
    'in container: `setsid true` / `setsid nsenter -S -G true` / one /proc scan (µs each)',
    `${results.identity.in_container_us_per_iteration.setsid} / ${results.identity.in_container_us_per_iteration.drop} / ${results.identity.in_container_us_per_iteration.scan}`,
    '',
  ],
  ['warm pool acquire', `${results.pool.warm_acquire.p50_ms} ms`, `${results.pool.warm_acquire.p99_ms} ms`],
  ['cold create + start + channel ready', `${results.pool.cold_create_start.p50_ms} ms`, `${results.pool.cold_create_start.p99_ms} ms`],
  [`aggregate commands/s, ${FLEET} sandboxes`, `${results.fleet.commands_per_s}/s`, `lat p99 ${results.fleet.latency.p99_ms} ms`],
  ['bubblewrap spawn (`bwrap ... true`)', `${results.bwrap.bwrap_true.p50_ms} ms`, `${results.bwrap.bwrap_true.p99_ms} ms`],
  ['local sandbox ready (prlimit+bwrap+agent hello)', `${results.bwrap.sandbox_ready.p50_ms} ms`, `${results.bwrap.sandbox_ready.p99_ms} ms`],
  ['local channel round trip', `${results.bwrap.channel_round_trip.p50_ms} ms`, `${results.bwrap.channel_round_trip.p99_ms} ms`],
  [
    'shell-v0 episode over WS (make+reset+5 steps+close), docker, replace, warm pool',
    `${results.shell_v0.docker_replace.episode.p50_ms} ms`,
    `${results.shell_v0.docker_replace.episode.p99_ms} ms`,
  ],
  ['shell-v0 step over WS (bash + check), docker', `${results.shell_v0.docker_replace.step.p50_ms} ms`, `${results.shell_v0.docker_replace.step.p99_ms} ms`],
  ['shell-v0 episode, docker, reuse wipe', `${results.shell_v0.docker_wipe.episode.p50_ms} ms`, `${results.shell_v0.docker_wipe.episode.p99_ms} ms`],
  [
    'shell-v0 episode, local (bubblewrap), replace',
    `${results.shell_v0.local_replace.episode.p50_ms} ms`,
    `${results.shell_v0.local_replace.episode.p99_ms} ms`,
  ],
];
console.log(`\n| metric | p50 | p99 |\n|---|---|---|`);
for (const [a, b, d] of rows) console.log(`| ${a} | ${b} | ${d} |`);
console.log(`\nload average at start ${load0.map(r2).join(' ')}, at end ${results.loadavg_at_end.join(' ')} (${os.cpus().length} CPUs)`);
const out = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
await mkdir(out, { recursive: true });
await writeFile(path.join(out, 'sandbox.json'), `${JSON.stringify(results, null, 2)}\n`);
console.log(`wrote ${path.join(out, 'sandbox.json')}`);
