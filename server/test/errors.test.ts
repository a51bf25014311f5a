// Error paths: env failures, deadlines, poisoning, capacity, encodability.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawClient } from './helpers/raw-client.js';
import { lifecycle, testRegistry } from './helpers/extra-envs.js';
import { startServer, sleep, until, type TestServer } from './helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ step_timeout_ms: 200, reset_timeout_ms: 2000, max_sessions_per_connection: 3, max_sessions: 5 }, { registry: testRegistry() });
});
afterAll(async () => {
  await server.stop();
});

describe('env failures', () => {
  it('ENV_ERROR poisons only that session', async () => {
    const c = await RawClient.connect(server.url());
    const bad = await c.make('test/crash-v0');
    const good = await c.make('test/counter-v0');
    await c.ok('reset', { session: bad });
    await c.ok('reset', { session: good });
    expect((await c.ok('step', { session: bad, action: 0 })).reward).toBe(0);
    const e = await c.fails('step', { session: bad, action: 1 });
    expect(e).toMatchObject({ code: 'ENV_ERROR', scope: 'session', retryable: false });
    expect(e.message).toContain('simulated crash');
    expect((await c.fails('step', { session: bad, action: 0 })).code).toBe('RESET_NEEDED');
    expect((await c.ok('step', { session: good, action: 1 })).observation).toBe(1);
    await c.ok('reset', { session: bad });
    expect((await c.ok('step', { session: bad, action: 0 })).reward).toBe(0);
    expect(await c.ok('close', { session: bad })).toEqual({});
    await c.close();
  });

  it('a non-finite reward is ENV_ERROR', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('x/bad-reward-v0');
    await c.ok('reset', { session: s });
    const e = await c.fails('step', { session: s, action: 1 });
    expect(e.code).toBe('ENV_ERROR');
    expect(e.message).toMatch(/non-finite reward/);
    expect((await c.fails('step', { session: s, action: 0 })).code).toBe('RESET_NEEDED');
    await c.close();
  });

  it('an unencodable observation is ENV_ERROR, not a broken frame', async () => {
    const c = await RawClient.connect(server.url(), { binary: true });
    const s = await c.make('x/bad-obs-v0');
    await c.ok('reset', { session: s });
    expect((await c.fails('step', { session: s, action: 0 })).code).toBe('ENV_ERROR');
    expect((await c.fails('step', { session: s, action: 0 })).code).toBe('RESET_NEEDED');
    await c.close();
  });

  it('an unencodable result inside a batch is an ENV_ERROR item; the rest of the batch is fine', async () => {
    const c = await RawClient.connect(server.url());
    const bad = await c.make('x/bad-obs-v0');
    const good = await c.make('test/counter-v0');
    const r = await c.ok('batch', {
      requests: [
        { type: 'reset', session: bad },
        { type: 'reset', session: good },
        { type: 'step', session: bad, action: 0 },
        { type: 'step', session: good, action: 1 },
      ],
    });
    expect(r.results[2]).toMatchObject({ type: 'error', error: { code: 'ENV_ERROR' } });
    expect(r.results[3]).toMatchObject({ type: 'result', result: { observation: 1 } });
    await c.close();
  });

  it('SandboxFailure is SANDBOX_ERROR (retryable, session scope)', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/sandbox-fail-v0');
    const e = await c.fails('reset', { session: s });
    expect(e).toMatchObject({ code: 'SANDBOX_ERROR', retryable: true, scope: 'session', details: { reason: 'sandbox died: simulated' } });
    expect((await c.fails('step', { session: s, action: 0 })).code).toBe('RESET_NEEDED');
    await c.close();
  });

  it('InvalidArgument maps to INVALID_ARGUMENT (make, reset) and INVALID_ACTION (step)', async () => {
    const c = await RawClient.connect(server.url());
    expect(await c.fails('make', { env_id: 'x/args-v0', kwargs: { explode: true } })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { path: '/explode' },
    });
    const s = await c.make('x/args-v0');
    expect(await c.fails('reset', { session: s, options: { level: 9 } })).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: '/level' } });
    expect((await c.ok('reset', { session: s, options: { level: 2 } })).info).toEqual({ level: 2 });
    expect((await c.fails('step', { session: s, action: 1 })).code).toBe('INVALID_ACTION');
    expect((await c.ok('step', { session: s, action: 0 })).reward).toBe(0);
    await c.close();
  });

  it('bad seeds are refused before the env sees them', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/counter-v0');
    for (const seed of [-1, 1.5, 'x']) {
      const e = await c.fails('reset', { session: s, seed });
      expect(['INVALID_MESSAGE', 'INVALID_ARGUMENT']).toContain(e.code);
    }
    await c.ok('reset', { session: s, seed: 2 ** 53 - 1 });
    await c.close();
  });
});

describe('deadlines', () => {
  it('TIMEOUT poisons the session; the late result is discarded; reset recovers', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/slow-v0', { delay_ms: 500 });
    await c.ok('reset', { session: s });
    const t0 = Date.now();
    const e = await c.fails('step', { session: s, action: 0 });
    expect(Date.now() - t0).toBeLessThan(450);
    expect(e).toMatchObject({ code: 'TIMEOUT', retryable: true, scope: 'session', details: { timeout_ms: 200 } });
    expect((await c.fails('step', { session: s, action: 0 })).code).toBe('RESET_NEEDED');
    await sleep(400);
    // No stray frame from the late env result.
    expect(c.unclaimed).toEqual([]);
    await c.ok('reset', { session: s });
    await c.close();
  });

  it('a hung env never blocks other sessions, and close still works', async () => {
    const c = await RawClient.connect(server.url());
    const h = await c.make('x/hang-v0');
    const ok = await c.make('test/counter-v0');
    await c.ok('reset', { session: h });
    await c.ok('reset', { session: ok });
    const hung = c.request('step', { session: h, action: 1 });
    expect((await c.ok('step', { session: ok, action: 1 })).observation).toBe(1);
    expect((await hung).error.code).toBe('TIMEOUT');
    expect(await c.ok('close', { session: h })).toEqual({});
    await c.close();
  });
});

describe('make deadline', () => {
  it('a create() slower than reset_timeout_ms -> TIMEOUT; the slot is freed and the late instance closed', async () => {
    const slow = await startServer({ reset_timeout_ms: 300 }, { registry: testRegistry() });
    try {
      const c = await RawClient.connect(slow.url());
      const before = lifecycle.closed;
      const e = await c.fails('make', { env_id: 'x/slow-create-v0', kwargs: { ms: 800 } });
      expect(e).toMatchObject({ code: 'TIMEOUT', details: { timeout_ms: 300 } });
      expect(slow.sessionCount()).toBe(0);
      await until(() => lifecycle.closed > before, 3000, 'late instance closed');
      await c.make('x/slow-create-v0', { ms: 1 });
      await c.close();
    } finally {
      await slow.stop();
    }
  });
});

describe('capacity', () => {
  it('per-connection cap -> CAPACITY with retry_after_ms; closing frees a slot', async () => {
    const c = await RawClient.connect(server.url());
    const ids = [await c.make('test/noop-v0'), await c.make('test/noop-v0'), await c.make('test/noop-v0')];
    const e = await c.fails('make', { env_id: 'test/noop-v0' });
    expect(e).toMatchObject({ code: 'CAPACITY', retryable: true });
    expect(e.details.retry_after_ms).toBeGreaterThan(0);
    await c.ok('close', { session: ids[0] });
    await c.make('test/noop-v0');
    await c.close();
  });

  it('server-wide cap counts every connection; a closed connection frees its sessions', async () => {
    const a = await RawClient.connect(server.url());
    const b = await RawClient.connect(server.url());
    await until(() => server.sessionCount() === 0, 5000, 'earlier sessions to close');
    for (let i = 0; i < 3; i++) await a.make('test/noop-v0');
    await b.make('test/noop-v0');
    await b.make('test/noop-v0');
    const e = await b.fails('make', { env_id: 'test/noop-v0' });
    expect(e.code).toBe('CAPACITY');
    expect(e.details.limit).toBe('max_sessions');
    await a.close();
    await until(() => server.sessionCount() === 2, 5000, 'sessions of the closed connection');
    await b.make('test/noop-v0');
    await b.close();
  });

  it('concurrent makes cannot overshoot the cap', async () => {
    await until(() => server.sessionCount() === 0, 5000, 'earlier sessions to close');
    const c = await RawClient.connect(server.url());
    const replies = await Promise.all(Array.from({ length: 6 }, () => c.request('make', { env_id: 'test/noop-v0' })));
    expect(replies.filter((r) => r.type === 'result')).toHaveLength(3);
    expect(replies.filter((r) => r.type === 'error' && r.error.code === 'CAPACITY')).toHaveLength(3);
    await c.close();
  });
});

describe('connection close', () => {
  it('closes every session of the connection: env.close called, signal aborted', async () => {
    await until(() => server.sessionCount() === 0, 5000, 'earlier sessions to close');
    const before = { ...lifecycle };
    const c = await RawClient.connect(server.url());
    await c.make('x/lifecycle-v0');
    await c.make('x/lifecycle-v0');
    expect(lifecycle.created - before.created).toBe(2);
    await c.close();
    await until(() => lifecycle.closed - before.closed === 2, 5000, 'env.close calls');
    expect(lifecycle.aborted - before.aborted).toBe(2);
    expect(server.sessionCount()).toBe(0);
  });
});
