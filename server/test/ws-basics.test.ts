// The WebSocket loop end to end over a real socket: handshake, make/reset/step/close, both encodings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION, PROTOCOL_VERSIONS, validateEnvSpec, validateResult, validateServerMessage, wsPath } from '../../protocol/src/index.js';
import { RawClient } from './helpers/raw-client.js';
import { startServer, type TestServer } from './helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.stop();
});

describe.each([
  ['json', false],
  ['msgpack', true],
])('episode over %s', (_name, binary) => {
  it('hello advertises version, capabilities and limits', async () => {
    const c = await RawClient.open(server.url(), { binary });
    const r = await c.request('hello', { versions: [...PROTOCOL_VERSIONS], client: { name: 't', version: '1' } });
    expect(r.type).toBe('result');
    expect(r.result.version).toBe(PROTOCOL_VERSION);
    expect(r.result.server.name).toBe('sandgym');
    expect(r.result.capabilities).toMatchObject({ batch: true, msgpack: true, pipelining: true, tool_call: true });
    expect(r.result.limits).toEqual({
      max_message_bytes: 16 * 1024 * 1024,
      max_sessions: 1024,
      max_batch: 1024,
      step_timeout_ms: 60000,
      idle_timeout_ms: 900000,
      max_queued_requests: 4096,
      max_queued_bytes: 64 * 1024 * 1024,
      message_timeout_ms: 60000,
      resume_grace_ms: 0,
    });
    await c.close();
  });

  it('runs a counter episode to termination, then RESET_NEEDED', async () => {
    const c = await RawClient.connect(server.url(), { binary });
    const made = await c.ok('make', { env_id: 'test/counter-v0' });
    expect(made.session).toMatch(/^s_[A-Za-z0-9_-]{20,}$/);
    expect(made.env_spec.id).toBe('test/counter-v0');
    const s = made.session as string;
    expect(await c.ok('reset', { session: s, seed: 1 })).toEqual({ observation: 0, info: {} });
    expect(await c.ok('step', { session: s, action: 1 })).toEqual({ observation: 1, reward: 1, terminated: false, truncated: false, info: {} });
    expect(await c.ok('step', { session: s, action: 0 })).toMatchObject({ observation: 1, reward: 0 });
    await c.ok('step', { session: s, action: 1 });
    expect(await c.ok('step', { session: s, action: 1 })).toMatchObject({ observation: 3, terminated: true, truncated: false });
    const e = await c.fails('step', { session: s, action: 1 });
    expect(e).toMatchObject({ code: 'RESET_NEEDED', scope: 'session', retryable: false });
    await c.ok('reset', { session: s });
    expect(await c.ok('step', { session: s, action: 1 })).toMatchObject({ observation: 1 });
    expect(await c.ok('close', { session: s })).toEqual({});
    expect(await c.ok('close', { session: s })).toEqual({});
    expect((await c.fails('step', { session: s, action: 0 })).code).toBe('UNKNOWN_SESSION');
    await c.close();
  });

  it('dict and tool_call spaces round-trip', async () => {
    const c = await RawClient.connect(server.url(), { binary });
    const d = await c.make('test/dict-v0');
    expect(await c.ok('reset', { session: d })).toEqual({ observation: { position: [0, 0], label: '' }, info: {} });
    expect(await c.ok('step', { session: d, action: { move: [0.5, -1], say: 'hi' } })).toMatchObject({
      observation: { position: [0.5, -1], label: 'hi' },
      reward: 1,
    });
    const t = await c.make('test/tools-v0');
    expect((await c.ok('reset', { session: t })).observation).toBe('ready');
    expect((await c.ok('step', { session: t, action: { name: 'add', arguments: { a: 2, b: 3 } } })).observation).toBe('5');
    expect(await c.ok('step', { session: t, action: { name: 'finish', arguments: { answer: 42 } } })).toMatchObject({ reward: 1, terminated: true });
    await c.close();
  });
});

describe('schema conformance of every result', () => {
  it('hello, list_envs, make, reset, step, close, batch and error frames validate against the protocol schemas', async () => {
    const c = await RawClient.open(server.url());
    const hello = await c.request('hello', { versions: [...PROTOCOL_VERSIONS], client: { name: 't', version: '1' } });
    expect(validateResult('hello', hello.result).ok).toBe(true);
    const envs = await c.ok('list_envs');
    expect(validateResult('list_envs', envs).ok).toBe(true);
    for (const spec of envs.envs) expect(validateEnvSpec(spec), spec.id).toMatchObject({ ok: true });
    for (const env of ['test/counter-v0', 'test/dict-v0', 'test/tools-v0', 'math-v0', 'wordle-v0', 'calculator-tools-v0']) {
      const made = await c.ok('make', { env_id: env });
      expect(validateResult('make', made).ok).toBe(true);
      const s = made.session;
      expect(validateResult('reset', await c.ok('reset', { session: s, seed: 1 })).ok).toBe(true);
      const action =
        env === 'test/dict-v0'
          ? { move: [0, 0], say: 'hi' }
          : env.includes('tools')
            ? { name: env === 'test/tools-v0' ? 'echo' : 'calculate', arguments: env === 'test/tools-v0' ? { text: 'x' } : { expression: '1+1' } }
            : env.startsWith('test/')
              ? 1
              : 'crane';
      const step = await c.ok('step', { session: s, action });
      expect(validateResult('step', step), env).toMatchObject({ ok: true });
      expect(validateResult('close', await c.ok('close', { session: s })).ok).toBe(true);
    }
    const s = await c.make('test/counter-v0');
    const batch = await c.ok('batch', {
      requests: [
        { type: 'reset', session: s },
        { type: 'step', session: s, action: 5 },
      ],
    });
    expect(validateResult('batch', batch).ok).toBe(true);
    const errFrame = await c.request('step', { session: 's_nope', action: 0 });
    expect(validateServerMessage(errFrame).ok).toBe(true);
    await c.close();
  });
});

describe('protocol rules', () => {
  it('only ping may precede hello', async () => {
    const c = await RawClient.open(server.url());
    expect((await c.ok('ping', { t: 5 })).t).toBe(5);
    expect(await c.ok('ping')).toEqual({});
    expect((await c.fails('list_envs')).code).toBe('HANDSHAKE_REQUIRED');
    expect((await c.fails('make', { env_id: 'test/counter-v0' })).code).toBe('HANDSHAKE_REQUIRED');
    await c.ok('hello', { versions: [...PROTOCOL_VERSIONS], client: { name: 't', version: '1' } });
    const again = await c.fails('hello', { versions: [...PROTOCOL_VERSIONS], client: { name: 't', version: '1' } });
    expect(again.code).toBe('INVALID_MESSAGE');
    await c.close();
  });

  it('UNSUPPORTED_VERSION names the supported versions; a corrected hello gets the highest common one', async () => {
    expect(PROTOCOL_VERSIONS).not.toContain(1); // protocol 1 is refused since the outcome taxonomy (PROTOCOL.md 7)
    const newer = Math.max(...PROTOCOL_VERSIONS) + 1;
    const c = await RawClient.open(server.url());
    const e = await c.fails('hello', { versions: [1, newer], client: { name: 't', version: '1' } });
    expect(e).toMatchObject({ code: 'UNSUPPORTED_VERSION', retryable: false, scope: 'request', details: { supported: [...PROTOCOL_VERSIONS] } });
    expect(e.message).toContain(JSON.stringify(PROTOCOL_VERSIONS));
    const hello = await c.ok('hello', { versions: [newer, ...PROTOCOL_VERSIONS, 1], client: { name: 't', version: '1' } });
    expect(hello.version).toBe(Math.max(...PROTOCOL_VERSIONS));
    await c.close();
  });

  it("an older major's endpoint (/v1/ws) upgrades and its hello is refused with UNSUPPORTED_VERSION, not an HTTP 404", async () => {
    for (let major = 1; major < PROTOCOL_VERSION; major++) {
      const url = new URL(server.url());
      url.pathname = wsPath(major);
      const c = await RawClient.open(url.href);
      const e = await c.fails('hello', { versions: [major], client: { name: `v${major}-client`, version: '1' } });
      expect(e).toMatchObject({ code: 'UNSUPPORTED_VERSION', details: { supported: [...PROTOCOL_VERSIONS] } });
      expect((await c.fails('list_envs')).code).toBe('HANDSHAKE_REQUIRED');
      await c.close();
    }
  });

  it('a path of no major we know is still an HTTP 404', async () => {
    const url = new URL(server.url());
    url.pathname = wsPath(PROTOCOL_VERSION + 1);
    await expect(RawClient.open(url.href)).rejects.toThrow(/404/);
  });

  it('parse errors answer with id null and keep the connection', async () => {
    const c = await RawClient.connect(server.url());
    c.sendRaw('{not json');
    const e = await c.waitFor(null);
    expect(e.error.code).toBe('PARSE_ERROR');
    c.sendRaw(Buffer.from([0xc1]));
    expect((await c.waitFor(null)).error.code).toBe('PARSE_ERROR');
    c.sendRaw(JSON.stringify({ id: 7, type: 'nope' }));
    expect((await c.waitFor(7)).error.code).toBe('UNKNOWN_TYPE');
    c.sendRaw(JSON.stringify({ id: 8, type: 'make' }));
    expect((await c.waitFor(8)).error.code).toBe('INVALID_MESSAGE');
    expect((await c.ok('list_envs')).envs.length).toBeGreaterThan(3);
    await c.close();
  });

  it('unknown env, unknown session, bad kwargs', async () => {
    const c = await RawClient.connect(server.url());
    expect(await c.fails('make', { env_id: 'nope-v0' })).toMatchObject({ code: 'UNKNOWN_ENV' });
    expect(await c.fails('step', { session: 's_nope', action: 0 })).toMatchObject({ code: 'UNKNOWN_SESSION' });
    expect(await c.fails('close', { session: 's_nope' })).toMatchObject({ code: 'UNKNOWN_SESSION' });
    const bad = await c.fails('make', { env_id: 'test/slow-v0', kwargs: { delay_ms: -1 } });
    expect(bad.code).toBe('INVALID_ARGUMENT');
    expect(bad.details.path).toBe('/delay_ms');
    const extra = await c.fails('make', { env_id: 'test/slow-v0', kwargs: { nope: 1 } });
    expect(extra).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: '/nope' } });
    await c.close();
  });

  it('INVALID_ACTION leaves the session usable and the env untouched', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/counter-v0');
    await c.ok('reset', { session: s });
    const e = await c.fails('step', { session: s, action: 2 });
    expect(e.code).toBe('INVALID_ACTION');
    expect(typeof e.details.path).toBe('string');
    expect(typeof e.details.reason).toBe('string');
    expect((await c.fails('step', { session: s, action: 'x' })).code).toBe('INVALID_ACTION');
    expect((await c.ok('step', { session: s, action: 1 })).observation).toBe(1);
    const t = await c.make('test/tools-v0');
    await c.ok('reset', { session: t });
    expect((await c.fails('step', { session: t, action: { name: 'rm', arguments: {} } })).code).toBe('INVALID_ACTION');
    expect((await c.fails('step', { session: t, action: { name: 'echo', arguments: { text: 1 } } })).code).toBe('INVALID_ACTION');
    await c.close();
  });

  it('server truncates at max_episode_steps', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/truncate-v0');
    await c.ok('reset', { session: s });
    expect(await c.ok('step', { session: s, action: 0 })).toMatchObject({ truncated: false, reward: 0.5 });
    expect(await c.ok('step', { session: s, action: 0 })).toMatchObject({ truncated: false });
    expect(await c.ok('step', { session: s, action: 0 })).toMatchObject({ observation: 3, truncated: true, terminated: false });
    expect((await c.fails('step', { session: s, action: 0 })).code).toBe('RESET_NEEDED');
    await c.ok('reset', { session: s });
    expect(await c.ok('step', { session: s, action: 0 })).toMatchObject({ observation: 1, truncated: false });
    await c.close();
  });

  it('sessions are invisible to other connections', async () => {
    const a = await RawClient.connect(server.url());
    const b = await RawClient.connect(server.url());
    const s = await a.make('test/counter-v0');
    await a.ok('reset', { session: s });
    expect((await b.fails('step', { session: s, action: 1 })).code).toBe('UNKNOWN_SESSION');
    expect((await b.fails('close', { session: s })).code).toBe('UNKNOWN_SESSION');
    expect((await a.ok('step', { session: s, action: 1 })).observation).toBe(1);
    await a.close();
    await b.close();
  });

  it('answers in the encoding of each request on a mixed connection', async () => {
    const c = await RawClient.connect(server.url());
    const s = await c.make('test/counter-v0');
    const r1 = c.waitFor(100);
    c.sendFrame({ id: 100, type: 'reset', session: s }, true);
    expect((await r1).result.observation).toBe(0);
    const r2 = c.waitFor(101);
    c.sendFrame({ id: 101, type: 'step', session: s, action: 1 }, false);
    expect((await r2).result.observation).toBe(1);
    await c.close();
  });
});
