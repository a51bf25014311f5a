// Per-step overhead of sandgym over a raw WebSocket, measured in ONE run on loopback:
//   - step round trip p50/p99 on test/noop-v0 (JSON and msgpack, one request in flight) against a bare
//     `ws` echo server answering the very same frames (the floor), and the ratio between the two; the
//     same for `ping` (the protocol path without a session: decode, validate, encode, write);
//   - pipelined steps/s on one session and over 64 sessions;
//   - `batch` of 64 env-steps per frame, env-steps/s;
//   - memory per idle session (RSS growth of the server process over 10,000 idle sessions).
// The sandgym server and the echo server each run in their own process (the CLI, `node bin/sandgym.js
// serve`), so the load generator here and the server never share an event loop.
// Asserts nothing: prints a markdown table and writes bench/results/ws-overhead.json.
//
// Run: npx tsx bench/ws-overhead.bench.ts   (or `npm run bench` for every benchmark)
// Env: BENCH_QUICK=1 shrinks every phase (smoke run); BENCH_CPU_PROF=dir profiles the server process;
//      BENCH_PHASES=rtt,client,pipelined,batch,memory runs only those phases (default: all), e.g. for
//      interleaved before/after repetitions on a busy machine (compare server CPU per step: it is steadier
//      than latency or throughput when other work shares the cores).

import { mkdir, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { connect } from '../clients/ts/src/index.js';
import { encodeJson, encodeMsgpack, PROTOCOL_VERSIONS } from '../protocol/src/index.js';
import { cpuMicros, REPO_ROOT, rssBytes, startEcho, startSandgym, type ServerProcess } from './lib/processes.js';
import { median, round, summarize, type LatencySummary } from './lib/stats.js';
import { Driver, looksLikeError } from './lib/ws-driver.js';

type Encoding = 'json' | 'msgpack';
const ENCODINGS: Encoding[] = ['json', 'msgpack'];
const QUICK = process.env.BENCH_QUICK === '1';
const scale = (n: number) => (QUICK ? Math.max(1, Math.floor(n / 20)) : n);

const SEQ_WARMUP = scale(3_000);
const SEQ_N = scale(20_000);
/** Round trips per side before switching between sandgym and the echo floor. */
const SEQ_ROUND = 500;
const PIPE_TOTAL = scale(200_000);
const PIPE_WINDOW = 256;
const SESSIONS = 64;
const BATCH_FRAMES = scale(4_000);
const BATCH_WINDOW = 8;
const IDLE_SESSIONS = QUICK ? 1_000 : 10_000;
const IDLE_CONNECTIONS = 10;
const PHASES = new Set((process.env.BENCH_PHASES ?? 'rtt,client,pipelined,batch,memory').split(',').map((p) => p.trim()));

const enc = (encoding: Encoding, v: unknown) => (encoding === 'msgpack' ? encodeMsgpack(v) : encodeJson(v));

interface Results {
  /** loadavg: 1-minute load average at start and end; the machine may be shared, read numbers in its light. */
  machine: { cpus: number; cpu_model: string; mem_gib: number; node: string; date: string; loadavg_start: number; loadavg_end: number };
  command: string;
  note: string;
  /** *_cpu_us: server-process CPU time (user+system, /proc) per step or frame: steady even on a busy machine. */
  rtt: Record<
    Encoding,
    {
      sandgym: LatencySummary;
      echo: LatencySummary;
      ping: LatencySummary;
      frame_bytes: number;
      p50_ratio: number;
      p99_ratio: number;
      ping_p50_ratio: number;
      sandgym_cpu_us_per_step: number;
      echo_cpu_us_per_frame: number;
    }
  >;
  ts_client_rtt: Record<Encoding, LatencySummary>;
  pipelined: Record<
    Encoding,
    {
      one_session_steps_per_s: number;
      sessions_64_steps_per_s: number;
      window: number;
      one_session_cpu_us_per_step: number;
      sessions_64_cpu_us_per_step: number;
    }
  >;
  batch: Record<Encoding, { env_steps_per_s: number; env_steps_per_s_one_in_flight: number; batch_size: number; window: number; cpu_us_per_env_step: number }>;
  memory: { idle_sessions: number; connections: number; rss_before_mib: number; rss_after_mib: number; bytes_per_session: number };
}

async function hello(d: Driver, encoding: Encoding): Promise<void> {
  const r = await d.request(enc(encoding, { id: 0, type: 'hello', versions: [...PROTOCOL_VERSIONS], client: { name: 'bench', version: '0' } }));
  if (r.type !== 'result') throw new Error(`hello failed: ${JSON.stringify(r)}`);
}

/** Makes and resets `n` noop sessions on one connection, pipelined. */
async function makeSessions(d: Driver, encoding: Encoding, n: number, firstId = 1): Promise<string[]> {
  const sessions: string[] = [];
  const chunk = 250;
  for (let start = 0; start < n; start += chunk) {
    const count = Math.min(chunk, n - start);
    const made = await d.requestMany(Array.from({ length: count }, (_, i) => enc(encoding, { id: firstId + start + i, type: 'make', env_id: 'test/noop-v0' })));
    const ids = made.map((m) => {
      if (m.type !== 'result') throw new Error(`make failed: ${JSON.stringify(m)}`);
      return m.result.session as string;
    });
    const resets = await d.requestMany(ids.map((s, i) => enc(encoding, { id: firstId + n + start + i, type: 'reset', session: s })));
    for (const r of resets) if (r.type !== 'result') throw new Error(`reset failed: ${JSON.stringify(r)}`);
    sessions.push(...ids);
  }
  return sessions;
}

/** Runs `fn` and returns its result plus the CPU time the process `pid` spent meanwhile. */
async function withCpu<T>(pid: number, fn: () => Promise<T>): Promise<[T, number]> {
  const before = await cpuMicros(pid);
  const out = await fn();
  return [out, (await cpuMicros(pid)) - before];
}

const stepFrame = (encoding: Encoding, session: string) => (i: number) => enc(encoding, { id: (i % 0x7fff_ffff) + 1, type: 'step', session, action: 0 });

async function measureRtt(sandgym: ServerProcess, echo: ServerProcess, encoding: Encoding): Promise<Results['rtt'][Encoding]> {
  const d = await Driver.open(sandgym.url);
  await hello(d, encoding);
  const [session] = await makeSessions(d, encoding, 1, 100);
  const make = stepFrame(encoding, session!);
  const ping = (i: number) => enc(encoding, { id: (i % 0x7fff_ffff) + 1, type: 'ping' });
  const e = await Driver.open(echo.url);
  // Warm both paths (JIT, socket buffers) before measuring; then alternate so drift hits both alike.
  await d.sequential(SEQ_WARMUP, make, looksLikeError);
  await d.sequential(SEQ_WARMUP, ping, looksLikeError);
  await e.sequential(SEQ_WARMUP, make);
  // Alternate in short rounds so that load drift on a shared machine hits both sides alike.
  const rounds = Math.max(2, Math.floor(SEQ_N / SEQ_ROUND));
  const per = Math.floor(SEQ_N / rounds);
  const sandgymSamples: Float64Array[] = [];
  const echoSamples: Float64Array[] = [];
  const pingSamples: Float64Array[] = [];
  let sandgymCpu = 0;
  let echoCpu = 0;
  let errors = 0;
  for (let r = 0; r < rounds; r++) {
    const [s, sc] = await withCpu(sandgym.pid, () => d.sequential(per, make, looksLikeError));
    const [x, ec] = await withCpu(echo.pid, () => e.sequential(per, make));
    const p = await d.sequential(per, ping, looksLikeError);
    pingSamples.push(p.samples);
    sandgymSamples.push(s.samples);
    echoSamples.push(x.samples);
    sandgymCpu += sc;
    echoCpu += ec;
    errors += s.errors + p.errors;
  }
  if (errors > 0) throw new Error(`${errors} step errors in the RTT phase`);
  const sandgymSummary = summarize(concat(...sandgymSamples));
  const echoSummary = summarize(concat(...echoSamples));
  const pingSummary = summarize(concat(...pingSamples));
  const frame = make(1);
  await Promise.all([d.close(), e.close()]);
  return {
    sandgym: sandgymSummary,
    echo: echoSummary,
    ping: pingSummary,
    frame_bytes: typeof frame === 'string' ? Buffer.byteLength(frame) : frame.byteLength,
    p50_ratio: round(sandgymSummary.p50_us / echoSummary.p50_us, 2),
    p99_ratio: round(sandgymSummary.p99_us / echoSummary.p99_us, 2),
    ping_p50_ratio: round(pingSummary.p50_us / echoSummary.p50_us, 2),
    sandgym_cpu_us_per_step: round(sandgymCpu / (rounds * per)),
    echo_cpu_us_per_frame: round(echoCpu / (rounds * per)),
  };
}

async function measureTsClient(sandgym: ServerProcess, encoding: Encoding): Promise<LatencySummary> {
  const client = await connect(sandgym.url, { encoding });
  const env = await client.make('test/noop-v0');
  await env.reset();
  const n = scale(10_000);
  for (let i = 0; i < SEQ_WARMUP; i++) await env.step(0);
  const samples = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await env.step(0);
    samples[i] = (performance.now() - t0) * 1000;
  }
  await client.close();
  return summarize(samples);
}

async function measurePipelined(sandgym: ServerProcess, encoding: Encoding): Promise<Results['pipelined'][Encoding]> {
  const d = await Driver.open(sandgym.url);
  await hello(d, encoding);
  const sessions = await makeSessions(d, encoding, SESSIONS, 1000);
  const one = stepFrame(encoding, sessions[0]!);
  await d.pipelined(scale(20_000), PIPE_WINDOW, one, looksLikeError);
  const [r1, c1] = await withCpu(sandgym.pid, () => d.pipelined(PIPE_TOTAL, PIPE_WINDOW, one, looksLikeError));
  const many = (i: number) => enc(encoding, { id: (i % 0x7fff_ffff) + 1, type: 'step', session: sessions[i % SESSIONS], action: 0 });
  await d.pipelined(scale(20_000), PIPE_WINDOW, many, looksLikeError);
  const [r64, c64] = await withCpu(sandgym.pid, () => d.pipelined(PIPE_TOTAL, PIPE_WINDOW, many, looksLikeError));
  if (r1.errors + r64.errors > 0) throw new Error(`${r1.errors + r64.errors} step errors in the pipelined phase`);
  await d.close();
  return {
    one_session_steps_per_s: Math.round(PIPE_TOTAL / (r1.elapsed_ms / 1000)),
    sessions_64_steps_per_s: Math.round(PIPE_TOTAL / (r64.elapsed_ms / 1000)),
    window: PIPE_WINDOW,
    one_session_cpu_us_per_step: round(c1 / PIPE_TOTAL, 2),
    sessions_64_cpu_us_per_step: round(c64 / PIPE_TOTAL, 2),
  };
}

async function measureBatch(sandgym: ServerProcess, encoding: Encoding): Promise<Results['batch'][Encoding]> {
  const d = await Driver.open(sandgym.url);
  await hello(d, encoding);
  const sessions = await makeSessions(d, encoding, SESSIONS, 5000);
  const items = sessions.map((session) => ({ type: 'step', session, action: 0 }));
  const make = (i: number) => enc(encoding, { id: (i % 0x7fff_ffff) + 1, type: 'batch', requests: items });
  // Item errors are inside the result; any "error" in a reply frame counts the frame as failed.
  const sample = await d.request(make(0));
  if (sample.type !== 'result' || sample.result.results.length !== SESSIONS || sample.result.results.some((r: { type: string }) => r.type !== 'result')) {
    throw new Error(`batch failed: ${JSON.stringify(sample).slice(0, 500)}`);
  }
  await d.pipelined(scale(500), BATCH_WINDOW, make, looksLikeError);
  const [piped, cpu] = await withCpu(sandgym.pid, () => d.pipelined(BATCH_FRAMES, BATCH_WINDOW, make, looksLikeError));
  const single = await d.pipelined(Math.floor(BATCH_FRAMES / 2), 1, make, looksLikeError);
  if (piped.errors + single.errors > 0) throw new Error(`${piped.errors + single.errors} failed batch frames`);
  await d.close();
  return {
    env_steps_per_s: Math.round((BATCH_FRAMES * SESSIONS) / (piped.elapsed_ms / 1000)),
    env_steps_per_s_one_in_flight: Math.round((Math.floor(BATCH_FRAMES / 2) * SESSIONS) / (single.elapsed_ms / 1000)),
    batch_size: SESSIONS,
    window: BATCH_WINDOW,
    cpu_us_per_env_step: round(cpu / (BATCH_FRAMES * SESSIONS), 2),
  };
}

async function sampleRss(pid: number, samples = 5, gapMs = 200): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < samples; i++) {
    xs.push(await rssBytes(pid));
    await sleep(gapMs);
  }
  return median(xs);
}

/** Fresh server: RSS with connections open and handshaken, then with IDLE_SESSIONS made and reset. */
async function measureMemory(configPath: string): Promise<Results['memory']> {
  const server = await startSandgym(['--config', configPath]);
  try {
    const drivers = await Promise.all(Array.from({ length: IDLE_CONNECTIONS }, () => Driver.open(server.url)));
    for (const d of drivers) await hello(d, 'msgpack');
    // Warm the make/reset path (JIT, lazily built structures) with a few sessions, then close them.
    const warm = await makeSessions(drivers[0]!, 'msgpack', 200, 1);
    await drivers[0]!.requestMany(warm.map((s, i) => enc('msgpack', { id: 10_000 + i, type: 'close', session: s })));
    await sleep(1_000);
    const before = await sampleRss(server.pid);
    const per = IDLE_SESSIONS / IDLE_CONNECTIONS;
    await Promise.all(drivers.map((d) => makeSessions(d, 'msgpack', per, 100_000)));
    await sleep(2_000);
    const after = await sampleRss(server.pid);
    await Promise.all(drivers.map((d) => d.close()));
    return {
      idle_sessions: IDLE_SESSIONS,
      connections: IDLE_CONNECTIONS,
      rss_before_mib: round(before / 2 ** 20),
      rss_after_mib: round(after / 2 ** 20),
      bytes_per_session: Math.round((after - before) / IDLE_SESSIONS),
    };
  } finally {
    await server.stop();
  }
}

function concat(...parts: Float64Array[]): Float64Array {
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

const fmt = (n: number) => n.toLocaleString('en-US');

function table(r: Results): string {
  const rows: string[][] = [['metric', 'JSON', 'msgpack', 'target']];
  const both = (f: (e: Encoding) => string) => ENCODINGS.map(f);
  rows.push(['echo floor RTT p50 / p99 (µs)', ...both((e) => `${r.rtt[e].echo.p50_us} / ${r.rtt[e].echo.p99_us}`), '']);
  rows.push(['step RTT p50 / p99 (µs)', ...both((e) => `${r.rtt[e].sandgym.p50_us} / ${r.rtt[e].sandgym.p99_us}`), '']);
  rows.push(['step / echo ratio p50 (p99)', ...both((e) => `${r.rtt[e].p50_ratio}× (${r.rtt[e].p99_ratio}×)`), 'p50 ≤ 1.5×']);
  rows.push(['ping RTT p50 (µs), ratio to echo', ...both((e) => `${r.rtt[e].ping.p50_us} = ${r.rtt[e].ping_p50_ratio}×`), '']);
  rows.push(['step frame size (bytes)', ...both((e) => String(r.rtt[e].frame_bytes)), '']);
  rows.push([
    'server CPU per sequential step: sandgym / echo per frame (µs)',
    ...both((e) => `${r.rtt[e].sandgym_cpu_us_per_step} / ${r.rtt[e].echo_cpu_us_per_frame}`),
    '',
  ]);
  rows.push(['TS client step RTT p50 / p99 (µs)', ...both((e) => `${r.ts_client_rtt[e].p50_us} / ${r.ts_client_rtt[e].p99_us}`), '']);
  rows.push([`pipelined steps/s, 1 session (${PIPE_WINDOW} in flight)`, ...both((e) => fmt(r.pipelined[e].one_session_steps_per_s)), '']);
  rows.push([`pipelined steps/s, 64 sessions (${PIPE_WINDOW} in flight)`, ...both((e) => fmt(r.pipelined[e].sessions_64_steps_per_s)), '']);
  rows.push([
    'server CPU per pipelined step, 1 / 64 sessions (µs)',
    ...both((e) => `${r.pipelined[e].one_session_cpu_us_per_step} / ${r.pipelined[e].sessions_64_cpu_us_per_step}`),
    '',
  ]);
  rows.push([`batch of 64: env-steps/s (${BATCH_WINDOW} frames in flight)`, ...both((e) => fmt(r.batch[e].env_steps_per_s)), '≥ 100,000']);
  rows.push(['batch of 64: env-steps/s (1 frame in flight)', ...both((e) => fmt(r.batch[e].env_steps_per_s_one_in_flight)), '']);
  rows.push([
    'server CPU per env-step in batch (µs) → env-steps/s per core',
    ...both((e) => `${r.batch[e].cpu_us_per_env_step} → ${fmt(Math.round(1e6 / r.batch[e].cpu_us_per_env_step))}`),
    '',
  ]);
  rows.push([
    `memory per idle session (${fmt(r.memory.idle_sessions)} sessions, ${r.memory.connections} connections)`,
    `${fmt(r.memory.bytes_per_session)} B`,
    '(msgpack setup)',
    '≤ 10 KiB',
  ]);
  return rows.map((cells, i) => `| ${cells.join(' | ')} |${i === 0 ? `\n|${cells.map(() => '---').join('|')}|` : ''}`).join('\n');
}

async function main(): Promise<void> {
  const resultsDir = join(REPO_ROOT, 'bench/results');
  await mkdir(resultsDir, { recursive: true });
  const configPath = join(tmpdir(), `sandgym-ws-overhead-${process.pid}.json`);
  await writeFile(configPath, JSON.stringify({ max_sessions: IDLE_SESSIONS * 2, max_sessions_per_connection: IDLE_SESSIONS, log_level: 'warn' }));

  const profDir = process.env.BENCH_CPU_PROF;
  const sandgym = await startSandgym([], profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []);
  const echo = await startEcho();
  const log = (m: string) => process.stderr.write(`[ws-overhead] ${m}\n`);
  try {
    const results: Partial<Results> = {
      machine: {
        cpus: cpus().length,
        cpu_model: cpus()[0]?.model ?? '?',
        mem_gib: round(totalmem() / 2 ** 30),
        node: process.version,
        date: new Date().toISOString(),
        loadavg_start: round(loadavg()[0]!, 2),
        loadavg_end: 0,
      },
      command: 'npx tsx bench/ws-overhead.bench.ts',
      note: 'sandgym (CLI, --fixtures) and the ws echo floor each run in a separate process from the load generator; loopback; env test/noop-v0; round trips alternate between sandgym and the echo in rounds of 500 so load drift hits both',
      rtt: {} as Results['rtt'],
      ts_client_rtt: {} as Results['ts_client_rtt'],
      pipelined: {} as Results['pipelined'],
      batch: {} as Results['batch'],
    };
    for (const e of ENCODINGS) {
      if (PHASES.has('rtt')) {
        log(`step round trip (${e})`);
        results.rtt![e] = await measureRtt(sandgym, echo, e);
      }
      if (PHASES.has('client')) {
        log(`TS client round trip (${e})`);
        results.ts_client_rtt![e] = await measureTsClient(sandgym, e);
      }
      if (PHASES.has('pipelined')) {
        log(`pipelined (${e})`);
        results.pipelined![e] = await measurePipelined(sandgym, e);
      }
      if (PHASES.has('batch')) {
        log(`batch (${e})`);
        results.batch![e] = await measureBatch(sandgym, e);
      }
    }
    await Promise.all([sandgym.stop(), echo.stop()]);
    if (PHASES.has('memory')) {
      log(`memory over ${IDLE_SESSIONS} idle sessions (fresh server)`);
      results.memory = await measureMemory(configPath);
    }
    const full = results as Results;
    full.machine.loadavg_end = round(loadavg()[0]!, 2);
    const partial = !['rtt', 'client', 'pipelined', 'batch', 'memory'].every((p) => PHASES.has(p));
    // A partial run only prints its numbers (one JSON line): it never overwrites the full results.
    if (!partial) await writeFile(join(resultsDir, 'ws-overhead.json'), JSON.stringify(full, null, 2) + '\n');
    console.log(
      `## ws-overhead (${full.machine.cpus} × ${full.machine.cpu_model}, Node ${full.machine.node}, load average ${full.machine.loadavg_start} -> ${full.machine.loadavg_end}${QUICK ? ', QUICK run' : ''})\n`,
    );
    console.log(partial ? JSON.stringify(full) : table(full));
    console.log(`\n${full.note}. Command: \`${full.command}\`. Raw numbers: bench/results/ws-overhead.json`);
  } finally {
    await Promise.all([sandgym.stop(), echo.stop()]);
    await rm(configPath, { force: true });
  }
}

await main();
