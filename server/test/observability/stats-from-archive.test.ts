// Task statistics start from the archive (what `serve --archive` does on start): episodes archived by
// one server count in the next server's /v2/tasks/stats exactly as they counted live.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { defineEnv } from '../../../envs/src/api.js';
import { EnvRegistry } from '../../../envs/src/registry.js';
import { PROTOCOL_VERSION } from '../../../protocol/src/index.js';
import { buildApp } from '../../src/app.js';
import { installArchive } from '../../src/observability/archive/index.js';
import { readSummaries } from '../../src/observability/archive/reader.js';
import { RawClient } from '../helpers/raw-client.js';
import { startServer, type TestServer } from '../helpers/server.js';

const env = defineEnv({
  id: 'x/two-tasks-v0',
  description: 'two tasks; action 1 solves',
  observation_space: { type: 'discrete', n: 2 },
  action_space: { type: 'discrete', n: 2 },
  max_episode_steps: 5,
  catalog: () => [
    { id: 'alpha', split: 'train' },
    { id: 'beta', split: 'train' },
  ],
  create() {
    let task = 'alpha';
    return {
      async reset(seed) {
        task = seed === 2 ? 'beta' : 'alpha';
        return { observation: 0, info: { task_id: task, split: 'train' } };
      },
      async step(action) {
        return { observation: 1, reward: action === 1 ? 1 : 0, terminated: true, info: {} };
      },
      async close() {},
    };
  },
});

function registry(): EnvRegistry {
  const r = new EnvRegistry();
  r.registerAll([env]);
  return r;
}

const servers: TestServer[] = [];
let dir = '';
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function stats(base: string): Promise<Record<string, unknown>[]> {
  const body = (await (await fetch(`${base}/v${PROTOCOL_VERSION}/tasks/stats`)).json()) as { envs: { tasks: Record<string, unknown>[] }[] };
  return body.envs[0]!.tasks;
}

const log = { info: () => undefined, warn: () => undefined };

describe('task statistics from the archive', () => {
  it('counts archived episodes as they counted live', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-stats-archive-'));
    // Archive installed before listening, as `sandgym serve --archive` does.
    const a = await buildApp({ port: 0 }, { registry: registry(), logger: pino({ level: 'silent' }) });
    await installArchive(a, { location: dir, flush_ms: 50 });
    await a.app.listen({ port: 0, host: '127.0.0.1' });
    const c = await RawClient.connect(a.url());
    const sid = await c.make('x/two-tasks-v0');
    for (const [seed, action] of [
      [1, 1],
      [1, 0],
      [2, 0],
    ] as const) {
      await c.ok('reset', { session: sid, seed });
      await c.ok('step', { session: sid, action });
    }
    await c.close();
    const live = await stats(
      a
        .url()
        .replace(/^ws/, 'http')
        .replace(/\/v\d+\/ws$/, ''),
    );
    await a.app.close(); // flushes the archive
    const b = await startServer({}, { registry: registry() });
    servers.push(b);
    expect(await b.observability!.loadHistory(readSummaries(dir), log)).toBe(3);
    const loaded = await stats(b.httpUrl(''));
    expect(loaded.map(({ last_at: _l, ...rest }) => rest)).toEqual(live.map(({ last_at: _l, ...rest }) => rest));
    expect(loaded.find((t) => t.task_id === 'alpha')).toMatchObject({ attempts: 2, successes: 1, pass_rate: 0.5 });
  });

  it('an archive that cannot be read leaves the statistics empty and the server up', async () => {
    const warnings: unknown[] = [];
    const b = await startServer({}, { registry: registry() });
    servers.push(b);
    const n = await b.observability!.loadHistory(readSummaries('/nonexistent/sandgym-archive'), {
      info: () => undefined,
      warn: (o: unknown) => void warnings.push(o),
    });
    expect(n).toBe(0);
    expect(warnings).toHaveLength(1);
    expect((await stats(b.httpUrl(''))).every((t) => t.attempts === 0)).toBe(true);
  });
});
