// The peer benchmark (`npm run bench:peers`, bench/peers/) as a smoke test: its --quick run starts sandgym,
// OpenEnv and both echo floors, drives each through the one load generator and must produce every figure,
// with the timeout desync check's verdicts (sandgym's replies matched by id, OpenEnv's shifted).
// It needs the peer venv (openenv-core, bench/peers/venv.sh). Its install took 300 s on this machine under
// load, so .ci/run does not build it: without the venv the suite skips naming why, and
// SANDGYM_REQUIRE_PEERS=1 makes that a failure instead.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BENCH = join(ROOT, 'bench', 'peers', 'peers_bench.py');

function run(cmd: string, args: string[], timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: ROOT, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const venv = (await run('bash', [join(ROOT, 'bench', 'peers', 'venv.sh'), '--path'], 30_000)).stdout.trim();
const python = join(venv, 'bin', 'python');
const present = venv !== '' && existsSync(join(venv, '.sandgym-complete'));
const reason = `the peer venv (openenv-core) is not built at ${venv || '(no path)'}: run \`bash bench/peers/venv.sh\` (~5 min); .ci/run does not build it`;
if (!present && process.env.SANDGYM_REQUIRE_PEERS === '1') throw new Error(`peers bench required (SANDGYM_REQUIRE_PEERS=1) but ${reason}`);
if (!present) console.warn(`[peers bench] skipping: ${reason}`);

interface PeersResult {
  sequential: Record<string, { n: number; p50_us: number; p95_us: number; server_cpu_us_per_step: number }>;
  throughput: Record<
    string,
    Record<string, { steps_per_s: number; server_cpu_us_per_step: number; loadgen_cpu_share: number; server_cpu_share: number; bound: string }>
  >;
  memory: Record<string, { sessions: number; connections: number; bytes_per_session: number }>;
  desync: Record<string, { client_timed_out: boolean; verdict: string }>;
  machine: { loadavg_start: number; loadavg_end: number };
  openenv_version: string;
}

const TARGETS = ['sandgym', 'OpenEnv', 'node ws echo', 'python websockets echo'];

describe.skipIf(!present)('npm run bench:peers -- --quick', () => {
  let dir: string;
  let out: { code: number; stdout: string; stderr: string };
  let result: PeersResult;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sandgym-peers-test-'));
    // OpenEnv's server imports gradio and fastmcp: ~2 minutes to start on this loaded 2-core machine.
    out = await run(python, [BENCH, '--quick', '--out', join(dir, 'peers.json')], 840_000);
    if (out.code === 0) result = JSON.parse(await readFile(join(dir, 'peers.json'), 'utf8')) as PeersResult;
  }, 900_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs to the end and prints the table', () => {
    expect(out.code, out.stderr.slice(-4000)).toBe(0);
    expect(result.openenv_version).toBe('0.3.0');
    expect(out.stdout).toContain('| figure | sandgym | OpenEnv |');
    expect(out.stdout).toContain('client times out, sends the next request');
  });

  it('measures every server in every phase', () => {
    for (const t of TARGETS) {
      expect(result.sequential[t]!.n, t).toBeGreaterThan(0);
      expect(result.sequential[t]!.p50_us, t).toBeGreaterThan(0);
      expect(result.sequential[t]!.p95_us, t).toBeGreaterThanOrEqual(result.sequential[t]!.p50_us);
      for (const level of ['1', '16']) {
        const r = result.throughput[level]![t]!;
        expect(r.steps_per_s, `${t} at ${level}`).toBeGreaterThan(0);
        expect(['server', 'loadgen', 'neither']).toContain(r.bound);
      }
      expect(result.memory[t]!.sessions, t).toBe(100);
    }
    expect(result.memory['sandgym (one connection)']!.connections).toBe(1);
  });

  it('finds sandgym matching replies by id and OpenEnv shifting them after a client timeout', () => {
    expect(result.desync.sandgym).toMatchObject({ client_timed_out: true, verdict: 'matched by id' });
    expect(result.desync.OpenEnv!.client_timed_out).toBe(true);
    expect(result.desync.OpenEnv!.verdict).toMatch(/^shifted/);
  });
});

describe.skipIf(!present)('peers bench arguments', () => {
  it('refuses a concurrency level below 1 before starting anything', async () => {
    const r = await run(python, [BENCH, '--levels', '1,0'], 60_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("argument --levels: a comma-separated list of integers >= 1, got '1,0'");
  });

  it('refuses a level that is not a number, and a zero duration', async () => {
    const r = await run(python, [BENCH, '--levels', 'many'], 60_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("argument --levels: a comma-separated list of integers >= 1, got 'many'");
    const d = await run(python, [BENCH, '--duration', '0'], 60_000);
    expect(d.code).toBe(2);
    expect(d.stderr).toContain('rounds, seq and idle must be >= 1 and duration > 0');
  });
});
