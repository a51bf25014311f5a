// The trajectory archive over a real server and socket: a mix of episodes (solved, failed, an invalid
// action inside an episode, truncated, an env error, abandoned by a reset, closed mid-episode) archived
// to a directory and to a real S3-compatible server (MinIO), read back and checked field by field;
// hello announces it; the shutdown path flushes it.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSIONS } from '../../../protocol/src/index.js';
import type { Archive } from '../../src/observability/archive/index.js';
import type { EpisodeRecord } from '../../src/observability/archive/format.js';
import { loadArchive, readSummaries } from '../../src/observability/archive/reader.js';
import type { EpisodeSummary } from '../../src/observability/episode-tracker.js';
import { runCli } from '../helpers/cli.js';
import { RawClient } from '../helpers/raw-client.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { archivedServer, driveMix, gateS3, s3Facility, startS3, type MixResult, type S3Server } from './archive-helpers.js';

let server: TestServer | null = null;
const dirs: string[] = [];
afterEach(async () => {
  await server?.stop();
  server = null;
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'sandgym-archive-'));
  dirs.push(d);
  return d;
}

async function helloCapabilities(url: string): Promise<Record<string, boolean>> {
  const c = await RawClient.open(url);
  const r = await c.request('hello', { versions: [...PROTOCOL_VERSIONS], client: { name: 'test', version: '0' } });
  await c.close();
  return (r.result as { capabilities: Record<string, boolean> }).capabilities;
}

function bySession(records: EpisodeRecord[], session: string): EpisodeRecord[] {
  return records.filter((r) => r.session_id === session);
}

/** The assertions both stores share: every episode of the mix, exactly. */
function checkMix(records: EpisodeRecord[], mix: MixResult, instance: string): void {
  // 2 math probes/solved/failed + counter + truncated + crashed + 2 (abandoned, closed) = 8 episodes.
  expect(records).toHaveLength(8);
  expect(new Set(records.map((r) => r.episode_id)).size).toBe(8);
  for (const r of records) {
    expect(r.format).toBe('sandgym.episode/1');
    expect(r.server.instance).toBe(instance);
    expect(Date.parse(r.ended_at)).toBeGreaterThanOrEqual(Date.parse(r.started_at));
    expect(r.connection_id).toMatch(/^c_\d+$/);
  }

  const [solved] = bySession(records, mix.solved.session);
  expect(solved).toMatchObject({
    env_id: 'math-v0',
    seed: 11,
    options: {},
    kwargs: {},
    end: 'terminated',
    outcome: 'success',
    score: 1,
    success: true,
    length: 1,
    return: mix.solved.reward,
    task: null,
  });
  expect(mix.solved.reward).toBe(1);
  expect(solved?.steps).toHaveLength(1);
  expect(solved?.steps[0]).toMatchObject({ step: 0, action: mix.solved.answer, observation: 'Correct.', reward: 1, terminated: true, truncated: false });
  expect(solved?.steps[0]?.info.reward_components).toEqual({ correctness: 0.9, format: 0.1 });
  expect(solved?.steps[0]?.duration_ms).toBeGreaterThanOrEqual(0);
  expect(typeof solved?.reset?.observation).toBe('string');
  expect(solved?.reset?.info).toMatchObject({ seed: 11 });

  const [failed] = bySession(records, mix.failed.session);
  expect(failed).toMatchObject({
    env_id: 'math-v0',
    seed: 12,
    kwargs: { difficulty: 'easy' },
    end: 'terminated',
    outcome: 'failure',
    success: false,
    return: 0,
  });
  expect(failed?.steps[0]?.action).toBe('-1.5');

  const [counter] = bySession(records, mix.counter.session);
  expect(counter).toMatchObject({ end: 'terminated', length: 3, return: 3, seed: 3 });
  expect(counter?.steps.map((s) => [s.step, s.action, s.observation, s.reward])).toEqual([
    [0, 1, 1, 1],
    [1, 1, 2, 1],
    [2, 1, 3, 1],
  ]);
  // The invalid action is a request-scope error inside the episode: recorded, the episode went on.
  expect(counter?.request_errors).toHaveLength(1);
  expect(counter?.request_errors[0]).toMatchObject({ op: 'step', code: 'INVALID_ACTION', scope: 'request', step_index: 1, action: 7 });

  const [trunc] = bySession(records, mix.truncated.session);
  expect(trunc).toMatchObject({ env_id: 'test/truncate-v0', end: 'truncated', length: 3, return: 1.5 });
  expect(trunc?.steps.map((s) => s.truncated)).toEqual([false, false, true]);

  const [crash] = bySession(records, mix.crashed.session);
  expect(crash).toMatchObject({ env_id: 'test/crash-v0', end: 'error', outcome: 'env_error', success: false, length: 1 });
  expect(crash?.error).toMatchObject({ op: 'step', code: 'ENV_ERROR', scope: 'session', step_index: 1, action: 1 });

  const ab = bySession(records, mix.abandonedThenClosed.session);
  expect(ab.map((r) => [r.end, r.outcome, r.seed, r.length])).toEqual([
    ['abandoned', 'abandoned', 5, 1],
    ['closed', 'abandoned', 6, 1],
  ]);
  expect(ab[1]?.close_reason).toBeTruthy();
}

describe('trajectory archive: local directory', () => {
  it('archives every finished episode of a mix, with its outcome, and announces it in hello', async () => {
    const dir = await tempDir();
    let archive: Archive;
    ({ server, archive } = await archivedServer({ location: dir, flush_ms: 60_000 }));
    expect((await helloCapabilities(server.url())).archive).toBe(true);
    const mix = await driveMix(server.url());
    // The batch timer is a minute away: what makes the files appear is the server's close (flush on shutdown).
    expect(await readdir(dir)).toEqual([]);
    await server.stop();
    server = null;
    const records = await loadArchive(dir);
    checkMix(records, mix, archive.stats().instance);
    const s = archive.stats();
    expect(s).toMatchObject({
      episodes_written: 8,
      objects_written: 1,
      held_bytes: 0,
      episodes_dropped: { memory: 0, tenant_memory: 0, episode_too_large: 0, store_error: 0 },
    });
  });

  it('the archive summarises each episode as the live episode tracker did (same outcome, score, task)', async () => {
    const dir = await tempDir();
    let archive: Archive;
    ({ server, archive } = await archivedServer({ location: dir }));
    const live: EpisodeSummary[] = [];
    server.observability?.tracker.onFinished((s) => live.push(s));
    await driveMix(server.url());
    await server.stop();
    server = null;
    const archived: EpisodeSummary[] = [];
    for await (const s of readSummaries(dir)) archived.push(s);
    expect(archive.stats().episodes_written).toBe(8);
    const key = (s: EpisodeSummary) => [s.episode_id, s.env_id, s.task_id, s.outcome, s.steps, s.return, s.score, s.success];
    // The tracker has no episode for a failed reset; the mix has none, so both see the same 8.
    expect(archived.map(key).sort()).toEqual(live.map(key).sort());
  });

  it('an episode still running at shutdown is archived on the way down: end closed, outcome shutdown', async () => {
    const dir = await tempDir();
    ({ server } = await archivedServer({ location: dir, flush_ms: 3_600_000 }));
    const c = await RawClient.connect(server.url());
    const sid = await c.make('test/counter-v0');
    await c.ok('reset', { session: sid, seed: 4 });
    await c.ok('step', { session: sid, action: 1 });
    await server.stop();
    server = null;
    await c.closed;
    const [r] = await loadArchive(dir);
    expect(r).toMatchObject({ session_id: sid, end: 'closed', outcome: 'shutdown', length: 1, close_reason: 'server is shutting down' });
  });

  it('a server without --archive says archive: false (absent) in hello', async () => {
    server = await startServer();
    expect((await helloCapabilities(server.url())).archive).toBeUndefined();
  });

  it('drops (and counts) trajectories beyond the memory cap instead of holding them, keeps the episode as a record without steps, and keeps the rest', async () => {
    const dir = await tempDir();
    // Room for a small counter episode, not for a math episode's observation text.
    let archive: Archive;
    // One connection is one tenant: its share is the whole cap here (the per-tenant cap has its own suite).
    ({ server, archive } = await archivedServer({ location: dir, max_bytes: 1500, max_tenant_bytes: 1500, flush_ms: 60_000 }));
    const c = await RawClient.connect(server.url());
    const s1 = await c.make('test/counter-v0');
    await c.ok('reset', { session: s1, seed: 1 });
    for (let i = 0; i < 3; i++) await c.ok('step', { session: s1, action: 1 });
    await archive.flush(); // written: its bytes are released
    const s2 = await c.make('math-v0');
    await c.ok('reset', { session: s2, seed: 1 });
    await c.ok('step', { session: s2, action: 'x'.repeat(3000) });
    await c.close();
    await archive.flush();
    // The operator sees it on /metrics.
    const scrape = await (await fetch(server.httpUrl('/metrics'))).text();
    expect(scrape).toMatch(/^sandgym_archive_episodes_dropped_total\{reason="memory"\} 1$/m);
    // Written: the counter episode, and the math episode's record without steps.
    expect(scrape).toMatch(/^sandgym_archive_episodes_written_total 2$/m);
    expect(scrape).toMatch(/^sandgym_archive_held_bytes 0$/m);
    await server.stop();
    server = null;
    const records = await loadArchive(dir);
    expect(records.map((r) => r.env_id)).toEqual(['test/counter-v0', 'math-v0']);
    expect(records[1]).toMatchObject({ outcome: 'failure', length: 1, steps: [], steps_omitted: { reason: 'memory', steps: 1 } });
    expect(archive.stats().episodes_dropped.memory).toBe(1);
    expect(archive.stats().held_bytes).toBe(0);
  });
});

describe('trajectory archive: S3-compatible server (MinIO)', async () => {
  const run = gateS3(s3Facility());
  let s3: S3Server | null = null;
  const saved: Record<string, string | undefined> = {};
  beforeAll(async () => {
    if (!run) return;
    s3 = await startS3();
    // The SDK's default credential chain reads these (as a deployed server would).
    for (const [k, v] of Object.entries(s3.env)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  }, 120_000);
  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await s3?.stop();
  });

  it.runIf(run)(
    'archives the same mix to s3://bucket/prefix, object names sorting by time',
    async () => {
      const bucket = await (s3 as S3Server).bucket(`sandgym-test-${Date.now().toString(36)}`);
      let archive: Archive;
      ({ server, archive } = await archivedServer({ location: `s3://${bucket}/runs/a`, flush_ms: 60_000, s3: { endpoint: (s3 as S3Server).endpoint } }));
      const mix = await driveMix(server.url());
      // A batch before the end: two objects, in order.
      await archive.flush();
      const c = await RawClient.connect(server.url());
      const extra = await c.make('test/counter-v0');
      await c.ok('reset', { session: extra, seed: 9 });
      await c.ok('step', { session: extra, action: 0 });
      await c.close();
      await server.stop();
      server = null;
      const names = await archive.store.list();
      expect(names).toHaveLength(2);
      expect([...names].sort()).toEqual(names);
      for (const n of names) expect(n).toMatch(new RegExp(`^\\d{4}/\\d{2}/\\d{2}/\\d{8}T\\d{9}Z-${archive.stats().instance}-\\d{6}\\.jsonl\\.gz$`));
      const records = await loadArchive(`s3://${bucket}/runs/a`);
      const last = records.pop() as EpisodeRecord;
      expect(last).toMatchObject({ session_id: extra, end: 'closed', length: 1 });
      checkMix(records, mix, archive.stats().instance);
    },
    120_000,
  );

  it.runIf(run)(
    'sandgym serve refuses at start a bucket that does not exist (exit 4)',
    async () => {
      const s = s3 as S3Server;
      const r = await runCli(
        ['serve', '--driver', 'none', '--port', '0', '--archive', 's3://sandgym-no-such-bucket/x', '--archive-s3-endpoint', s.endpoint],
        s.env,
        60_000,
      );
      expect(r.code).toBe(4);
      expect(r.stderr).toContain('s3://sandgym-no-such-bucket/x: no such bucket');
    },
    120_000,
  );

  it.runIf(run)(
    'a bucket that does not exist: batches are retried, then counted as lost; the server keeps serving',
    async () => {
      let archive: Archive;
      ({ server, archive } = await archivedServer({
        location: 's3://sandgym-no-such-bucket/x',
        flush_ms: 60_000,
        s3: { endpoint: (s3 as S3Server).endpoint },
      }));
      const c = await RawClient.connect(server.url());
      const sid = await c.make('test/counter-v0');
      await c.ok('reset', { session: sid, seed: 1 });
      for (let i = 0; i < 3; i++) await c.ok('step', { session: sid, action: 1 });
      await archive.flush();
      // The lost batch's bytes are released (the reset below books its own: it is checked before).
      expect(archive.stats()).toMatchObject({ episodes_written: 0, episodes_dropped: { store_error: 1 }, held_bytes: 0 });
      expect(archive.stats().write_errors).toBeGreaterThanOrEqual(1);
      // Still serving after the store refused.
      await c.ok('reset', { session: sid, seed: 2 });
      await c.close();
    },
    120_000,
  );
});
