// Client-level conformance: the TypeScript client against the fixture envs on a live server, in both
// encodings. Covers the guarantees a trainer relies on: pipelining, timeouts that never desynchronise
// later replies, every pending request rejected at once on a drop, and typed errors.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connect,
  isRetryable,
  PROTOCOL_VERSIONS,
  SandgymError,
  type Encoding,
  type EnvHandle,
  type FrameRecord,
  type SandgymClient,
  type ServerEvent,
} from '../../clients/ts/src/index.js';
import { spawnServer, startServer, type TestServer } from '../helpers/server.js';

const ENCODINGS: Encoding[] = ['json', 'msgpack'];

async function rejection(p: Promise<unknown>): Promise<SandgymError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(SandgymError);
    return err as SandgymError;
  }
  throw new Error('expected a rejection, got a result');
}

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ fixtures: true });
});
afterAll(async () => {
  await server?.close();
});

describe.each(ENCODINGS)('TS client against fixtures (%s)', (encoding) => {
  let client: SandgymClient;
  beforeAll(async () => {
    client = await connect(server.url, { encoding, clientName: 'conformance' });
  });
  afterAll(async () => {
    await client?.close();
  });

  it('does hello and exposes server info, limits and capabilities', () => {
    expect(client.serverInfo.name).toBe('sandgym');
    expect(typeof client.serverInfo.version).toBe('string');
    expect(client.protocolVersion).toBe(Math.max(...PROTOCOL_VERSIONS));
    expect(client.capabilities).toMatchObject({ batch: true, msgpack: true, pipelining: true, tool_call: true });
    for (const k of ['max_message_bytes', 'max_sessions', 'max_batch', 'step_timeout_ms', 'idle_timeout_ms'] as const) {
      expect(Number.isInteger(client.limits[k]), k).toBe(true);
    }
  });

  it('lists the fixture envs and pings', async () => {
    const ids = (await client.listEnvs()).map((e) => e.id);
    expect(ids).toEqual(expect.arrayContaining(['test/counter-v0', 'test/truncate-v0', 'test/dict-v0', 'test/tools-v0', 'test/noop-v0', 'test/slow-v0']));
    expect(await client.ping()).toBeGreaterThanOrEqual(0);
  });

  it('runs a counter episode to termination, then needs reset', async () => {
    const env = await client.make<number, number>('test/counter-v0');
    expect(env.spec.id).toBe('test/counter-v0');
    expect(env.spec.max_episode_steps).toBe(10);
    expect(await env.reset({ seed: 1 })).toEqual({ observation: 0, info: {} });
    expect(await env.step(1)).toMatchObject({ observation: 1, reward: 1, terminated: false, truncated: false });
    expect(await env.step(0)).toMatchObject({ observation: 1, reward: 0, terminated: false });
    await env.step(1);
    expect(await env.step(1)).toMatchObject({ observation: 3, reward: 1, terminated: true, truncated: false });
    const err = await rejection(env.step(1));
    expect(err).toMatchObject({ code: 'RESET_NEEDED', scope: 'session', retryable: false });
    await env.close();
    await env.close(); // idempotent
  });

  it('truncates at max_episode_steps', async () => {
    const env = await client.make('test/truncate-v0');
    await env.reset();
    expect(await env.step(0)).toMatchObject({ reward: 0.5, truncated: false });
    expect(await env.step(0)).toMatchObject({ truncated: false });
    expect(await env.step(0)).toMatchObject({ truncated: true, terminated: false });
    expect((await rejection(env.step(0))).code).toBe('RESET_NEEDED');
    await env.close();
  });

  it('pipelines steps on one session and keeps their order', async () => {
    const env = await client.make<number, number>('test/counter-v0');
    const [reset, a, b, c] = await Promise.all([env.reset(), env.step(1), env.step(1), env.step(1)]);
    expect(reset.observation).toBe(0);
    expect([a, b, c].map((r) => r.observation)).toEqual([1, 2, 3]);
    expect(c.terminated).toBe(true);
    await env.close();
  });

  it('multiplexes many sessions with pipelined steps', async () => {
    const envs = await Promise.all(Array.from({ length: 16 }, () => client.make<number, number>('test/counter-v0')));
    await Promise.all(envs.map((e) => e.reset()));
    const results = await Promise.all(envs.map((e, i) => Promise.all([e.step(i % 2), e.step(1)])));
    results.forEach(([first, second], i) => {
      expect(first.observation).toBe(i % 2);
      expect(second.observation).toBe((i % 2) + 1);
    });
    expect(new Set(envs.map((e) => e.session)).size).toBe(16);
    await Promise.all(envs.map((e) => e.close()));
  });

  it('times out a request without desynchronising later replies', async () => {
    const slow = await client.make('test/slow-v0', { delay_ms: 400 });
    const counter = await client.make<number, number>('test/counter-v0');
    await Promise.all([slow.reset(), counter.reset()]);
    const stray: SandgymError[] = [];
    const off = client.on('error', (e) => stray.push(e));
    const timedOut = await rejection(slow.step(0, { timeoutMs: 50 }));
    expect(timedOut).toMatchObject({ code: 'REQUEST_TIMEOUT', retryable: true, scope: 'request' });
    expect(timedOut.details?.timeout_ms).toBe(50);
    // Requests issued while the late reply is still coming, and after it arrived, get their own answers.
    const during = await Promise.all([counter.step(1), client.ping(), counter.step(1)]);
    expect(during[0].observation).toBe(1);
    expect(during[2].observation).toBe(2);
    await new Promise((r) => setTimeout(r, 500));
    expect(await counter.step(1)).toMatchObject({ observation: 3, terminated: true });
    expect(stray).toEqual([]); // the late reply was discarded by id, not reported as unroutable
    off();
    await Promise.all([slow.close(), counter.close()]);
  });

  it('turns server errors into typed SandgymErrors', async () => {
    const unknownEnv = await rejection(client.make('test/does-not-exist-v0'));
    expect(unknownEnv).toMatchObject({ code: 'UNKNOWN_ENV', retryable: false, scope: 'request' });
    expect(isRetryable(unknownEnv)).toBe(false);

    const badKwargs = await rejection(client.make('test/slow-v0', { delay_ms: -1 }));
    expect(badKwargs.code).toBe('INVALID_ARGUMENT');

    const dict = await client.make('test/dict-v0');
    expect((await rejection(dict.step({ move: [0, 0], say: 'x' }))).code).toBe('RESET_NEEDED');
    await dict.reset();
    const invalid = await rejection(dict.step({ move: [5, 0], say: 'hi' }));
    expect(invalid.code).toBe('INVALID_ACTION');
    expect(typeof invalid.details?.path).toBe('string');
    expect(typeof invalid.details?.reason).toBe('string');
    // The session survives an invalid action.
    expect(await dict.step({ move: [1, -1], say: 'hi' })).toMatchObject({ observation: { position: [1, -1], label: 'hi' }, reward: 1 });

    const crash = await client.make('test/crash-v0');
    await crash.reset();
    const envError = await rejection(crash.step(1));
    expect(envError).toMatchObject({ code: 'ENV_ERROR', scope: 'session', retryable: false });
    expect((await rejection(crash.step(0))).code).toBe('RESET_NEEDED');
    await crash.reset();
    expect((await crash.step(0)).reward).toBe(0);

    const sandboxFail = await client.make('test/sandbox-fail-v0');
    const sbErr = await rejection(sandboxFail.reset());
    expect(sbErr).toMatchObject({ code: 'SANDBOX_ERROR', retryable: true, scope: 'session' });
    expect(isRetryable(sbErr)).toBe(true);

    const unknownSession = await rejection(client.request('step', { session: 'never-issued', action: 0 }));
    expect(unknownSession.code).toBe('UNKNOWN_SESSION');

    const unencodable = await rejection(client.request('step', { session: dict.session, action: { move: [Number.NaN, 0], say: '' } }));
    expect(unencodable.code).toBe('INVALID_MESSAGE');
    await Promise.all([dict.close(), crash.close(), sandboxFail.close()]);
  });

  it('runs batches with one typed outcome per item, in order', async () => {
    const envs = await Promise.all(Array.from({ length: 4 }, () => client.make<number, number>('test/counter-v0')));
    const outcomes = await client.batch([
      ...envs.map((e) => ({ type: 'reset' as const, session: e.session, seed: 3 })),
      ...envs.map((e) => ({ type: 'step' as const, session: e.session, action: 1 })),
      { type: 'step', session: envs[0]!.session, action: 7 },
      { type: 'close', session: envs[3]!.session },
    ]);
    expect(outcomes).toHaveLength(10);
    for (const o of outcomes.slice(0, 4)) expect(o).toMatchObject({ type: 'result', result: { observation: 0 } });
    for (const o of outcomes.slice(4, 8)) expect(o).toMatchObject({ type: 'result', result: { observation: 1, reward: 1 } });
    const bad = outcomes[8]!;
    expect(bad.type).toBe('error');
    if (bad.type === 'error') {
      expect(bad.error).toBeInstanceOf(SandgymError);
      expect(bad.error.code).toBe('INVALID_ACTION');
    }
    expect(outcomes[9]).toEqual({ type: 'result', result: {} });
    await Promise.all(envs.map((e) => e.close()));
  });

  it('wraps request ids around uint32 and reports raw frames to onFrame', async () => {
    const frames: FrameRecord[] = [];
    const c = await connect(server.url, { encoding, firstRequestId: 0xffff_fffe, onFrame: (f) => frames.push(f) });
    for (let i = 0; i < 4; i++) await c.ping();
    const sentIds = frames.filter((f) => f.direction === 'sent').map((f) => (f.message as { id: number }).id);
    expect(sentIds).toEqual([0xffff_fffe, 0xffff_ffff, 0, 1, 2]);
    const received = frames.filter((f) => f.direction === 'received');
    expect(received).toHaveLength(5);
    for (const f of frames) expect(typeof f.data === 'string').toBe(encoding === 'json');
    expect(received[0]!.message).toMatchObject({ id: 0xffff_fffe, type: 'result' });
    await c.close();
  });

  it('rejects requests after close immediately', async () => {
    const c = await connect(server.url, { encoding });
    await c.close();
    expect(c.closed).toBe(true);
    const err = await rejection(c.ping());
    expect(err.code).toBe('CONNECTION_CLOSED');
  });
});

describe('TS client connection-level behaviour', () => {
  it('rejects every pending request at once when the server process dies', async () => {
    const proc = await spawnServer(['--fixtures']);
    try {
      const client = await connect(proc.url, { encoding: 'msgpack', requestTimeoutMs: 30_000 });
      const envs: EnvHandle[] = await Promise.all(Array.from({ length: 5 }, () => client.make('test/slow-v0', { delay_ms: 20_000 })));
      await Promise.all(envs.map((e) => e.reset()));
      const pending = envs.map((e) => rejection(e.step(0)));
      await new Promise((r) => setTimeout(r, 100));
      expect(client.inFlight).toBe(5);
      const closed = new Promise<SandgymError>((resolve) => client.on('close', resolve));
      const t0 = Date.now();
      await proc.close('SIGKILL');
      const errors = await Promise.all(pending);
      expect(Date.now() - t0).toBeLessThan(5_000); // not the 30 s request timeout
      for (const e of errors) {
        expect(e.code).toBe('CONNECTION_CLOSED');
        expect(e.scope).toBe('connection');
        expect(e.retryable).toBe(true);
      }
      expect((await closed).code).toBe('CONNECTION_CLOSED');
      expect(client.inFlight).toBe(0);
      expect((await rejection(client.ping())).code).toBe('CONNECTION_CLOSED');
    } finally {
      await proc.close('SIGKILL');
    }
  });

  it('names SHUTTING_DOWN when the server shuts down gracefully with requests pending', async () => {
    const s = await startServer({ fixtures: true });
    const client = await connect(s.url, { encoding: 'json' });
    const env = await client.make('test/slow-v0', { delay_ms: 10_000 });
    await env.reset();
    const events: ServerEvent[] = [];
    client.on('event', (e) => events.push(e));
    const pending = rejection(env.step(0));
    await new Promise((r) => setTimeout(r, 50));
    await s.close();
    const err = await pending;
    expect(['CONNECTION_CLOSED', 'SHUTTING_DOWN']).toContain(err.code);
    if (err.code === 'CONNECTION_CLOSED') expect(err.details?.server_code).toBe('SHUTTING_DOWN');
    expect(err.retryable).toBe(true);
  });

  it('reports UNAUTHORIZED for a missing or wrong token and works with the right one', async () => {
    const s = await startServer({ fixtures: true, tokens: ['s3cret'] });
    try {
      for (const token of [undefined, 'wrong']) {
        const err = await rejection(connect(s.url, token === undefined ? {} : { token }));
        expect([err.code, err.details?.server_code]).toContain('UNAUTHORIZED');
        expect(err.retryable).toBe(false);
      }
      const ok = await connect(s.url, { token: 's3cret', encoding: 'msgpack' });
      expect((await ok.listEnvs()).length).toBeGreaterThan(0);
      await ok.close();
    } finally {
      await s.close();
    }
  });

  it('receives session_closed events when the server reaps an idle session', async () => {
    const s = await startServer({ fixtures: true, idle_timeout_ms: 300 });
    try {
      const client = await connect(s.url);
      const events: ServerEvent[] = [];
      client.on('event', (e) => events.push(e));
      const env = await client.make('test/noop-v0');
      await env.reset();
      await vi_waitFor(() => events.some((e) => e.event === 'session_closed' && e.session === env.session), 5_000);
      expect(events.find((e) => e.session === env.session)?.details).toMatchObject({ reason: expect.any(String) });
      await client.close();
    } finally {
      await s.close();
    }
  });
});

async function vi_waitFor(cond: () => boolean, timeoutMs: number): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
