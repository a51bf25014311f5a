// Shared by the archive suites: a mix of episodes driven over a real socket, and where a real
// S3-compatible server (MinIO) is: $SANDGYM_TEST_S3_ENDPOINT (started by .ci/run) or a MinIO binary this
// helper starts itself ($SANDGYM_MINIO_BIN, else the one .ci/run caches under ~/.cache/sandgym/bin).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import pino from 'pino';
import { wsPath } from '../../../protocol/src/index.js';
import { buildApp } from '../../src/app.js';
import type { ServerConfig } from '../../src/config.js';
import { installArchive, type Archive } from '../../src/observability/archive/index.js';
import type { ArchiveOptions } from '../../src/observability/archive/options.js';
import type { TestServer } from '../helpers/server.js';
import type { Facility } from '../sandbox/facilities.js';
import { RawClient } from '../helpers/raw-client.js';

/** What the mix did, for the assertions: per episode kind, its session and what the client saw. */
export interface MixResult {
  solved: { session: string; seed: number; answer: string; reward: number };
  failed: { session: string; seed: number; reward: number };
  /** counter: 1 step, then INVALID_ACTION, then 2 steps (terminated). */
  counter: { session: string; rewards: number[] };
  truncated: { session: string };
  crashed: { session: string };
  /** counter reset, one step, reset again (abandoned), then closed mid-episode. */
  abandonedThenClosed: { session: string };
}

/** Drives the mix on one connection, every episode with its own session. */
export async function driveMix(url: string): Promise<MixResult> {
  const c = await RawClient.connect(url);
  try {
    // math-v0: learn the answer of seed 11, then solve it in a new session; seed 12 answered wrong.
    const probe = await c.make('math-v0');
    await c.ok('reset', { session: probe, seed: 11 });
    const probed = await c.ok('step', { session: probe, action: 'no idea' });
    await c.ok('close', { session: probe });
    const answer = `\\boxed{${String((probed.info as { expected: number }).expected)}}`;
    const solved = await c.make('math-v0');
    await c.ok('reset', { session: solved, seed: 11 });
    const win = await c.ok('step', { session: solved, action: answer });
    const failed = await c.make('math-v0', { difficulty: 'easy' });
    await c.ok('reset', { session: failed, seed: 12 });
    const loss = await c.ok('step', { session: failed, action: '-1.5' });

    const counter = await c.make('test/counter-v0');
    await c.ok('reset', { session: counter, seed: 3 });
    const rewards = [(await c.ok('step', { session: counter, action: 1 })).reward as number];
    const bad = await c.fails('step', { session: counter, action: 7 });
    if (bad.code !== 'INVALID_ACTION') throw new Error(`expected INVALID_ACTION, got ${JSON.stringify(bad)}`);
    rewards.push((await c.ok('step', { session: counter, action: 1 })).reward as number);
    rewards.push((await c.ok('step', { session: counter, action: 1 })).reward as number);

    const truncated = await c.make('test/truncate-v0');
    await c.ok('reset', { session: truncated, seed: 1 });
    for (let i = 0; i < 3; i++) await c.ok('step', { session: truncated, action: 0 });

    const crashed = await c.make('test/crash-v0');
    await c.ok('reset', { session: crashed, seed: 2 });
    await c.ok('step', { session: crashed, action: 0 });
    const crash = await c.fails('step', { session: crashed, action: 1 });
    if (crash.code !== 'ENV_ERROR') throw new Error(`expected ENV_ERROR, got ${JSON.stringify(crash)}`);

    const ab = await c.make('test/counter-v0');
    await c.ok('reset', { session: ab, seed: 5 });
    await c.ok('step', { session: ab, action: 1 });
    await c.ok('reset', { session: ab, seed: 6 });
    await c.ok('step', { session: ab, action: 0 });
    await c.ok('close', { session: ab });
    return {
      solved: { session: solved, seed: 11, answer, reward: win.reward as number },
      failed: { session: failed, seed: 12, reward: loss.reward as number },
      counter: { session: counter, rewards },
      truncated: { session: truncated },
      crashed: { session: crashed },
      abandonedThenClosed: { session: ab },
    };
  } finally {
    await c.close();
  }
}

export interface S3Server {
  endpoint: string;
  env: NodeJS.ProcessEnv;
  /** Makes a bucket (unique per test) and returns its name. */
  bucket(name: string): Promise<string>;
  stop(): Promise<void>;
}

const CREDS = { AWS_ACCESS_KEY_ID: 'sandgymtest', AWS_SECRET_ACCESS_KEY: 'sandgymtest-secret', AWS_REGION: 'us-east-1' };

/** The MinIO binary: $SANDGYM_MINIO_BIN, else the newest one .ci/run cached. */
export function minioBinary(): string | null {
  if (process.env.SANDGYM_MINIO_BIN) return existsSync(process.env.SANDGYM_MINIO_BIN) ? process.env.SANDGYM_MINIO_BIN : null;
  const cache = join(homedir(), '.cache', 'sandgym', 'bin');
  if (!existsSync(cache)) return null;
  const dirs = readdirSync(cache)
    .filter((d) => d.startsWith('minio-') && existsSync(join(cache, d, 'minio')))
    .sort();
  const last = dirs[dirs.length - 1];
  return last ? join(cache, last, 'minio') : null;
}

/** A real S3-compatible server is reachable or can be started here. */
export function s3Facility(): Facility {
  if (process.env.SANDGYM_TEST_S3_ENDPOINT) return { ok: true, reason: '' };
  if (minioBinary()) return { ok: true, reason: '' };
  return {
    ok: false,
    reason: 'no S3-compatible server: set SANDGYM_TEST_S3_ENDPOINT (with AWS_* credentials) or build MinIO as .ci/run does (SANDGYM_MINIO_BIN)',
  };
}

/** Skips (with the reason) unless SANDGYM_REQUIRE_S3=1, which makes a missing server a failure (CI). */
export function gateS3(f: Facility): boolean {
  if (!f.ok && process.env.SANDGYM_REQUIRE_S3 === '1') throw new Error(`S3 is required (SANDGYM_REQUIRE_S3=1) but unavailable: ${f.reason}`);
  if (!f.ok) console.warn(`[archive tests] skipping S3 suites: ${f.reason}`);
  return f.ok;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

async function waitHealthy(endpoint: string, child: ChildProcess | null, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`minio exited with ${child.exitCode}`);
    try {
      const r = await fetch(`${endpoint}/minio/health/live`);
      if (r.ok) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > end) throw new Error(`${endpoint} did not become healthy within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The S3 server of this run: the one CI started, or a MinIO of our own on a free port. */
export async function startS3(): Promise<S3Server> {
  let child: ChildProcess | null = null;
  let dir: string | null = null;
  let endpoint = process.env.SANDGYM_TEST_S3_ENDPOINT;
  let env: NodeJS.ProcessEnv;
  if (endpoint) {
    // .ci/run's MinIO: its credentials in SANDGYM_TEST_S3_ACCESS_KEY / _SECRET_KEY (else the AWS_* ones).
    env = {
      AWS_ACCESS_KEY_ID: process.env.SANDGYM_TEST_S3_ACCESS_KEY ?? process.env.AWS_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: process.env.SANDGYM_TEST_S3_SECRET_KEY ?? process.env.AWS_SECRET_ACCESS_KEY,
      AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    };
  } else {
    const bin = minioBinary() as string;
    dir = await mkdtemp(join(tmpdir(), 'sandgym-minio-'));
    const port = await freePort();
    endpoint = `http://127.0.0.1:${port}`;
    env = { ...CREDS };
    child = spawn(bin, ['server', dir, '--address', `127.0.0.1:${port}`, '--console-address', '127.0.0.1:0', '--quiet'], {
      env: { ...process.env, MINIO_ROOT_USER: CREDS.AWS_ACCESS_KEY_ID, MINIO_ROOT_PASSWORD: CREDS.AWS_SECRET_ACCESS_KEY, MINIO_BROWSER: 'off' },
      stdio: 'ignore',
    });
  }
  await waitHealthy(endpoint, child, 60_000);
  const url = endpoint;
  const fullEnv = { ...env, AWS_ENDPOINT_URL_S3: url };
  return {
    endpoint: url,
    env: fullEnv,
    async bucket(name) {
      const client = new S3Client({
        region: 'us-east-1',
        endpoint: url,
        forcePathStyle: true,
        credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID as string, secretAccessKey: env.AWS_SECRET_ACCESS_KEY as string },
      });
      try {
        await client.send(new CreateBucketCommand({ Bucket: name }));
      } finally {
        client.destroy();
      }
      return name;
    },
    async stop() {
      if (child && child.exitCode === null) {
        const exited = new Promise((r) => child?.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A real server (fixtures on) with an archive installed before it listens, as `sandgym serve --archive` does. */
export async function archivedServer(opts: ArchiveOptions, config: Partial<ServerConfig> = {}): Promise<{ server: TestServer; archive: Archive }> {
  const built = await buildApp({ fixtures: true, port: 0, ...config }, { logger: pino({ level: process.env.SANDGYM_TEST_LOG ?? 'silent' }) });
  const archive = await installArchive(built, opts);
  await built.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (built.app.server.address() as { port: number }).port;
  return {
    archive,
    server: { ...built, url: () => `ws://127.0.0.1:${port}${wsPath()}`, httpUrl: (p: string) => `http://127.0.0.1:${port}${p}`, stop: () => built.app.close() },
  };
}
