// Connection-level behaviour: auth, oversize frames, idle reaping, heartbeats, shutdown, HTTP routes.
import { afterEach, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION, PROTOCOL_VERSIONS } from '../../protocol/src/index.js';
import { RawClient } from './helpers/raw-client.js';
import { lifecycle, testRegistry } from './helpers/extra-envs.js';
import { startServer, sleep, until, type TestServer } from './helpers/server.js';

let server: TestServer | null = null;
afterEach(async () => {
  await server?.stop();
  server = null;
});

const HELLO = { versions: [...PROTOCOL_VERSIONS], client: { name: 't', version: '1' } };

describe('auth', () => {
  it('accepts the token from the Authorization header', async () => {
    server = await startServer({ tokens: ['sekrit', 'other'] });
    const c = await RawClient.connect(server.url(), { headers: { authorization: 'Bearer other' } });
    expect((await c.ok('list_envs')).envs.length).toBeGreaterThan(0);
    await c.close();
  });

  it('accepts the token from hello.token', async () => {
    server = await startServer({ tokens: ['sekrit'] });
    const c = await RawClient.connect(server.url(), { token: 'sekrit' });
    await c.make('test/counter-v0');
    await c.close();
  });

  it('missing token -> UNAUTHORIZED then close 4401', async () => {
    server = await startServer({ tokens: ['sekrit'] });
    const c = await RawClient.open(server.url());
    const e = await c.fails('hello', HELLO);
    expect(e).toMatchObject({ code: 'UNAUTHORIZED', scope: 'connection' });
    expect((await c.closed).code).toBe(4401);
  });

  it('wrong hello token -> UNAUTHORIZED then close 4401', async () => {
    server = await startServer({ tokens: ['sekrit'] });
    const c = await RawClient.open(server.url());
    expect((await c.fails('hello', { ...HELLO, token: 'sekrix' })).code).toBe('UNAUTHORIZED');
    expect((await c.closed).code).toBe(4401);
  });

  it('wrong header token -> UNAUTHORIZED (id null) then close 4401 at once', async () => {
    server = await startServer({ tokens: ['sekrit'] });
    const c = await RawClient.open(server.url(), { headers: { authorization: 'Bearer nope' } });
    const f = await c.nextUnclaimed();
    expect(f).toMatchObject({ id: null, type: 'error', error: { code: 'UNAUTHORIZED' } });
    expect((await c.closed).code).toBe(4401);
  });

  it('no tokens configured -> no auth needed', async () => {
    server = await startServer();
    const c = await RawClient.connect(server.url(), { token: 'whatever' });
    await c.close();
  });
});

describe('limits', () => {
  it('a frame over max_message_bytes -> TOO_LARGE then close 1009', async () => {
    server = await startServer({ max_message_bytes: 2048 });
    const c = await RawClient.connect(server.url());
    const hello = await c.ok('ping');
    expect(hello).toEqual({});
    c.sendRaw(JSON.stringify({ id: 9, type: 'ping', t: 1, pad: 'x'.repeat(4000) }));
    const f = await c.nextUnclaimed();
    expect(f).toMatchObject({ id: null, error: { code: 'TOO_LARGE' } });
    expect((await c.closed).code).toBe(1009);
  });

  it('a frame far over the limit is closed with 1009 by the socket layer', async () => {
    server = await startServer({ max_message_bytes: 2048 });
    const c = await RawClient.connect(server.url());
    c.sendRaw(Buffer.alloc(200_000, 0x20));
    expect((await c.closed).code).toBe(1009);
  });
});

describe('reaping', () => {
  it('idle sessions are closed with a session_closed event', async () => {
    server = await startServer({ idle_timeout_ms: 150 }, { registry: testRegistry() });
    const c = await RawClient.connect(server.url());
    const before = lifecycle.closed;
    const s = await c.make('x/lifecycle-v0');
    const ev = await c.nextUnclaimed(3000);
    expect(ev).toMatchObject({ type: 'event', event: 'session_closed', session: s, details: { code: 'TIMEOUT' } });
    expect(typeof ev.details.reason).toBe('string');
    await until(() => lifecycle.closed > before, 2000, 'env close');
    expect((await c.fails('step', { session: s, action: 0 })).code).toBe('UNKNOWN_SESSION');
    expect(await c.ok('close', { session: s })).toEqual({});
    expect(server.sessionCount()).toBe(0);
    await c.close();
  });

  it('an active session is not reaped', async () => {
    server = await startServer({ idle_timeout_ms: 200 });
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/noop-v0');
    await c.ok('reset', { session: s });
    for (let i = 0; i < 8; i++) {
      await sleep(60);
      await c.ok('step', { session: s, action: 0 });
    }
    expect(c.unclaimed).toEqual([]);
    await c.close();
  });

  it('a session busy in a long step is not reaped', async () => {
    server = await startServer({ idle_timeout_ms: 100, step_timeout_ms: 5000 });
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/slow-v0', { delay_ms: 400 });
    await c.ok('reset', { session: s });
    expect((await c.ok('step', { session: s, action: 0 })).reward).toBe(0);
    await c.close();
  });

  it('a half-open connection (no pongs) is terminated and its sessions closed', async () => {
    server = await startServer({ heartbeat_ms: 100 }, { registry: testRegistry() });
    const before = lifecycle.closed;
    const c = await RawClient.connect(server.url(), { autoPong: false });
    await c.make('x/lifecycle-v0');
    expect(server.sessionCount()).toBe(1);
    const closed = await c.closed;
    expect(closed.code).toBe(1006);
    await until(() => server!.sessionCount() === 0, 3000, 'sessions reaped');
    expect(lifecycle.closed).toBeGreaterThan(before);
  });

  it('a connection that answers pings survives heartbeats', async () => {
    server = await startServer({ heartbeat_ms: 50 });
    const c = await RawClient.connect(server.url());
    await sleep(300);
    expect(c.ws.readyState).toBe(c.ws.OPEN);
    await c.ok('ping');
    await c.close();
  });
});

describe('shutdown', () => {
  it('closes sessions, sends shutdown + SHUTTING_DOWN and closes with 1001', async () => {
    server = await startServer({}, { registry: testRegistry() });
    const before = lifecycle.closed;
    const c = await RawClient.connect(server.url());
    const s = await c.make('x/lifecycle-v0');
    await server.stop();
    server = null;
    const closed = await c.closed;
    expect(closed.code).toBe(1001);
    const frames = c.unclaimed;
    expect(frames.some((f) => f.type === 'event' && f.event === 'shutdown')).toBe(true);
    expect(frames.some((f) => f.type === 'event' && f.event === 'session_closed' && f.session === s)).toBe(true);
    expect(frames.some((f) => f.type === 'error' && f.error.code === 'SHUTTING_DOWN')).toBe(true);
    expect(lifecycle.closed).toBeGreaterThan(before);
  });
});

describe('http routes', () => {
  it('healthz, readyz, envs, schema', async () => {
    server = await startServer();
    const health = await fetch(server.httpUrl('/healthz'));
    expect(health.status).toBe(200);
    const ready = await fetch(server.httpUrl('/readyz'));
    expect(ready.status).toBe(200);
    const envs = (await (await fetch(server.httpUrl(`/v${PROTOCOL_VERSION}/envs`))).json()) as { envs: { id: string }[] };
    const c = await RawClient.connect(server.url());
    expect(envs.envs).toEqual((await c.ok('list_envs')).envs);
    await c.close();
    expect(envs.envs.map((e) => e.id)).toEqual(expect.arrayContaining(['math-v0', 'wordle-v0', 'calculator-tools-v0', 'test/counter-v0']));
    const schema = (await (await fetch(server.httpUrl(`/v${PROTOCOL_VERSION}/schema`))).json()) as { version: number; schemas: Record<string, unknown> };
    expect(schema.version).toBe(PROTOCOL_VERSION);
    expect(Object.keys(schema.schemas).length).toBeGreaterThan(0);
  });

  it("an older major's envs and schema routes answer 404 with the typed UNSUPPORTED_VERSION", async () => {
    server = await startServer();
    for (let major = 1; major < PROTOCOL_VERSION; major++) {
      for (const route of ['envs', 'schema']) {
        const r = await fetch(server.httpUrl(`/v${major}/${route}`));
        expect(r.status, `/v${major}/${route}`).toBe(404);
        expect(await r.json()).toMatchObject({ error: { code: 'UNSUPPORTED_VERSION', retryable: false, details: { supported: [...PROTOCOL_VERSIONS] } } });
      }
    }
  });

  it('readyz is 503 with a reason when the sandbox layer is not ready', async () => {
    server = await startServer(
      {},
      {
        sandbox: {
          ready: () => ({ ready: false, reason: 'warming pool' }),
          unsupported: () => null,
          forSession: () => {
            throw new Error('unused');
          },
          close: async () => {},
        },
      },
    );
    const r = await fetch(server.httpUrl('/readyz'));
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ status: 'not_ready', reason: 'warming pool' });
  });
});
