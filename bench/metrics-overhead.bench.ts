// Step-path cost of the metrics (issue 15): the batch throughput benchmark of ws-overhead (batches of
// 64 env-steps of test/noop-v0, 8 frames in flight) against two server processes in ONE run: one with
// metrics (the default: episode hook, tracker, Prometheus counters and histograms on every step) and
// one started with --no-metrics (no observer: the hook builds no event). Rounds alternate between the
// two so drift on a shared machine hits both alike; server CPU per env-step is the steady number (all
// the server's threads, in ns from /proc/PID/task/*/schedstat: GC helpers included), env-steps/s is
// reported too. The ratio is taken per round (the two sides of one round ran back to back), and the
// median and spread of those ratios are reported. A /metrics scrape runs once per round.
// Asserts nothing: prints a markdown table and writes bench/results/metrics-overhead.json.
//
// Run: npx tsx bench/metrics-overhead.bench.ts   (or `npm run bench -- metrics-overhead`)
// Env: BENCH_QUICK=1 shrinks every phase (smoke run); BENCH_AA=1 runs both sides without metrics (an
//      A/A calibration: the ratio it prints is the setup's noise and bias on this machine);
//      BENCH_ROUNDS, BENCH_FRAMES override the rounds and the batch frames per round; BENCH_CONCURRENT=1
//      drives both servers at once in each round instead of one after the other (on a machine shared
//      with other work both then see the same contention: a tighter spread of the per-round ratios).
//      BENCH_ARMS=eld,process,--gc-metrics: attribution: one more metrics server per arm, driven in the
//      same rounds, each arm's ratio to --no-metrics printed too. An arm `default` is one more server
//      with the default metrics (with BENCH_AA=1: an A/A pair plus metrics servers in one run); `--flag` is a server started
//      with that serve flag; any other names parts of prom-client's process metrics that a preload
//      switches off (bench/lib/metrics-ablate.mjs: gc, eld, process; `a+b` both).
//      BENCH_CPU_PROF=DIR: every server writes a V8 CPU profile (node --cpu-prof) on exit into DIR/<side>.
//      BENCH_SERVER_NODE_ARGS: node options for every server.

import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { EnvRegistry } from '../envs/src/registry.js';
import { fixtureEnvs } from '../envs/src/fixtures/index.js';
import { encodeJson, PROTOCOL_VERSIONS } from '../protocol/src/index.js';
import { EpisodeObservers, type StepEvent } from '../server/src/observability/episode-events.js';
import { loopTurn, sameTurn } from '../server/src/observability/step-timing.js';
import { monoNow } from '../server/src/session/deadline.js';
import { EpisodeTracker } from '../server/src/observability/episode-tracker.js';
import { ServerMetrics } from '../server/src/observability/metrics.js';
import { REPO_ROOT, startSandgym, type ServerProcess } from './lib/processes.js';
import { median, round } from './lib/stats.js';
import { Driver, looksLikeError } from './lib/ws-driver.js';

const QUICK = process.env.BENCH_QUICK === '1';
const SESSIONS = 64;
const WINDOW = 8;
const FRAMES = Number(process.env.BENCH_FRAMES ?? (QUICK ? 200 : 3_000));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 2 : 15));
const CONCURRENT = process.env.BENCH_CONCURRENT === '1';
const ARMS = (process.env.BENCH_ARMS ?? '').split(',').filter((a) => a !== '');
const PROF_DIR = process.env.BENCH_CPU_PROF;
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
const ABLATE = new URL('./lib/metrics-ablate.mjs', import.meta.url).href;

/** CPU time of every thread of a process, µs (schedstat: ns resolution, unlike /proc/PID/stat's 10 ms ticks). */
async function cpuMicros(pid: number): Promise<number> {
  let ns = 0;
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    try {
      ns += Number((await readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8')).split(' ')[0]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return ns / 1000;
}

interface Side {
  name: string;
  server: ServerProcess;
  driver: Driver;
  make: (i: number) => string | Uint8Array;
  cpu_us_per_env_step: number[];
  env_steps_per_s: number[];
}

async function open(name: Side['name'], args: string[], nodeArgs: string[] = []): Promise<Side> {
  const server = await startSandgym(args, [...SERVER_NODE_ARGS, ...nodeArgs, ...(PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir', join(PROF_DIR, name)] : [])]);
  const d = await Driver.open(server.url);
  const hello = await d.request(encodeJson({ id: 0, type: 'hello', versions: [...PROTOCOL_VERSIONS], client: { name: 'bench', version: '0' } }));
  if (hello.type !== 'result') throw new Error(`hello failed: ${JSON.stringify(hello)}`);
  const made = await d.requestMany(Array.from({ length: SESSIONS }, (_, i) => encodeJson({ id: 1 + i, type: 'make', env_id: 'test/noop-v0' })));
  const sessions = made.map((m) => {
    if (m.type !== 'result') throw new Error(`make failed: ${JSON.stringify(m)}`);
    return m.result.session as string;
  });
  const resets = await d.requestMany(sessions.map((s, i) => encodeJson({ id: 1000 + i, type: 'reset', session: s })));
  for (const r of resets) if (r.type !== 'result') throw new Error(`reset failed: ${JSON.stringify(r)}`);
  const items = sessions.map((session) => ({ type: 'step', session, action: 0 }));
  const make = (i: number) => encodeJson({ id: (i % 0x7fff_ffff) + 1, type: 'batch', requests: items });
  const sample = await d.request(make(0));
  if (sample.type !== 'result' || sample.result.results.some((r: { type: string }) => r.type !== 'result'))
    throw new Error(`batch failed: ${JSON.stringify(sample).slice(0, 300)}`);
  // Warm-up (JIT, socket buffers).
  await d.pipelined(FRAMES / 4, WINDOW, make, looksLikeError);
  return { name, server, driver: d, make, cpu_us_per_env_step: [], env_steps_per_s: [] };
}

async function round1(s: Side): Promise<void> {
  const before = await cpuMicros(s.server.pid);
  const r = await s.driver.pipelined(FRAMES, WINDOW, s.make, looksLikeError);
  const cpu = (await cpuMicros(s.server.pid)) - before;
  if (r.errors > 0) throw new Error(`${r.errors} failed batch frames (${s.name})`);
  s.cpu_us_per_env_step.push(cpu / (FRAMES * SESSIONS));
  s.env_steps_per_s.push((FRAMES * SESSIONS) / (r.elapsed_ms / 1000));
}

/**
 * What metrics add to one step, in this process, as Session.step does it for a synchronous env: the
 * loop-iteration check and the sampler (step-timing.ts), the event object, and the fan-out to the
 * episode tracker and the metrics (N steps, best of 5), plus the end clock read times the share of
 * steps timed. The start clock read is not counted: every step does it (its deadline's start), and
 * here the steps' start times are synthetic (3 µs apart, a no-op step's pace) so that the clock's
 * noise does not swamp the rest.
 */
function observerNsPerStep(): { added: number; timedShare: number; clockNs: number } {
  const registry = new EnvRegistry();
  registry.registerAll(fixtureEnvs);
  const observers = new EpisodeObservers({ warn: () => undefined });
  const tracker = new EpisodeTracker();
  const src = {
    registry,
    sandbox: null,
    sessionCount: 1,
    connections: new Set<never>(),
    queuedRequests: () => 0,
    socketBytes: () => ({ read: 0, written: 0 }),
  };
  const metrics = new ServerMetrics(src, tracker, { processMetrics: false });
  observers.add(tracker);
  observers.add(metrics);
  const sampler = observers.sampling.samplerFor('test/noop-v0');
  observers.reset({ session_id: 's', env_id: 'test/noop-v0', episode_id: 'e', seed: undefined, options: {}, observation: 0, info: {}, duration_ms: 0, t: 0 });
  const info = {};
  const origin = performance.timeOrigin;
  const n = QUICK ? 200_000 : 2_000_000;
  let sink = 0;
  let timedSteps = 0;
  const clock = (): number => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) sink += monoNow();
    return Number(process.hrtime.bigint() - t0) / n;
  };
  const start = monoNow();
  const full = (): number => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const s0 = start + i * 0.003;
      const turn = loopTurn();
      const timed = observers.timeEveryStep || !sameTurn(turn) || sampler.take(s0);
      const now = timed ? monoNow() : Number.NaN;
      if (timed) timedSteps++;
      const e: StepEvent = {
        session_id: 's',
        env_id: 'test/noop-v0',
        episode_id: 'e',
        step_index: i,
        action: 0,
        observation: 0,
        reward: 0,
        terminated: false,
        truncated: false,
        info,
        duration_ms: now - s0,
        t: origin + (timed ? now : s0),
      };
      observers.step(e);
    }
    return Number(process.hrtime.bigint() - t0) / n;
  };
  let clockNs = Number.POSITIVE_INFINITY;
  let bestFull = Number.POSITIVE_INFINITY;
  for (let rep = 0; rep < 5; rep++) {
    clockNs = Math.min(clockNs, clock());
    sampler.reset();
    bestFull = Math.min(bestFull, full());
  }
  if (sink === 0) throw new Error('unreachable');
  // full() includes its timed steps' clock reads already.
  return { added: bestFull, timedShare: timedSteps / (5 * n), clockNs };
}

async function main(): Promise<void> {
  const { added: observerNs, timedShare, clockNs } = observerNsPerStep();
  const load0 = loadavg()[0]!;
  const off = await open('no_metrics', ['--no-metrics']);
  // BENCH_AA=1: both servers without metrics, to see this machine's noise and any bias of the setup.
  const on = await open('metrics', process.env.BENCH_AA === '1' ? ['--no-metrics'] : []);
  const arms: Side[] = [];
  for (const a of ARMS) {
    // `--flag`: a metrics server started with that serve flag; else parts to switch off by the preload.
    if (a === 'default') arms.push(await open(`metrics_default_${arms.length + 1}`, []));
    else if (a.startsWith('--')) arms.push(await open(`metrics_${a.slice(2).replace(/-/g, '_')}`, [a]));
    else arms.push(await open(`metrics_no_${a.replace(/\+/g, '_')}`, [], ['--import', `${ABLATE}?parts=${a.replace(/\+/g, ',')}`]));
  }
  const all = [off, on, ...arms];
  const metricsUrl = (process.env.BENCH_AA === '1' ? off : on).server.url.replace(/^ws/, 'http').replace(/\/v\d+\/ws$/, '/metrics');
  let scrapeBytes = 0;
  try {
    for (let i = 0; i < ROUNDS; i++) {
      // Rotate which side goes first, so none always gets the cooler machine.
      const order = all.map((_, j) => all[(i + j) % all.length] as Side);
      // BENCH_CONCURRENT=1: all sides at once, so all see the same moment of a shared machine.
      if (CONCURRENT) await Promise.all(order.map((s) => round1(s)));
      else for (const s of order) await round1(s);
      scrapeBytes = (await (await fetch(metricsUrl)).text()).length;
      for (const a of arms) await fetch(a.server.url.replace(/^ws/, 'http').replace(/\/v\d+\/ws$/, '/metrics'));
    }
  } finally {
    await Promise.all(all.map((s) => s.driver.close()));
    await Promise.all(all.map((s) => s.server.stop()));
  }
  const m = (xs: number[]) => median(xs);
  const cpuOff = m(off.cpu_us_per_env_step);
  const cpuOn = m(on.cpu_us_per_env_step);
  const tputOff = m(off.env_steps_per_s);
  const tputOn = m(on.env_steps_per_s);
  // Per-round ratios: the two sides of a round ran back to back, so machine drift mostly cancels.
  const cpuRatios = on.cpu_us_per_env_step.map((x, i) => x / (off.cpu_us_per_env_step[i] as number)).sort((a, b) => a - b);
  const tputRatios = on.env_steps_per_s.map((x, i) => x / (off.env_steps_per_s[i] as number)).sort((a, b) => a - b);
  const q = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] as number;
  const armRatios = arms.map((a) => {
    const r = a.cpu_us_per_env_step.map((x, i) => x / (off.cpu_us_per_env_step[i] as number)).sort((x, y) => x - y);
    return {
      arm: a.name,
      cpu_us_per_env_step: round(m(a.cpu_us_per_env_step), 3),
      cpu_ratio: round(m(r), 3),
      cpu_ratio_quartiles: [round(q(r, 0.25), 3), round(q(r, 0.75), 3)],
      rounds_cpu: a.cpu_us_per_env_step.map((x) => round(x, 3)),
    };
  });
  const results = {
    machine: {
      cpus: cpus().length,
      node: process.version,
      date: new Date().toISOString(),
      loadavg_start: round(load0, 2),
      loadavg_end: round(loadavg()[0]!, 2),
    },
    command: 'npx tsx bench/metrics-overhead.bench.ts',
    batch: { sessions: SESSIONS, window: WINDOW, frames_per_round: FRAMES, rounds: ROUNDS, concurrent: CONCURRENT },
    no_metrics: { cpu_us_per_env_step: round(cpuOff, 3), env_steps_per_s: Math.round(tputOff), rounds_cpu: off.cpu_us_per_env_step.map((x) => round(x, 3)) },
    metrics: { cpu_us_per_env_step: round(cpuOn, 3), env_steps_per_s: Math.round(tputOn), rounds_cpu: on.cpu_us_per_env_step.map((x) => round(x, 3)) },
    cpu_ratio_of_medians: round(cpuOn / cpuOff, 3),
    cpu_ratio: round(m(cpuRatios), 3),
    cpu_ratio_quartiles: [round(q(cpuRatios, 0.25), 3), round(q(cpuRatios, 0.75), 3)],
    cpu_ratio_range: [round(cpuRatios[0] as number, 3), round(cpuRatios[cpuRatios.length - 1] as number, 3)],
    throughput_ratio: round(m(tputRatios), 3),
    throughput_ratio_quartiles: [round(q(tputRatios, 0.25), 3), round(q(tputRatios, 0.75), 3)],
    scrape_bytes: scrapeBytes,
    observer_ns_per_step: round(observerNs, 1),
    observer_timed_share: round(timedShare, 5),
    clock_read_ns: round(clockNs, 1),
    arms: armRatios,
    observer_share_of_server_cpu: round(observerNs / 1000 / cpuOff, 4),
  };
  const table = [
    `| batch of 64 env-steps, 8 frames in flight (${ROUNDS} ${CONCURRENT ? 'concurrent' : 'alternating'} rounds of ${FRAMES * SESSIONS} env-steps; medians) | --no-metrics | metrics (default) | ratio: median of rounds [quartiles] (range) |`,
    '|---|---|---|---|',
    `| server CPU per env-step (µs, all threads) | ${results.no_metrics.cpu_us_per_env_step} | ${results.metrics.cpu_us_per_env_step} | ${results.cpu_ratio} [${results.cpu_ratio_quartiles.join('-')}] (${results.cpu_ratio_range.join('-')}) |`,
    `| env-steps/s | ${results.no_metrics.env_steps_per_s.toLocaleString('en-US')} | ${results.metrics.env_steps_per_s.toLocaleString('en-US')} | ${results.throughput_ratio} [${results.throughput_ratio_quartiles.join('-')}] |`,
    `| added per step in-process (sampling, event, tracker, metrics; ${round(100 * timedShare, 2)}% of steps timed), best of 5 (ns) | - | ${results.observer_ns_per_step} | ${results.observer_share_of_server_cpu} of a --no-metrics env-step |`,
    ...armRatios.map(
      (a) =>
        `| arm ${a.arm}: server CPU per env-step (µs) | ${results.no_metrics.cpu_us_per_env_step} | ${a.cpu_us_per_env_step} | ${a.cpu_ratio} [${a.cpu_ratio_quartiles.join('-')}] |`,
    ),
  ].join('\n');
  process.stdout.write(
    `${table}\n\nclock read (monoNow: process.hrtime) ${results.clock_read_ns} ns; load average ${results.machine.loadavg_start} -> ${results.machine.loadavg_end}; /metrics exposition ${scrapeBytes} bytes\n`,
  );
  const dir = join(REPO_ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'metrics-overhead.json'), `${JSON.stringify(results, null, 2)}\n`);
}

await main();
