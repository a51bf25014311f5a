// The hand-written step fast path must answer exactly like the generic validator path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawClient } from './helpers/raw-client.js';
import { startServer, type TestServer } from './helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.stop();
});

describe('step fast path', () => {
  it('malformed steps get the validator errors', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/counter-v0');
    await c.ok('reset', { session: s });
    const cases: [Record<string, unknown>, string][] = [
      [{ id: 1, type: 'step', session: '', action: 0 }, 'INVALID_MESSAGE'],
      [{ id: 2, type: 'step', session: 'x'.repeat(200), action: 0 }, 'INVALID_MESSAGE'],
      [{ id: 3, type: 'step', session: s }, 'INVALID_MESSAGE'],
      [{ id: 4, type: 'step', session: s, action: 0, extra: 1 }, 'INVALID_MESSAGE'],
      [{ id: 5, type: 'step', session: 7, action: 0 }, 'INVALID_MESSAGE'],
      [{ id: 6, type: 'step', session: 's_unknown', action: 0 }, 'UNKNOWN_SESSION'],
    ];
    for (const [frame, code] of cases) {
      const w = c.waitFor(frame.id as number);
      c.sendFrame(frame);
      expect((await w).error.code, JSON.stringify(frame).slice(0, 60)).toBe(code);
    }
    const bad = c.waitFor(null);
    c.sendFrame({ id: -1, type: 'step', session: s, action: 0 });
    expect((await bad).error.code).toBe('INVALID_MESSAGE');
    expect((await c.ok('step', { session: s, action: 1 })).observation).toBe(1);
    await c.close();
  });

  it('a step before hello is HANDSHAKE_REQUIRED even for a well-formed frame', async () => {
    const c = await RawClient.open(server.url());
    expect((await c.fails('step', { session: 's_x', action: 0 })).code).toBe('HANDSHAKE_REQUIRED');
    await c.close();
  });
});
