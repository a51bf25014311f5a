// Log lines of an episode carry session, env, episode and task ids (the server's and the env's own);
// `sandgym tasks stats` reads a running server's statistics; `serve --log-format` chooses the format.
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { defineEnv } from '../../../envs/src/api.js';
import { EnvRegistry } from '../../../envs/src/registry.js';
import { runTasks } from '../../src/cli/tasks.js';
import { serveConfigFromArgs } from '../../src/cli/serve.js';
import { httpBase } from '../../src/cli/tasks-stats.js';
import { RawClient } from '../helpers/raw-client.js';
import { startServer, type TestServer } from '../helpers/server.js';

let server: TestServer | null = null;
afterEach(async () => {
  await server?.stop();
  server = null;
});

/** A task env that logs from inside its step through ctx.logger, and names its task in reset info. */
const taskEnv = defineEnv({
  id: 'x/task-logger-v0',
  description: 'logs from step; two tasks',
  observation_space: { type: 'discrete', n: 2 },
  action_space: { type: 'discrete', n: 2 },
  max_episode_steps: 5,
  catalog: () => [
    { id: 'alpha', split: 'train' },
    { id: 'beta', split: 'train' },
  ],
  create(ctx) {
    let task = 'alpha';
    return {
      async reset(seed) {
        task = seed === 2 ? 'beta' : 'alpha';
        return { observation: 0, info: { task_id: task, split: 'train' } };
      },
      async step(action) {
        ctx.logger.info({ action }, 'env step');
        return { observation: 1, reward: action === 1 ? 1 : 0, terminated: true, info: { task_id: task } };
      },
      async close() {},
    };
  },
});

const NO_DEPS = { openSandboxProvider: async () => Promise.reject(new Error('not used')) };

describe('episode log context', () => {
  it("every line of an episode, the env's included, names session, env, episode and task", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
    const registry = new EnvRegistry();
    registry.registerAll([taskEnv]);
    server = await startServer({}, { logger, registry });
    const c = await RawClient.connect(server.url());
    const sid = await c.make('x/task-logger-v0');
    const r1 = await c.ok('reset', { session: sid, seed: 1 });
    expect(r1.info.task_id).toBe('alpha');
    await c.ok('step', { session: sid, action: 1 });
    await c.ok('reset', { session: sid, seed: 2 });
    await c.ok('step', { session: sid, action: 0 });
    await c.ok('close', { session: sid });
    await c.close();
    const envLines = lines.filter((l) => l.msg === 'env step');
    expect(envLines).toHaveLength(2);
    for (const l of envLines) expect(l).toMatchObject({ session: sid, env: 'x/task-logger-v0' });
    expect(envLines.map((l) => l.task)).toEqual(['alpha', 'beta']);
    expect(envLines[0]!.episode).toMatch(/^e_/);
    expect(envLines[1]!.episode).not.toBe(envLines[0]!.episode);
    // The server's own line for the session after the episodes: the last episode's context.
    expect(lines.find((l) => l.msg === 'session closed')).toMatchObject({ session: sid, env: 'x/task-logger-v0', task: 'beta', episode: envLines[1]!.episode });
  });
});

describe('sandgym tasks stats', () => {
  it('prints the per-task statistics of a running server (table and --json)', async () => {
    const registry = new EnvRegistry();
    registry.registerAll([taskEnv]);
    server = await startServer({}, { registry });
    const c = await RawClient.connect(server.url());
    const sid = await c.make('x/task-logger-v0');
    for (const [seed, action] of [
      [1, 1],
      [1, 0],
      [2, 1],
    ] as const) {
      await c.ok('reset', { session: sid, seed });
      await c.ok('step', { session: sid, action });
    }
    await c.close();
    const out: string[] = [];
    const io = { out: (t: string) => void out.push(t), err: (t: string) => void out.push(t) };
    expect(await runTasks(['stats', '--url', server.url(), '--json'], io, NO_DEPS)).toBe(0);
    const report = JSON.parse(out.join('')) as { envs: { env_id: string; tasks: Record<string, unknown>[] }[] };
    expect(report.envs[0]!.tasks).toEqual([
      expect.objectContaining({ task_id: 'alpha', split: 'train', attempts: 2, successes: 1, pass_rate: 0.5, mean_steps: 1 }),
      expect.objectContaining({ task_id: 'beta', split: 'train', attempts: 1, successes: 1, pass_rate: 1 }),
    ]);
    out.length = 0;
    expect(await runTasks(['stats', '--url', server.httpUrl('/'), '--env', 'x/task-logger-v0'], io, NO_DEPS)).toBe(0);
    const table = out.join('');
    expect(table).toMatch(/^x\/task-logger-v0 \(2 tasks\)/);
    expect(table).toMatch(/alpha\s+train\s+2\s+1\s+50\.0%/);
  });

  it('typed failures: no server (unavailable), an unknown env (failed), a bad URL (usage)', async () => {
    server = await startServer({ tokens: ['sekrit'] });
    const io = { out: () => undefined, err: () => undefined };
    await expect(runTasks(['stats', '--url', 'http://127.0.0.1:1'], io, NO_DEPS)).rejects.toMatchObject({ name: 'UnavailableError' });
    await expect(runTasks(['stats', '--url', server.url()], io, NO_DEPS)).rejects.toThrow(/asks for a token/);
    await expect(runTasks(['stats', '--url', server.url(), '--token', 'sekrit', '--env', 'no/such'], io, NO_DEPS)).rejects.toMatchObject({
      name: 'CommandFailedError',
    });
    expect(() => httpBase('ftp://x', 'tasks stats')).toThrow(/must be a ws/);
    expect(httpBase('wss://h:1/v2/ws', 'c')).toBe('https://h:1');
  });
});

describe('serve --log-format / --no-metrics', () => {
  it('parses into the config; a wrong format is a usage error', async () => {
    expect((await serveConfigFromArgs(['--log-format', 'json']))?.log_format).toBe('json');
    expect((await serveConfigFromArgs(['--log-format', 'pretty']))?.log_format).toBe('pretty');
    expect((await serveConfigFromArgs([]))?.log_format).toBeUndefined();
    expect((await serveConfigFromArgs(['--no-metrics']))?.metrics).toBe(false);
    expect((await serveConfigFromArgs(['--gc-metrics']))?.gc_metrics).toBe(true);
    expect((await serveConfigFromArgs([]))?.gc_metrics).toBeUndefined();
    await expect(serveConfigFromArgs(['--log-format', 'xml'])).rejects.toMatchObject({ name: 'UsageError' });
  });
});
