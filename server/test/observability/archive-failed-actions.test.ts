// A step that fails is part of the trajectory: the archive records the action the client sent with the
// error's code (INVALID_ACTION, TIMEOUT, ENV_ERROR...), over a real server and socket; an agent's huge
// invalid actions are booked against the per-episode cap like any step (bounded memory) and cannot erase
// the episode from the archive.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Archive } from '../../src/observability/archive/index.js';
import { loadArchive } from '../../src/observability/archive/reader.js';
import { RawClient } from '../helpers/raw-client.js';
import type { TestServer } from '../helpers/server.js';
import { archivedServer } from './archive-helpers.js';

let server: TestServer | null = null;
const dirs: string[] = [];
afterEach(async () => {
  await server?.stop();
  server = null;
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'sandgym-archive-failed-'));
  dirs.push(d);
  return d;
}

describe('archive: failed steps keep their action and error code', () => {
  it('an invalid action (request scope) and an env error (session scope) are archived with the action sent', async () => {
    const dir = await tempDir();
    ({ server } = await archivedServer({ location: dir, flush_ms: 60_000 }));
    const c = await RawClient.connect(server.url());
    const counter = await c.make('test/counter-v0');
    await c.ok('reset', { session: counter, seed: 1 });
    await c.ok('step', { session: counter, action: 1 });
    expect((await c.fails('step', { session: counter, action: 7 })).code).toBe('INVALID_ACTION');
    expect((await c.fails('step', { session: counter, action: 'seven' })).code).toBe('INVALID_ACTION');
    await c.ok('step', { session: counter, action: 1 });
    const crash = await c.make('test/crash-v0');
    await c.ok('reset', { session: crash, seed: 2 });
    await c.ok('step', { session: crash, action: 0 });
    expect((await c.fails('step', { session: crash, action: 1 })).code).toBe('ENV_ERROR');
    await c.close();
    await server.stop();
    server = null;

    const records = await loadArchive(dir);
    const ctr = records.find((r) => r.session_id === counter);
    expect(ctr?.steps.map((s) => s.action)).toEqual([1, 1]);
    expect(ctr?.request_errors.map((e) => [e.op, e.code, e.step_index, e.action])).toEqual([
      ['step', 'INVALID_ACTION', 1, 7],
      ['step', 'INVALID_ACTION', 1, 'seven'],
    ]);
    const cr = records.find((r) => r.session_id === crash);
    expect(cr).toMatchObject({ end: 'error', outcome: 'env_error', length: 1 });
    expect(cr?.error).toMatchObject({ op: 'step', code: 'ENV_ERROR', scope: 'session', step_index: 1, action: 1 });
  });

  it('a step past the step deadline: TIMEOUT is archived with the action that timed out', async () => {
    const dir = await tempDir();
    ({ server } = await archivedServer({ location: dir, flush_ms: 60_000 }, { step_timeout_ms: 200 }));
    const c = await RawClient.connect(server.url());
    const slow = await c.make('test/slow-v0', { delay_ms: 30_000 });
    await c.ok('reset', { session: slow, seed: 1 });
    expect((await c.fails('step', { session: slow, action: 0 })).code).toBe('TIMEOUT');
    await c.close();
    await server.stop();
    server = null;

    const [r] = await loadArchive(dir);
    expect(r).toMatchObject({ session_id: slow, end: 'error', length: 0 });
    expect(r?.error).toMatchObject({ op: 'step', code: 'TIMEOUT', step_index: 0, action: 0 });
  });

  it('huge invalid actions count against the per-episode cap: the episode is kept without steps or actions, memory released', async () => {
    const dir = await tempDir();
    let archive: Archive;
    ({ server, archive } = await archivedServer({ location: dir, max_episode_bytes: 4000, flush_ms: 60_000 }));
    const c = await RawClient.connect(server.url());
    const s = await c.make('math-v0');
    await c.ok('reset', { session: s, seed: 3 });
    // Past math-v0's 8192-character action space: refused, and each would be archived whole.
    for (let i = 0; i < 3; i++) expect((await c.fails('step', { session: s, action: 'y'.repeat(9000) })).code).toBe('INVALID_ACTION');
    await c.ok('step', { session: s, action: 'wrong' });
    await c.close();
    await archive.flush();
    expect(archive.stats().held_bytes).toBe(0);
    expect(archive.stats().episodes_dropped.episode_too_large).toBe(1);
    await server.stop();
    server = null;

    const [r] = await loadArchive(dir);
    expect(r).toMatchObject({
      session_id: s,
      end: 'terminated',
      outcome: 'failure',
      length: 1,
      steps: [],
      steps_omitted: { reason: 'episode_too_large', steps: 1 },
    });
    // The errors are still listed (codes, for failure analysis); the actions that filled the cap are not.
    expect(r?.request_errors.map((e) => [e.code, 'action' in e])).toEqual([
      ['INVALID_ACTION', false],
      ['INVALID_ACTION', false],
      ['INVALID_ACTION', false],
    ]);
  });
});
