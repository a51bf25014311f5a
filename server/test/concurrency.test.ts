// Per-session ordering, cross-session concurrency, pipelining and batch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawClient } from './helpers/raw-client.js';
import { startServer, type TestServer } from './helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ max_batch: 8 });
});
afterAll(async () => {
  await server.stop();
});

describe('pipelining', () => {
  it('pipelined steps on one session answer in order', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/truncate-v0');
    await c.ok('reset', { session: s });
    const order: number[] = [];
    const ids = [11, 12, 13];
    const waits = ids.map((id) => c.waitFor(id).then((f) => (order.push(id), f)));
    for (const id of ids) c.sendFrame({ id, type: 'step', session: s, action: 0 });
    const frames = await Promise.all(waits);
    expect(order).toEqual(ids);
    expect(frames.map((f) => f.result.observation)).toEqual([1, 2, 3]);
    expect(frames[2]!.result.truncated).toBe(true);
    await c.close();
  });

  it('reset, step, close pipelined in one go keep their order', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/counter-v0');
    const w = [c.waitFor(21), c.waitFor(22), c.waitFor(23), c.waitFor(24)];
    c.sendFrame({ id: 21, type: 'reset', session: s, seed: 3 });
    c.sendFrame({ id: 22, type: 'step', session: s, action: 1 });
    c.sendFrame({ id: 23, type: 'close', session: s });
    c.sendFrame({ id: 24, type: 'step', session: s, action: 1 });
    const [r, st, cl, late] = await Promise.all(w);
    expect(r!.result.observation).toBe(0);
    expect(st!.result.observation).toBe(1);
    expect(cl!.result).toEqual({});
    expect(late!.error.code).toBe('UNKNOWN_SESSION');
    await c.close();
  });

  it('a slow session does not block a fast one on the same connection', async () => {
    const c = await RawClient.connect(server.url());
    const slow = await c.make('test/slow-v0', { delay_ms: 400 });
    const fast = await c.make('test/counter-v0');
    await c.ok('reset', { session: slow });
    await c.ok('reset', { session: fast });
    const seen: string[] = [];
    const a = c.request('step', { session: slow, action: 0 }).then(() => seen.push('slow'));
    const b = c.request('step', { session: fast, action: 1 }).then(() => seen.push('fast'));
    await Promise.all([a, b]);
    expect(seen).toEqual(['fast', 'slow']);
    await c.close();
  });

  it('steps on different slow sessions run concurrently', async () => {
    const c = await RawClient.connect(server.url());
    const sessions = await Promise.all([1, 2, 3, 4].map(() => c.make('test/slow-v0', { delay_ms: 300 })));
    await Promise.all(sessions.map((s) => c.ok('reset', { session: s })));
    const t0 = Date.now();
    await Promise.all(sessions.map((s) => c.ok('step', { session: s, action: 0 })));
    expect(Date.now() - t0).toBeLessThan(1000);
    await c.close();
  });
});

describe('batch', () => {
  it('returns one result per item in order, errors inline', async () => {
    const c = await RawClient.connect(server.url());
    const a = await c.make('test/counter-v0');
    const b = await c.make('test/truncate-v0');
    const r = await c.ok('batch', {
      requests: [
        { type: 'reset', session: a },
        { type: 'reset', session: b },
        { type: 'step', session: a, action: 1 },
        { type: 'step', session: b, action: 0 },
        { type: 'step', session: a, action: 1 },
        { type: 'step', session: 's_unknown', action: 0 },
        { type: 'step', session: a, action: 7 },
        { type: 'close', session: b },
      ],
    });
    expect(r.results).toHaveLength(8);
    expect(r.results[0]).toEqual({ type: 'result', result: { observation: 0, info: {} } });
    expect(r.results[2].result.observation).toBe(1);
    expect(r.results[3].result.observation).toBe(1);
    expect(r.results[4].result.observation).toBe(2);
    expect(r.results[5]).toMatchObject({ type: 'error', error: { code: 'UNKNOWN_SESSION' } });
    expect(r.results[6]).toMatchObject({ type: 'error', error: { code: 'INVALID_ACTION' } });
    expect(r.results[7]).toEqual({ type: 'result', result: {} });
    await c.close();
  });

  it('runs different sessions concurrently within a batch', async () => {
    const c = await RawClient.connect(server.url());
    const ss = await Promise.all([1, 2, 3].map(() => c.make('test/slow-v0', { delay_ms: 300 })));
    await c.ok('batch', { requests: ss.map((s) => ({ type: 'reset', session: s })) });
    const t0 = Date.now();
    const r = await c.ok('batch', { requests: ss.map((s) => ({ type: 'step', session: s, action: 0 })) });
    expect(Date.now() - t0).toBeLessThan(800);
    expect(r.results.every((x: { type: string }) => x.type === 'result')).toBe(true);
    await c.close();
  });

  it('batch over max_batch is refused', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/noop-v0');
    const items = Array.from({ length: 9 }, () => ({ type: 'step', session: s, action: 0 }));
    const e = await c.fails('batch', { requests: items });
    expect(e.code).toBe('INVALID_MESSAGE');
    expect(e.details.max_batch).toBe(8);
    await c.close();
  });

  it('batch items interleave correctly with pipelined requests on the same session', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/truncate-v0');
    await c.ok('reset', { session: s });
    const w1 = c.waitFor(31);
    const w2 = c.waitFor(32);
    const w3 = c.waitFor(33);
    c.sendFrame({ id: 31, type: 'step', session: s, action: 0 });
    c.sendFrame({ id: 32, type: 'batch', requests: [{ type: 'step', session: s, action: 0 }] });
    c.sendFrame({ id: 33, type: 'step', session: s, action: 0 });
    expect((await w1).result.observation).toBe(1);
    expect((await w2).result.results[0].result.observation).toBe(2);
    expect((await w3).result).toMatchObject({ observation: 3, truncated: true });
    await c.close();
  });
});
