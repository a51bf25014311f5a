// Cost of the trajectory archive (issue 15) per step, measured against a server without it in the same
// run: two server processes, one started with --archive DIR (recording, serialising, gzip and writing
// batches: all of it counts, the gzip thread pool included, since CPU is read from /proc for the whole
// process) and one without. Rounds alternate between the two so drift on a shared machine hits both.
//   math-v0: batches of 64 sessions x [reset, step] (one episode per session per frame, 8 frames in
//            flight); server CPU per env-step (a reset and its step count as one) and episodes/s.
//   code-v0 (Docker): sequential episodes of 8 bash steps, a write_file and a submit (graded); server
//            CPU per step and wall time per episode. Skipped without Docker and its python image.
// Asserts nothing: prints markdown tables and writes bench/results/archive-overhead.json.
//
// Run: npx tsx bench/archive-overhead.bench.ts   (or `npm run bench -- archive-overhead`)
// Env: BENCH_QUICK=1 shrinks every phase (smoke run); BENCH_SKIP_CODE=1 / BENCH_SKIP_MATH=1 skip a part;
// BENCH_BASELINE_TREE=DIR adds a third math-v0 server, archiving with the code of another checkout (e.g.
// `git worktree add --detach DIR <commit>` and a node_modules link): old and new archive code in one run.

import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGzip } from 'node:zlib';
import Docker from 'dockerode';
import { connect } from '../clients/ts/src/index.js';
import { encodeJson, PROTOCOL_VERSIONS } from '../protocol/src/index.js';
import { ARCHIVE_DEFAULTS } from '../server/src/observability/archive/options.js';
import type { EpisodeRecord } from '../server/src/observability/archive/format.js';
import { readArchive } from '../server/src/observability/archive/reader.js';
import { EpisodeRecorder } from '../server/src/observability/archive/recorder.js';
import type { ArchiveStore } from '../server/src/observability/archive/store.js';
import { ArchiveWriter } from '../server/src/observability/archive/writer.js';
import { cpuMicros, REPO_ROOT, startProcess, startSandgym, type ServerProcess } from './lib/processes.js';
import { median, round } from './lib/stats.js';
import { Driver, looksLikeError } from './lib/ws-driver.js';

const QUICK = process.env.BENCH_QUICK === '1';
const SESSIONS = 64;
const WINDOW = 8;
const FRAMES = QUICK ? 100 : 600;
const ROUNDS = QUICK ? 2 : 7;
const CODE_ROUNDS = QUICK ? 1 : 5;
const CODE_BASH_STEPS = 8;

interface MathSide {
  name: 'archive' | 'no_archive' | 'archive_baseline';
  server: ServerProcess;
  driver: Driver;
  make: (i: number) => string | Uint8Array;
  cpu_us_per_env_step: number[];
  episodes_per_s: number[];
  /** Per round: CPU µs per env-step by kind of thread. */
  threads: Record<string, number>[];
}

// BENCH_CPU_PROF=DIR: both math-v0 servers write V8 CPU profiles (node --cpu-prof) on exit, into
// DIR/archive and DIR/no_archive (the largest file of each is the server's main thread).
const PROF_DIR = process.env.BENCH_CPU_PROF;
// BENCH_SERVER_NODE_ARGS='--max-semi-space-size=64': node options for both math-v0 servers (GC experiments).
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
const BASELINE_TREE = process.env.BENCH_BASELINE_TREE;

async function openMath(name: MathSide['name'], args: string[], tree?: string): Promise<MathSide> {
  const nodeArgs = [...SERVER_NODE_ARGS, ...(PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir', join(PROF_DIR, name)] : [])];
  const server = tree
    ? await startProcess(
        process.execPath,
        [...nodeArgs, join(tree, 'bin/sandgym.js'), 'serve', '--port', '0', '--fixtures', '--log-level', 'warn', '--driver', 'none', ...args],
        /sandgym listening on (ws:\/\/\S+)/,
        180_000,
      )
    : await startSandgym(args, nodeArgs);
  const d = await Driver.open(server.url);
  const hello = await d.request(encodeJson({ id: 0, type: 'hello', versions: [...PROTOCOL_VERSIONS], client: { name: 'bench', version: '0' } }));
  if (hello.type !== 'result') throw new Error(`hello failed: ${JSON.stringify(hello)}`);
  const made = await d.requestMany(Array.from({ length: SESSIONS }, (_, i) => encodeJson({ id: 1 + i, type: 'make', env_id: 'math-v0' })));
  const sessions = made.map((m) => {
    if (m.type !== 'result') throw new Error(`make failed: ${JSON.stringify(m)}`);
    return m.result.session as string;
  });
  // One episode per session per frame: reset (a fixed seed per session) then a wrong answer.
  const items = sessions.flatMap((session, i) => [
    { type: 'reset', session, seed: i },
    { type: 'step', session, action: '\\boxed{42}' },
  ]);
  const make = (i: number) => encodeJson({ id: (i % 0x7fff_ffff) + 1, type: 'batch', requests: items });
  const sample = await d.request(make(0));
  if (sample.type !== 'result' || sample.result.results.some((r: { type: string }) => r.type !== 'result'))
    throw new Error(`batch failed: ${JSON.stringify(sample).slice(0, 300)}`);
  await d.pipelined(FRAMES / 4, WINDOW, make, looksLikeError);
  return { name, server, driver: d, make, cpu_us_per_env_step: [], episodes_per_s: [], threads: [] };
}

/**
 * CPU µs of a process's main thread and of all its other threads together (/proc/PID/task/*): V8's
 * helpers (parallel scavenge, concurrent marking, the compiler) and libuv's pool (gzip). Node names none
 * of them here (every comm is "node"), so they are one bucket.
 */
async function threadCpu(pid: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    try {
      const kind = tid === String(pid) ? 'main thread' : 'other threads (V8 GC and compiler helpers, libuv pool: gzip)';
      out[kind] = (out[kind] ?? 0) + (await cpuMicros(Number(tid), `/proc/${pid}/task/${tid}/stat`));
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return out;
}

function threadDelta(after: Record<string, number>, before: Record<string, number>, per: number): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, round((v - (before[k] ?? 0)) / per, 3)]));
}

async function mathRound(s: MathSide): Promise<void> {
  const before = await cpuMicros(s.server.pid);
  const threads0 = await threadCpu(s.server.pid);
  const r = await s.driver.pipelined(FRAMES, WINDOW, s.make, looksLikeError);
  const cpu = (await cpuMicros(s.server.pid)) - before;
  s.threads.push(threadDelta(await threadCpu(s.server.pid), threads0, FRAMES * SESSIONS));
  if (r.errors > 0) throw new Error(`${r.errors} failed batch frames (${s.name})`);
  s.cpu_us_per_env_step.push(cpu / (FRAMES * SESSIONS));
  s.episodes_per_s.push((FRAMES * SESSIONS) / (r.elapsed_ms / 1000));
}

function medianThreads(rounds: Record<string, number>[]): Record<string, number> {
  const kinds = new Set(rounds.flatMap((r) => Object.keys(r)));
  return Object.fromEntries([...kinds].map((k) => [k, round(median(rounds.map((r) => r[k] ?? 0)), 3)]));
}

async function dirBytes(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    files++;
    bytes += (await stat(join(e.parentPath, e.name))).size;
  }
  return { files, bytes };
}

async function math(archiveDir: string) {
  const off = await openMath('no_archive', []);
  const on = await openMath('archive', ['--archive', archiveDir, '--archive-flush-ms', '1000']);
  const base = BASELINE_TREE ? await openMath('archive_baseline', ['--archive', `${archiveDir}-baseline`, '--archive-flush-ms', '1000'], BASELINE_TREE) : null;
  const sides = base ? [off, on, base] : [off, on];
  try {
    // Each round runs every side once, in an order that rotates (and reverses) from round to round.
    for (let i = 0; i < ROUNDS; i++) {
      const order = sides.map((_, k) => sides[(k + i) % sides.length] as MathSide);
      for (const s of i % 2 === 0 ? order : order.reverse()) await mathRound(s);
    }
  } finally {
    await Promise.all(sides.map((s) => s.driver.close()));
    await Promise.all(sides.map((s) => s.server.stop()));
  }
  const baseline = base
    ? {
        tree: BASELINE_TREE,
        cpu_us_per_env_step: round(median(base.cpu_us_per_env_step), 3),
        episodes_per_s: Math.round(median(base.episodes_per_s)),
        rounds_cpu: base.cpu_us_per_env_step.map((x) => round(x, 3)),
        threads: medianThreads(base.threads),
        cpu_ratio: round(median(base.cpu_us_per_env_step) / median(off.cpu_us_per_env_step), 3),
        // Per round (same round, adjacent in time): this tree's archiving server over the baseline's.
        new_over_baseline_rounds: on.cpu_us_per_env_step.map((x, k) => round(x / (base.cpu_us_per_env_step[k] as number), 3)),
      }
    : null;
  const cpuOff = median(off.cpu_us_per_env_step);
  const cpuOn = median(on.cpu_us_per_env_step);
  const written = await dirBytes(archiveDir);
  return {
    batch: { sessions: SESSIONS, window: WINDOW, frames_per_round: FRAMES, rounds: ROUNDS },
    no_archive: {
      cpu_us_per_env_step: round(cpuOff, 3),
      episodes_per_s: Math.round(median(off.episodes_per_s)),
      rounds_cpu: off.cpu_us_per_env_step.map((x) => round(x, 3)),
      threads: medianThreads(off.threads),
    },
    archive: {
      cpu_us_per_env_step: round(cpuOn, 3),
      episodes_per_s: Math.round(median(on.episodes_per_s)),
      rounds_cpu: on.cpu_us_per_env_step.map((x) => round(x, 3)),
      threads: medianThreads(on.threads),
    },
    cpu_ratio: round(cpuOn / cpuOff, 3),
    added_cpu_us_per_env_step: round(cpuOn - cpuOff, 3),
    throughput_ratio: round(median(on.episodes_per_s) / median(off.episodes_per_s), 3),
    // Per round: archiving over not archiving (adjacent in time), for the spread.
    cpu_ratio_rounds: on.cpu_us_per_env_step.map((x, k) => round(x / (off.cpu_us_per_env_step[k] as number), 3)),
    archive_baseline: baseline,
    archive_objects: written.files,
    archive_bytes_per_episode: round(written.bytes / ((ROUNDS + 1.25) * FRAMES * SESSIONS + SESSIONS), 1),
  };
}

async function dockerReady(): Promise<string | null> {
  if (process.env.BENCH_SKIP_CODE === '1') return 'BENCH_SKIP_CODE=1';
  try {
    const docker = new Docker();
    await docker.ping();
    await docker.getImage('sandgym/python:1').inspect();
    return null;
  } catch (e) {
    return `no Docker or no sandgym/python:1 image (${(e as Error).message})`;
  }
}

async function codeEpisode(url: string): Promise<{ steps: number; ms: number }> {
  const c = await connect(url, { requestTimeoutMs: 600_000 });
  try {
    const env = await c.make('code-v0', { shaping: 'none' });
    const t0 = performance.now();
    await env.reset({ seed: 1, options: { task_id: 'py-slugify' } });
    let steps = 0;
    for (let i = 0; i < CODE_BASH_STEPS; i++, steps++) await env.step({ name: 'bash', arguments: { command: `ls -la; echo step ${i}` } });
    await env.step({ name: 'write_file', arguments: { path: 'slug.py', content: 'def slugify(s):\n    return s\n' } });
    await env.step({ name: 'submit', arguments: {} });
    steps += 2;
    const ms = performance.now() - t0;
    await env.close();
    return { steps, ms };
  } finally {
    await c.close();
  }
}

async function code(archiveDir: string) {
  const why = await dockerReady();
  if (why) return { skipped: why };
  const args = ['--driver', 'docker'];
  const sides = {
    no_archive: { server: await startSandgym(args), cpu: [] as number[], ms: [] as number[] },
    archive: { server: await startSandgym([...args, '--archive', archiveDir]), cpu: [] as number[], ms: [] as number[] },
  };
  try {
    // Warm-up: pools, images in the page cache, JIT.
    for (const s of Object.values(sides)) await codeEpisode(s.server.url);
    for (let i = 0; i < CODE_ROUNDS; i++) {
      for (const s of i % 2 === 0 ? [sides.no_archive, sides.archive] : [sides.archive, sides.no_archive]) {
        const before = await cpuMicros(s.server.pid);
        const e = await codeEpisode(s.server.url);
        s.cpu.push(((await cpuMicros(s.server.pid)) - before) / e.steps);
        s.ms.push(e.ms);
      }
    }
  } finally {
    await Promise.all(Object.values(sides).map((s) => s.server.stop()));
  }
  const cOff = median(sides.no_archive.cpu);
  const cOn = median(sides.archive.cpu);
  return {
    episode: `py-slugify, ${CODE_BASH_STEPS} bash steps + write_file + submit (graded)`,
    rounds: CODE_ROUNDS,
    no_archive: { cpu_us_per_step: Math.round(cOff), ms_per_episode: Math.round(median(sides.no_archive.ms)) },
    archive: { cpu_us_per_step: Math.round(cOn), ms_per_episode: Math.round(median(sides.archive.ms)) },
    cpu_ratio: round(cOn / cOff, 3),
    added_cpu_us_per_step: Math.round(cOn - cOff),
    wall_ratio: round(median(sides.archive.ms) / median(sides.no_archive.ms), 3),
  };
}

/**
 * The archive's own CPU per step, in this process: the episodes the archiving server wrote, read back and
 * fed as episode-hook events (reset, steps, failed steps, the workspace artifact) to a fresh recorder and
 * writer (real gzip, a store that keeps nothing), `repeat` times. process.cpuUsage covers every thread
 * (the gzip pool too). This is the figure the /proc ratio cannot resolve on code-v0, where a step's own
 * server CPU is milliseconds of Docker API work.
 */
async function inProcessCost(
  dir: string,
  limit: number,
  repeat: number,
): Promise<{ episodes: number; steps: number; cpu_us_per_step: number; cpu_us_per_episode: number } | null> {
  const records: EpisodeRecord[] = [];
  for await (const r of readArchive(dir)) {
    records.push(r);
    if (records.length >= limit) break;
  }
  if (records.length === 0) return null;
  const store: ArchiveStore = { location: 'null', put: async () => {}, list: async () => [], get: async () => new Uint8Array(), check: async () => {} };
  const log = { warn: () => {}, error: () => {} };
  let steps = 0;
  const c0 = process.cpuUsage();
  for (let k = 0; k < repeat; k++) {
    const writer = new ArchiveWriter({ store, maxBytes: ARCHIVE_DEFAULTS.max_bytes, batchBytes: ARCHIVE_DEFAULTS.batch_bytes, flushMs: 60_000, log });
    const rec = new EpisodeRecorder(writer, { maxEpisodeBytes: ARCHIVE_DEFAULTS.max_episode_bytes, maxWorkspaceBytes: ARCHIVE_DEFAULTS.max_workspace_bytes });
    for (const [i, r] of records.entries()) {
      const session = `s${i}`;
      const t = Date.parse(r.started_at);
      rec.onOpen({ session_id: session, env_id: r.env_id, kwargs: r.kwargs, connection_id: 'c_1', t });
      if (r.reset === null) continue;
      rec.onReset({
        session_id: session,
        env_id: r.env_id,
        episode_id: r.episode_id,
        seed: r.seed ?? undefined,
        options: r.options,
        observation: r.reset.observation,
        info: r.reset.info,
        duration_ms: r.reset.duration_ms,
        t,
      });
      if (r.final_workspace && 'data' in r.final_workspace)
        rec.onArtifact({ session_id: session, name: 'final_workspace', data: Buffer.from(r.final_workspace.data, 'base64') });
      for (const st of r.steps) {
        rec.onStep({
          session_id: session,
          env_id: r.env_id,
          episode_id: r.episode_id,
          step_index: st.step,
          action: st.action,
          observation: st.observation,
          reward: st.reward,
          terminated: st.terminated,
          truncated: st.truncated,
          info: st.info,
          duration_ms: st.duration_ms,
          t: st.t,
        });
        steps++;
      }
      rec.onClose({ session_id: session, env_id: r.env_id, episode_id: r.episode_id, reason: 'closed by client', t });
    }
    await writer.flush();
  }
  const c = process.cpuUsage(c0);
  const us = c.user + c.system;
  return {
    episodes: records.length,
    steps: steps / repeat,
    cpu_us_per_step: round(us / steps, 2),
    cpu_us_per_episode: round(us / (records.length * repeat), 2),
  };
}

/**
 * The floor any "compressed JSONL" archive pays per episode, for the same records: (a) gzip level 1 of their
 * lines alone (64 KiB chunks, as the writer feeds it), as if the record's text cost nothing (e.g. reused from
 * the replies: no implementation can do less than compress it), and (b) one JSON.stringify per record plus
 * that gzip. Compared with the no-archive server's CPU per episode, it says how far below 10% any
 * implementation can get on this machine.
 */
async function floorCost(
  dir: string,
  limit: number,
  repeat: number,
): Promise<{
  episodes: number;
  bytes_per_episode: number;
  gzip_us_per_episode: number;
  stringify_us_per_episode: number;
  stringify_gzip_us_per_episode: number;
} | null> {
  const records: EpisodeRecord[] = [];
  for await (const r of readArchive(dir)) {
    records.push(r);
    if (records.length >= limit) break;
  }
  if (records.length === 0) return null;
  const lines = records.map((r) => `${JSON.stringify(r)}\n`);
  const bytes = lines.reduce((n, l) => n + Buffer.byteLength(l), 0);
  const gzipAll = async (texts: string[]) => {
    const gz = createGzip({ level: 1 });
    const done = new Promise<void>((resolve, reject) => {
      gz.on('data', () => {});
      gz.on('end', resolve);
      gz.on('error', reject);
    });
    let chunk = '';
    for (const t of texts) {
      chunk += t;
      if (chunk.length >= 65_536) {
        gz.write(Buffer.from(chunk, 'latin1'));
        chunk = '';
      }
    }
    gz.end(Buffer.from(chunk, 'latin1'));
    await done;
  };
  const cpu = async (f: () => Promise<void> | void) => {
    await f(); // warm-up
    const c0 = process.cpuUsage();
    for (let k = 0; k < repeat; k++) await f();
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / (records.length * repeat);
  };
  const gzipUs = await cpu(() => gzipAll(lines));
  let sink = 0;
  const stringifyUs = await cpu(() => {
    for (const r of records) sink += JSON.stringify(r).length;
  });
  const bothUs = await cpu(() => gzipAll(records.map((r) => `${JSON.stringify(r)}\n`)));
  if (sink < 0) throw new Error('unreachable');
  return {
    episodes: records.length,
    bytes_per_episode: round(bytes / records.length, 1),
    gzip_us_per_episode: round(gzipUs, 2),
    stringify_us_per_episode: round(stringifyUs, 2),
    stringify_gzip_us_per_episode: round(bothUs, 2),
  };
}

async function main(): Promise<void> {
  const load0 = loadavg()[0] as number;
  const tmp = await mkdtemp(join(tmpdir(), 'sandgym-bench-archive-'));
  try {
    const m = process.env.BENCH_SKIP_MATH === '1' ? null : await math(join(tmp, 'math'));
    const c = await code(join(tmp, 'code'));
    // The same episodes through the archive alone, in this process (after the servers stopped).
    const inProcess = {
      math_v0: m ? await inProcessCost(join(tmp, 'math'), 20_000, QUICK ? 1 : 5) : null,
      code_v0: 'skipped' in c ? null : await inProcessCost(join(tmp, 'code'), 1000, QUICK ? 3 : 30),
    };
    const floor = m ? await floorCost(join(tmp, 'math'), 20_000, QUICK ? 2 : 10) : null;
    const results = {
      machine: {
        cpus: cpus().length,
        node: process.version,
        date: new Date().toISOString(),
        loadavg_start: round(load0, 2),
        loadavg_end: round(loadavg()[0] as number, 2),
      },
      command: 'npx tsx bench/archive-overhead.bench.ts',
      math: m,
      code: c,
      archive_in_process: inProcess,
      math_v0_floor: floor,
    };
    const lines = m
      ? [
          '| math-v0: batches of 64 x [reset, step], 8 frames in flight (medians of alternating rounds) | no archive | --archive DIR | ratio |',
          '|---|---|---|---|',
          `| server CPU per env-step (µs; a reset and its step) | ${m.no_archive.cpu_us_per_env_step} | ${m.archive.cpu_us_per_env_step} | ${m.cpu_ratio} (rounds ${m.cpu_ratio_rounds.join(', ')}) |`,
          ...(m.archive_baseline
            ? [
                `| same, archiving with ${m.archive_baseline.tree} | - | ${m.archive_baseline.cpu_us_per_env_step} | ${m.archive_baseline.cpu_ratio}; this tree over it per round: ${m.archive_baseline.new_over_baseline_rounds.join(', ')} |`,
              ]
            : []),
          `| episodes/s | ${m.no_archive.episodes_per_s.toLocaleString('en-US')} | ${m.archive.episodes_per_s.toLocaleString('en-US')} | ${m.throughput_ratio} |`,
          `| archive bytes per episode (gzip) | - | ${m.archive_bytes_per_episode} | - |`,
          ...[...new Set([...Object.keys(m.no_archive.threads), ...Object.keys(m.archive.threads)])].map(
            (k) => `| of which ${k} (µs per env-step) | ${m.no_archive.threads[k] ?? 0} | ${m.archive.threads[k] ?? 0} | - |`,
          ),
        ]
      : ['math-v0: skipped (BENCH_SKIP_MATH=1)'];
    if ('skipped' in c) lines.push('', `code-v0: skipped (${c.skipped})`);
    else {
      lines.push(
        '',
        `| code-v0: ${c.episode} (medians of ${c.rounds} alternating rounds) | no archive | --archive DIR | ratio |`,
        '|---|---|---|---|',
        `| server CPU per step (µs) | ${c.no_archive.cpu_us_per_step} | ${c.archive.cpu_us_per_step} | ${c.cpu_ratio} |`,
        `| wall time per episode (ms) | ${c.no_archive.ms_per_episode} | ${c.archive.ms_per_episode} | ${c.wall_ratio} |`,
      );
    }
    for (const [env, x] of Object.entries(inProcess)) {
      if (x)
        lines.push(
          '',
          `${env.replace('_', '-')}, the archive alone in-process (${x.episodes} archived episodes, ${x.steps} steps, replayed as hook events): ${x.cpu_us_per_step} µs CPU per step, ${x.cpu_us_per_episode} µs per episode`,
        );
    }
    if (floor && m) {
      const base = m.no_archive.cpu_us_per_env_step;
      const pctOf = (us: number) => `${round((100 * us) / base, 1)}% of the no-archive episode`;
      lines.push(
        '',
        `math-v0, the floor of any compressed JSONL archive (${floor.episodes} archived episodes, ${floor.bytes_per_episode} bytes of JSON each): gzip level 1 alone ${floor.gzip_us_per_episode} µs per episode (${pctOf(floor.gzip_us_per_episode)}); one JSON.stringify ${floor.stringify_us_per_episode} µs; both ${floor.stringify_gzip_us_per_episode} µs (${pctOf(floor.stringify_gzip_us_per_episode)})`,
      );
    }
    process.stdout.write(`${lines.join('\n')}\n\nload average ${results.machine.loadavg_start} -> ${results.machine.loadavg_end}\n`);
    const dir = join(REPO_ROOT, 'bench', 'results');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'archive-overhead.json'), `${JSON.stringify(results, null, 2)}\n`);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

await main();
