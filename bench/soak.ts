// Soak: real shell-v0 and code-v0 episodes against a real server (the CLI, docker driver) at a fixed
// fraction of its configured sandbox capacity for N minutes, sampling the server's RSS, heap, libuv
// handles (bench/lib/soak-probe.mjs, preloaded into the server), its container count and the error
// count every ~10 s. Prints a summary (RSS over the first and last 5 minutes, least-squares slope in
// MB/h, episodes, errors by code) and, after a clean shutdown, the containers left behind.
//
//   npm run soak -- --minutes 30            the figure in BENCHMARKS.md ("Chaos and soak")
//   npm run soak -- --seconds 60 --json f   the short mode test/chaos/soak.test.ts runs in CI
//
// Capacity: every pool gets max_total M (--max-total, default 10). A shell-v0 episode holds one
// busybox sandbox, a code-v0 episode one python sandbox plus one more while it is graded, so the
// default load 0.8 runs round(0.8*M) shell workers and round(0.8*M/2) code workers: at most 80% of
// each pool's sandboxes are ever asked for at once. Errors are counted by wire code; an episode whose
// reward is not the reference solution's 1 counts as WRONG_REWARD. Nothing here asserts: the CI test
// asserts on the JSON this writes (0 errors, 0 leaks), never on a timing.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { connect, type SandgymClient } from '../clients/ts/src/index.js';
import { SHELL_TASKS } from '../envs/src/builtin/shell/tasks.js';
import { REPO_ROOT, startProcess, type ServerProcess } from './lib/processes.js';

interface Args {
  seconds: number;
  maxTotal: number;
  load: number;
  sampleMs: number;
  json: string | null;
}

/** A bad command line: printed as one line with exit code 2, no stack trace. */
class UsageError extends Error {}

function parseArgs(argv: string[]): Args {
  const a: Args = { seconds: 30 * 60, maxTotal: 10, load: 0.8, sampleMs: 10_000, json: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!;
    const v = argv[i + 1];
    const num = (what: string) => {
      const n = Number(v);
      if (v === undefined || !Number.isFinite(n) || n <= 0) throw new UsageError(`${k} needs a positive number (${what}), got ${String(v)}`);
      i++;
      return n;
    };
    if (k === '--minutes') a.seconds = num('minutes') * 60;
    else if (k === '--seconds') a.seconds = num('seconds');
    else if (k === '--max-total') a.maxTotal = Math.floor(num('sandboxes per pool'));
    else if (k === '--load') a.load = num('fraction of capacity');
    else if (k === '--sample-s') a.sampleMs = num('seconds between samples') * 1000;
    else if (k === '--json') {
      if (!v) throw new UsageError('--json needs a file');
      a.json = v;
      i++;
    } else throw new UsageError(`unknown option ${k} (options: --minutes N | --seconds N, --max-total N, --load F, --sample-s N, --json FILE)`);
  }
  if (a.load > 1) throw new UsageError('--load is a fraction of capacity (0 < F <= 1)');
  return a;
}

function docker(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('docker', args, (err, stdout, stderr) => (err ? reject(new Error(`docker ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout)));
  });
}

async function containersOf(pid: number): Promise<number> {
  return (await docker(['ps', '-aq', '--filter', `label=sandgym.owner_pid=${pid}`])).split('\n').filter(Boolean).length;
}

interface Sample {
  t: number;
  rss: number;
  heap_used: number;
  heap_total: number;
  external: number;
  handles: number;
  sockets: number;
  timers: number;
  containers: number;
  errors: number;
  episodes: number;
}

interface CodeTask {
  id: string;
  files: { path: string; content: string }[];
}

const CODE_TASK_IDS = ['py-slugify', 'py-isbn', 'py-roman-numerals', 'py-merge-intervals', 'py-chunked'];

async function loadCodeTasks(): Promise<CodeTask[]> {
  const out: CodeTask[] = [];
  for (const id of CODE_TASK_IDS) {
    const dir = path.join(REPO_ROOT, 'envs', 'tasks', id, 'solution');
    const files = [];
    for (const f of await readdir(dir)) files.push({ path: f, content: await readFile(path.join(dir, f), 'utf8') });
    out.push({ id, files });
  }
  return out;
}

const errorCode = (e: unknown): string => (typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string' ? e.code : 'CLIENT_EXCEPTION');

class Tally {
  episodes = { 'shell-v0': 0, 'code-v0': 0 };
  errors = new Map<string, number>();
  samplesOfErrors: string[] = [];
  count(code: string, detail: string): void {
    this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
    if (this.samplesOfErrors.length < 20) this.samplesOfErrors.push(`${code}: ${detail}`);
  }
  get errorTotal(): number {
    let n = 0;
    for (const v of this.errors.values()) n += v;
    return n;
  }
}

/** One worker: a session per 5 episodes (make, 5 x reset/solve/submit, close), until `until`. */
async function shellWorker(client: SandgymClient, w: number, until: number, tally: Tally): Promise<void> {
  let k = w;
  while (Date.now() < until) {
    try {
      const env = await client.make('shell-v0');
      try {
        for (let e = 0; e < 5 && Date.now() < until; e++) {
          const task = SHELL_TASKS[k++ % SHELL_TASKS.length]!;
          await env.reset({ options: { task_id: task.id } });
          const s1 = await env.step({ name: 'bash', arguments: { command: task.solution } });
          const s2 = await env.step({ name: 'submit', arguments: {} });
          const total = (s1.reward ?? 0) + (s2.reward ?? 0);
          if (total !== 1 || !s2.terminated) tally.count('WRONG_REWARD', `shell-v0 ${task.id}: reward ${total}, terminated ${s2.terminated}`);
          else tally.episodes['shell-v0']++;
        }
      } finally {
        await env.close();
      }
    } catch (e) {
      tally.count(errorCode(e), `shell-v0: ${(e as Error).message}`);
    }
  }
}

async function codeWorker(client: SandgymClient, w: number, until: number, tally: Tally, tasks: CodeTask[]): Promise<void> {
  let k = w;
  while (Date.now() < until) {
    try {
      const env = await client.make('code-v0', { shaping: 'none' });
      try {
        for (let e = 0; e < 5 && Date.now() < until; e++) {
          const task = tasks[k++ % tasks.length]!;
          await env.reset({ options: { task_id: task.id } });
          let total = 0;
          for (const f of task.files) total += (await env.step({ name: 'write_file', arguments: f })).reward ?? 0;
          const fin = await env.step({ name: 'submit', arguments: {} });
          total += fin.reward ?? 0;
          if (Math.abs(total - 1) > 1e-9 || !fin.terminated)
            tally.count('WRONG_REWARD', `code-v0 ${task.id}: reward ${total}, info ${JSON.stringify(fin.info).slice(0, 300)}`);
          else tally.episodes['code-v0']++;
        }
      } finally {
        await env.close();
      }
    } catch (e) {
      tally.count(errorCode(e), `code-v0: ${(e as Error).message}`);
    }
  }
}

const MB = 1024 * 1024;
const r1 = (x: number) => Math.round(x * 10) / 10;

/** Least-squares slope of y over t (ms), in units of y per hour. */
function slopePerHour(pts: { t: number; y: number }[]): number {
  if (pts.length < 2) return 0;
  const n = pts.length;
  const mt = pts.reduce((s, p) => s + p.t, 0) / n;
  const my = pts.reduce((s, p) => s + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of pts) {
    num += (p.t - mt) * (p.y - my);
    den += (p.t - mt) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 3600_000;
}

async function loadavg(): Promise<string> {
  return (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-soak-'));
  const probe = path.join(dir, 'probe.jsonl');
  const config = path.join(dir, 'config.json');
  const M = args.maxTotal;
  await writeFile(config, JSON.stringify({ pools: { min_idle: Math.min(2, M), max_total: M, refill_concurrency: 2 } }));
  const shellWorkers = Math.max(1, Math.round(args.load * M));
  const codeWorkers = Math.max(1, Math.round((args.load * M) / 2));
  process.env.SANDGYM_SOAK_PROBE = probe;
  process.env.SANDGYM_SOAK_PROBE_MS = String(args.sampleMs);
  const load0 = await loadavg();
  const server: ServerProcess = await startProcess(
    process.execPath,
    [
      '--import',
      path.join(REPO_ROOT, 'bench', 'lib', 'soak-probe.mjs'),
      'bin/sandgym.js',
      'serve',
      '--port',
      '0',
      '--driver',
      'docker',
      '--log-level',
      'warn',
      '--config',
      config,
    ],
    /sandgym listening on (ws:\/\/\S+)/,
  );
  const pid = server.pid;
  process.stderr.write(
    `[soak] server pid ${pid} at ${server.url}; ${shellWorkers} shell-v0 + ${codeWorkers} code-v0 workers, max_total ${M} per pool, ${args.seconds} s\n`,
  );
  const tally = new Tally();
  const samples: Sample[] = [];
  const tasks = await loadCodeTasks();
  const client = await connect(server.url);
  const t0 = Date.now();
  const until = t0 + args.seconds * 1000;
  let maxContainers = 0;
  const sampler = setInterval(() => {
    void (async () => {
      const lines = (await readFile(probe, 'utf8').catch(() => '')).trim().split('\n');
      const last = lines.length ? (JSON.parse(lines[lines.length - 1]!) as Omit<Sample, 'containers' | 'errors' | 'episodes'>) : null;
      const containers = await containersOf(pid).catch(() => -1);
      maxContainers = Math.max(maxContainers, containers);
      if (!last) return;
      const episodes = tally.episodes['shell-v0'] + tally.episodes['code-v0'];
      samples.push({ ...last, t: Date.now(), containers, errors: tally.errorTotal, episodes });
      process.stderr.write(
        `[soak] ${Math.round((Date.now() - t0) / 1000)} s: rss ${r1(last.rss / MB)} MB, heap ${r1(last.heap_used / MB)} MB, handles ${last.handles}, containers ${containers}, episodes ${episodes}, errors ${tally.errorTotal}\n`,
      );
    })();
  }, args.sampleMs);
  await Promise.all([
    ...Array.from({ length: shellWorkers }, (_, w) => shellWorker(client, w, until, tally)),
    ...Array.from({ length: codeWorkers }, (_, w) => codeWorker(client, w, until, tally, tasks)),
  ]);
  clearInterval(sampler);
  const elapsed = (Date.now() - t0) / 1000;
  await client.close();
  const load1 = await loadavg();

  // Clean shutdown, then: every container of that server gone (within 30 s)?
  await server.stop();
  let leaked = await containersOf(pid);
  for (let i = 0; i < 150 && leaked > 0; i++) {
    await new Promise((r) => setTimeout(r, 200));
    leaked = await containersOf(pid);
  }

  const window = Math.min(5 * 60_000, (args.seconds * 1000) / 5);
  // Windows are measured from the first and last samples, so a short run still has one in each.
  const tFirst = samples[0]?.t ?? t0;
  const tLast = samples[samples.length - 1]?.t ?? until;
  const first = samples.filter((s) => s.t - tFirst <= window);
  const lastW = samples.filter((s) => tLast - s.t <= window);
  const mean = (xs: Sample[], f: (s: Sample) => number) => (xs.length ? xs.reduce((a, s) => a + f(s), 0) / xs.length : 0);
  // The slope skips the first window: pools filling, JIT and first-use allocations are not a leak.
  const steady = samples.filter((s) => s.t - tFirst > window);
  const summary = {
    command: `npm run soak -- ${process.argv.slice(2).join(' ')}`,
    seconds: Math.round(elapsed),
    max_total_per_pool: M,
    workers: { 'shell-v0': shellWorkers, 'code-v0': codeWorkers },
    load_fraction: args.load,
    window_s: window / 1000,
    samples: samples.length,
    rss_mb: {
      first_window_mean: r1(mean(first, (s) => s.rss) / MB),
      last_window_mean: r1(mean(lastW, (s) => s.rss) / MB),
      min: r1(Math.min(...samples.map((s) => s.rss)) / MB),
      max: r1(Math.max(...samples.map((s) => s.rss)) / MB),
      slope_mb_per_h: r1(slopePerHour(steady.map((s) => ({ t: s.t, y: s.rss / MB })))),
    },
    heap_used_mb: {
      first_window_mean: r1(mean(first, (s) => s.heap_used) / MB),
      last_window_mean: r1(mean(lastW, (s) => s.heap_used) / MB),
      slope_mb_per_h: r1(slopePerHour(steady.map((s) => ({ t: s.t, y: s.heap_used / MB })))),
    },
    handles: {
      first_window_mean: r1(mean(first, (s) => s.handles)),
      last_window_mean: r1(mean(lastW, (s) => s.handles)),
      max: Math.max(0, ...samples.map((s) => s.handles)),
    },
    containers: { max: maxContainers, leaked_after_shutdown: leaked },
    episodes: {
      ...tally.episodes,
      total: tally.episodes['shell-v0'] + tally.episodes['code-v0'],
      per_min: r1(((tally.episodes['shell-v0'] + tally.episodes['code-v0']) / elapsed) * 60),
    },
    errors: { total: tally.errorTotal, by_code: Object.fromEntries(tally.errors), first: tally.samplesOfErrors },
    loadavg: { start: load0, end: load1 },
    cpus: os.cpus().length,
  };
  const text = [
    `soak: ${summary.seconds} s, ${shellWorkers} shell-v0 + ${codeWorkers} code-v0 workers (${args.load * 100}% of max_total ${M} per pool), ${samples.length} samples`,
    `  rss MB: first ${window / 1000} s mean ${summary.rss_mb.first_window_mean}, last ${window / 1000} s mean ${summary.rss_mb.last_window_mean}, min ${summary.rss_mb.min}, max ${summary.rss_mb.max}, slope after the first window ${summary.rss_mb.slope_mb_per_h} MB/h`,
    `  heap used MB: first ${summary.heap_used_mb.first_window_mean}, last ${summary.heap_used_mb.last_window_mean}, slope ${summary.heap_used_mb.slope_mb_per_h} MB/h`,
    `  handles: first ${summary.handles.first_window_mean}, last ${summary.handles.last_window_mean}, max ${summary.handles.max}`,
    `  episodes: shell-v0 ${summary.episodes['shell-v0']}, code-v0 ${summary.episodes['code-v0']} (${summary.episodes.per_min}/min)`,
    `  errors: ${summary.errors.total} ${JSON.stringify(summary.errors.by_code)}`,
    `  containers: max ${maxContainers} while running, ${leaked} left 30 s after a clean shutdown`,
    `  loadavg: start ${load0}, end ${load1} (${summary.cpus} cpus, shared)`,
  ].join('\n');
  process.stdout.write(`${text}\n`);
  for (const e of tally.samplesOfErrors) process.stdout.write(`  error: ${e}\n`);
  if (args.json) await writeFile(args.json, JSON.stringify({ summary, samples }, null, 1));
  await rm(dir, { recursive: true, force: true });
}

main().catch((e: unknown) => {
  if (e instanceof UsageError) {
    process.stderr.write(`soak: ${e.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`soak failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
