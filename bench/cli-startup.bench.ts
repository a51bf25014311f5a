// CLI start-up cost against bare `node -e 0` in the same run: wall time and peak RSS of
// `sandgym --help`, `--version`, `envs` (local listing), and the time until `serve` prints its
// listening line (driver none, and the default auto). Runs the bin as a user does (a child process).
// By default the bin of this checkout (compiled server/dist when current, else tsx: see
// bin/sandgym.js); SANDGYM_BENCH_BIN=<bin>[,<bin>...] measures others, e.g. an installed tarball's
// node_modules/sandgym/bin/sandgym.js, or an older commit extracted with `git archive <rev> | tar -x -C
// DIR` with node_modules linked in.
//   npx tsx bench/cli-startup.bench.ts [runs]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Several bins (comma-separated) are measured in interleaved rounds, so load that varies during the
// run affects them alike.
const BINS = (process.env.SANDGYM_BENCH_BIN ?? fileURLToPath(new URL('../bin/sandgym.js', import.meta.url))).split(',');
const RUNS = Number(process.argv[2] ?? 7);

type Sample = { ms: number; rssKb: number };

/** Runs a command to completion: wall ms and peak RSS (KiB, reported by GNU time, no instrumentation). */
function once(args: string[]): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn('/usr/bin/time', ['-f', '%M', process.execPath, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', () => resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, rssKb: Number(err.trim().split('\n').at(-1)) }));
  });
}

/** Spawns `serve`, resolves when it prints its listening line: ms since spawn, and peak RSS then. */
function serveOnce(bin: string, driver: string): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--driver', driver, '--log-level', 'silent'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!out.includes('sandgym listening on')) return;
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const rssKb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]);
      child.on('exit', () => resolve({ ms, rssKb }));
      child.kill('SIGTERM');
    });
    child.on('error', reject);
  });
}

const CASES: { name: string; run: (bin: string) => Promise<Sample> }[] = [
  { name: 'node -e 0', run: () => once(['-e', '0']) },
  { name: 'sandgym --help', run: (bin) => once([bin, '--help']) },
  { name: 'sandgym --version', run: (bin) => once([bin, '--version']) },
  { name: 'sandgym envs', run: (bin) => once([bin, 'envs']) },
  { name: 'serve --driver none, until listening', run: (bin) => serveOnce(bin, 'none') },
  { name: 'serve (driver auto), until listening', run: (bin) => serveOnce(bin, 'auto') },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const samples = new Map<string, Sample[]>();
for (let round = -1; round < RUNS; round++) {
  for (const c of CASES) {
    for (const bin of BINS) {
      const s = await c.run(bin);
      if (round < 0) continue; // warm-up round: page cache, tsx's transform cache
      const key = `${c.name}\u0000${bin}`;
      samples.set(key, [...(samples.get(key) ?? []), s]);
    }
  }
}

console.log(`${RUNS} interleaved rounds, node ${process.versions.node}; median ms (range), median peak RSS MiB`);
BINS.forEach((b, i) => console.log(`bin ${i + 1}: ${b}`));
console.log(`| command | ${BINS.map((_, i) => `bin ${i + 1} ms | bin ${i + 1} MiB`).join(' | ')} |`);
console.log(`|---|${BINS.map(() => '---|---').join('|')}|`);
for (const c of CASES) {
  const cells = BINS.map((b) => {
    const xs = samples.get(`${c.name}\u0000${b}`) ?? [];
    const ms = xs.map((x) => x.ms);
    return `${median(ms).toFixed(0)} (${Math.min(...ms).toFixed(0)}–${Math.max(...ms).toFixed(0)}) | ${(median(xs.map((x) => x.rssKb)) / 1024).toFixed(0)}`;
  });
  console.log(`| ${c.name} | ${cells.join(' | ')} |`);
}
