// Server hardening (issue 13), each over a real server on a loopback socket: nothing before hello is
// expensive (byte budget, handshake deadline, connection caps, unfinished-message deadline, nesting
// refused before parse), every request whose id can be read gets its reply, bounded session queues and
// output, close abandons a running step, invalid UTF-8 keeps the connection, echoed names are clipped,
// kwargs are not logged whole, whitespace tokens are refused.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { EnvDefinition } from '../../envs/src/api.js';
import { fixtureEnvs } from '../../envs/src/fixtures/index.js';
import { EnvRegistry } from '../../envs/src/registry.js';
import { decodeFrame, PROTOCOL_VERSIONS } from '../../protocol/src/index.js';
import { ConfigError, loadConfigFile, resolveConfig, type ServerConfig } from '../src/config.js';
import { RawClient, type Frame } from './helpers/raw-client.js';
import { startServer, until, type TestServer } from './helpers/server.js';
import type { Connection } from '../src/connection/connection.js';

const TOKEN = 'hardening-token';

function registryWith(...defs: EnvDefinition[]): EnvRegistry {
  const r = new EnvRegistry();
  r.registerAll(fixtureEnvs);
  r.registerAll(defs);
  return r;
}
const HELLO = { versions: [...PROTOCOL_VERSIONS], client: { name: 'hardening', version: '0' } };

const servers: TestServer[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.ws.terminate();
  for (const s of servers.splice(0)) await s.stop();
});

async function server(config: Partial<ServerConfig> = {}, registry?: EnvRegistry, logger?: pino.Logger): Promise<TestServer> {
  const s = await startServer(config, { ...(registry ? { registry } : {}), ...(logger ? { logger } : {}) });
  servers.push(s);
  return s;
}

async function open(url: string, opts: Parameters<typeof RawClient.open>[1] = {}): Promise<RawClient> {
  const c = await RawClient.open(url, opts);
  clients.push(c);
  return c;
}

async function connect(url: string, token?: string): Promise<RawClient> {
  const c = await RawClient.connect(url, token ? { token } : {});
  clients.push(c);
  return c;
}

/** An upgrade the server refuses over HTTP: its status and JSON body. */
function refusedUpgrade(url: string): Promise<{ status: number; retryAfter: string | undefined; body: Frame }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => {
      ws.terminate();
      reject(new Error('upgrade was accepted'));
    });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined, body: JSON.parse(text) as Frame }),
      );
    });
    ws.once('error', () => undefined);
  });
}

/** Hand-built msgpack (the codec refuses to write what these tests send). */
const mp = {
  str(s: string): Buffer {
    const b = Buffer.from(s, 'utf8');
    if (b.length > 31) throw new Error('fixstr only');
    return Buffer.concat([Buffer.from([0xa0 | b.length]), b]);
  },
  map(entries: Array<[string, Buffer]>): Buffer {
    return Buffer.concat([Buffer.from([0x80 | entries.length]), ...entries.flatMap(([k, v]) => [mp.str(k), v])]);
  },
  uint(n: number): Buffer {
    if (n < 128) return Buffer.from([n]);
    const b = Buffer.alloc(5);
    b[0] = 0xce;
    b.writeUInt32BE(n, 1);
    return b;
  },
  nan: Buffer.from([0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0]),
};

describe('pre-auth budget', () => {
  it('an unauthenticated connection that sends more than handshake_max_bytes is cut off with TOO_LARGE / 1009', async () => {
    const s = await server({ tokens: [TOKEN], handshake_max_bytes: 4096 });
    const c = await open(s.url());
    // One 64 KiB frame: below max_message_bytes, so before the budget it was decoded and answered.
    c.sendRaw(JSON.stringify({ id: 1, type: 'ping', pad: 'x'.repeat(64 * 1024) }));
    const err = await c.nextUnclaimed();
    expect(err.error).toMatchObject({ code: 'TOO_LARGE', details: { max_message_bytes: 4096, limit: 'handshake_max_bytes' } });
    expect((await c.closed).code).toBe(1009);
  });

  it('an unfinished fragmented message before hello is cut off at the budget, not buffered to max_message_bytes', async () => {
    const s = await server({ tokens: [TOKEN], handshake_max_bytes: 4096 });
    const c = await open(s.url());
    // First fragment of a text message that never ends (fin = false).
    c.ws.send('x'.repeat(32 * 1024), { fin: false });
    expect((await c.closed).code).toBe(1009);
    await until(() => s.core.connections.size === 0, 10_000, 'the connection to be gone');
  });

  it('after hello the budget is gone: a 64 KiB frame is answered and the connection stays', async () => {
    const s = await server({ tokens: [TOKEN], handshake_max_bytes: 4096 });
    const c = await connect(s.url(), TOKEN);
    c.sendRaw(JSON.stringify({ id: 7, type: 'ping', pad: 'x'.repeat(64 * 1024) }));
    expect((await c.waitFor(7)).error.code).toBe('INVALID_MESSAGE');
    expect(await c.ok('ping', { t: 1 })).toEqual({ t: 1 });
  });

  it('a connection that never says hello is closed at the handshake deadline (CONNECTION_TIMEOUT, 4408)', async () => {
    const s = await server({ tokens: [TOKEN], handshake_timeout_ms: 200 });
    const c = await open(s.url());
    const err = await c.nextUnclaimed();
    expect(err).toMatchObject({
      id: null,
      type: 'error',
      error: { code: 'CONNECTION_TIMEOUT', scope: 'connection', details: { what: 'hello', timeout_ms: 200 } },
    });
    expect((await c.closed).code).toBe(4408);
    await until(() => s.core.pendingHandshakes === 0, 10_000, 'the pending handshake to be released');
  });

  it('a message left unfinished after hello is refused at message_timeout_ms (CONNECTION_TIMEOUT, 4408)', async () => {
    const s = await server({ message_timeout_ms: 200 });
    const c = await connect(s.url());
    c.ws.send('{"id": 1, "type": "pi', { fin: false });
    const err = await c.nextUnclaimed();
    expect(err.error).toMatchObject({ code: 'CONNECTION_TIMEOUT', details: { what: 'message', timeout_ms: 200 } });
    expect((await c.closed).code).toBe(4408);
  });

  it('an idle connection is not an unfinished message', async () => {
    const s = await server({ message_timeout_ms: 100 });
    const c = await connect(s.url());
    // Several sweeps pass while nothing is being received; the connection must stay.
    await new Promise((r) => setTimeout(r, 600));
    expect(await c.ok('ping', { t: 2 })).toEqual({ t: 2 });
  });

  it('connections per address beyond the cap are refused with HTTP 503 and a CAPACITY body', async () => {
    const s = await server({ max_connections_per_address: 2 });
    await connect(s.url());
    await open(s.url());
    const r = await refusedUpgrade(s.url());
    expect(r.status).toBe(503);
    expect(r.retryAfter).toBe('1');
    expect(r.body.error).toMatchObject({ code: 'CAPACITY', retryable: true, details: { limit: 'max_connections_per_address' } });
  });

  it('pending handshakes beyond the cap are refused; one that completes hello frees its place', async () => {
    const s = await server({ max_pending_handshakes: 2 });
    const a = await open(s.url());
    await open(s.url());
    const r = await refusedUpgrade(s.url());
    expect(r.body.error).toMatchObject({ code: 'CAPACITY', details: { limit: 'max_pending_handshakes' } });
    expect((await a.request('hello', HELLO)).type).toBe('result');
    expect(s.core.pendingHandshakes).toBe(1);
    await open(s.url());
  });

  it('total connections beyond max_connections are refused', async () => {
    const s = await server({ max_connections: 1 });
    await connect(s.url());
    const r = await refusedUpgrade(s.url());
    expect(r.body.error).toMatchObject({ code: 'CAPACITY', details: { limit: 'max_connections' } });
  });

  it('nesting deeper than 512 is refused before JSON.parse builds it, with the id when it can be read', async () => {
    const s = await server();
    const c = await connect(s.url());
    const deep = '['.repeat(200_000) + ']'.repeat(200_000);
    c.sendRaw(`{"id": 41, "type": "ping", "t": ${deep}}`);
    const r = await c.waitFor(41);
    expect(r.error).toMatchObject({ code: 'PARSE_ERROR' });
    expect(r.error.message).toMatch(/nesting deeper than 512/);
    // id after the deep part: still found.
    c.sendRaw(`{"type": "ping", "t": ${deep}, "id": 42}`);
    expect((await c.waitFor(42)).error.code).toBe('PARSE_ERROR');
    // 512 levels are fine (the encoders' own limit): the frame is decoded and validated.
    c.sendRaw(`{"id": 43, "type": "ping", "t": ${'['.repeat(511)}${']'.repeat(511)}}`);
    expect((await c.waitFor(43)).error.code).toBe('INVALID_MESSAGE');
  });
});

describe('every request whose id can be read gets its reply', () => {
  it('a make whose kwargs hold "__proto__" is answered with its id (JSON and msgpack), and nothing is polluted', async () => {
    const s = await server();
    const c = await connect(s.url());
    c.sendRaw('{"id": 11, "type": "make", "env_id": "test/counter-v0", "kwargs": {"__proto__": {"polluted": 1}}}');
    expect((await c.waitFor(11)).error).toMatchObject({ code: 'PARSE_ERROR', scope: 'request' });
    // msgpack, with the id after the refused key.
    const frame = mp.map([
      ['type', mp.str('make')],
      ['env_id', mp.str('test/counter-v0')],
      ['kwargs', mp.map([['__proto__', mp.map([['polluted', mp.uint(1)]])]])],
      ['id', mp.uint(70_000)],
    ]);
    c.sendRaw(frame);
    expect((await c.waitFor(70_000)).error.code).toBe('PARSE_ERROR');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // The connection is fine afterwards.
    expect(await c.ok('ping', { t: 3 })).toEqual({ t: 3 });
  });

  it('a tool call whose arguments hold "__proto__" is answered with its id', async () => {
    const s = await server();
    const c = await connect(s.url());
    const session = await c.make('test/tools-v0');
    await c.ok('reset', { session });
    c.sendRaw(
      `{"id": 12, "type": "step", "session": ${JSON.stringify(session)}, "action": {"name": "echo", "arguments": {"text": "a", "__proto__": {"x": 1}}}}`,
    );
    expect((await c.waitFor(12)).error.code).toBe('PARSE_ERROR');
  });

  it('NaN in msgpack and a too-large integer in JSON are refused with the id', async () => {
    const s = await server();
    const c = await connect(s.url());
    c.sendRaw(
      mp.map([
        ['t', mp.nan],
        ['type', mp.str('ping')],
        ['id', mp.uint(13)],
      ]),
    );
    expect((await c.waitFor(13)).error.code).toBe('PARSE_ERROR');
    c.sendRaw('{"id": 14, "type": "ping", "t": 123456789012345678901}');
    expect((await c.waitFor(14)).error.code).toBe('PARSE_ERROR');
  });

  it('invalid UTF-8 in a text frame is PARSE_ERROR and the connection stays (not 1007)', async () => {
    const s = await server();
    const c = await connect(s.url());
    c.ws.send(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), { binary: false });
    const err = await c.nextUnclaimed();
    expect(err).toMatchObject({ id: null, error: { code: 'PARSE_ERROR' } });
    expect(await c.ok('ping', { t: 4 })).toEqual({ t: 4 });
  });

  it('an unknown property name is echoed clipped, never whole', async () => {
    const s = await server();
    const c = await connect(s.url());
    const name = 'n'.repeat(1024 * 1024);
    c.sendRaw(`{"id": 15, "type": "ping", ${JSON.stringify(name)}: 1}`);
    const r = await c.waitFor(15);
    expect(r.error.code).toBe('INVALID_MESSAGE');
    expect(String(r.error.details.path).length).toBeLessThanOrEqual(256);
    expect(JSON.stringify(r).length).toBeLessThan(2048);
  });

  it('an invalid action quoting a huge key is answered clipped (path 256, reason 1024 characters)', async () => {
    const s = await server();
    const c = await connect(s.url());
    const session = await c.make('test/tools-v0');
    await c.ok('reset', { session });
    const big = 'k'.repeat(1024 * 1024);
    for (const action of [
      { [big]: 1, name: 'echo', arguments: { text: 'a' } },
      { name: 'echo', arguments: { text: 'a', [big]: 1 } },
      { name: big, arguments: {} },
    ]) {
      const r = await c.request('step', { session, action });
      expect(r.error.code).toBe('INVALID_ACTION');
      expect(String(r.error.details.path).length).toBeLessThanOrEqual(256);
      expect(JSON.stringify(r).length).toBeLessThan(4096);
    }
  });
});

describe('bounded queues and output', () => {
  it('a session queue holds at most max_queued_requests waiting requests (CAPACITY beyond)', async () => {
    const s = await server({ max_queued_requests: 3 });
    const c = await connect(s.url());
    const session = await c.make('test/slow-v0', { delay_ms: 60_000 });
    await c.ok('reset', { session });
    // One running, three waiting, the fifth refused; sent in one go, so nothing has finished meanwhile.
    const replies = [1, 2, 3, 4, 5].map((i) => c.waitFor(100 + i, 30_000));
    for (let i = 1; i <= 5; i++) c.sendFrame({ id: 100 + i, type: 'step', session, action: 0 });
    const fifth = await replies[4]!;
    expect(fifth.error).toMatchObject({ code: 'CAPACITY', retryable: true, details: { limit: 'max_queued_requests' } });
    // A close is never refused for a full queue; closing the connection ends the rest.
  });

  it('a session queue holds at most max_queued_bytes of waiting frames', async () => {
    const s = await server({ max_queued_bytes: 64 * 1024 });
    const c = await connect(s.url());
    const session = await c.make('test/slow-v0', { delay_ms: 60_000 });
    await c.ok('reset', { session });
    c.sendFrame({ id: 200, type: 'step', session, action: 0 });
    // Resets with 20 KiB of options each: the fourth waiting one would pass 64 KiB.
    const pad = { pad: 'p'.repeat(20 * 1024) };
    const waits = [1, 2, 3, 4].map((i) => c.waitFor(200 + i, 30_000));
    for (let i = 1; i <= 4; i++) c.sendFrame({ id: 200 + i, type: 'reset', session, options: pad });
    expect((await waits[3]!).error).toMatchObject({ code: 'CAPACITY', details: { limit: 'max_queued_bytes' } });
  });

  it('slow readers together cannot hold more than max_buffered_output_bytes: the one over it is terminated', async () => {
    const cap = 8 * 1024 * 1024;
    const s = await server({ max_buffered_output_bytes: cap });
    const readers = await Promise.all([0, 1, 2].map(() => connect(s.url())));
    const control = await connect(s.url());
    const one = JSON.stringify(await readers[0]!.ok('list_envs')).length;
    // Each slow reader asks for ~24 MB of replies and reads none: below the per-connection hard
    // limit (64 MiB), far above the global cap.
    const n = Math.ceil((24 * 1024 * 1024) / one);
    for (const r of readers) {
      (r.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      const frames = Array.from({ length: n }, (_, i) => JSON.stringify({ id: 1000 + i, type: 'list_envs' }))
        .join('\n')
        .split('\n');
      for (const f of frames) r.sendRaw(f);
    }
    await until(() => s.core.output.overflows >= 1, 60_000, 'a slow reader to be terminated');
    // The budget never ends far above its cap: each slow reader holds at most about highWater (4 MiB)
    // plus one reply beyond it before being cut off.
    expect(s.core.output.total).toBeLessThanOrEqual(cap + 3 * (4 * 1024 * 1024 + one));
    expect(await control.ok('ping', { t: 5 })).toEqual({ t: 5 });
    for (const r of readers) r.ws.terminate();
    await until(
      () => s.core.output.total === 0,
      20_000,
      `the budget to drain to 0 once the readers are gone (${s.core.output.total}, ${s.core.connections.size} connections)`,
    ).catch((e) => {
      throw new Error(`${String(e)}: now ${s.core.output.total} in ${s.core.connections.size} connections`);
    });
  });
});

describe('close abandons a running step', () => {
  it('the close is answered at once, the running step gets UNKNOWN_SESSION (closed), the env sees its abort signal', async () => {
    let aborted = false;
    const hang: EnvDefinition = {
      id: 'x/hang-v0',
      description: 'step never resolves by itself',
      observation_space: { type: 'discrete', n: 1 },
      action_space: { type: 'discrete', n: 1 },
      max_episode_steps: null,
      create: (ctx) => ({
        reset: async () => ({ observation: 0 }),
        step: () =>
          new Promise(() => {
            ctx.signal.addEventListener('abort', () => (aborted = true));
          }),
        close: async () => {},
      }),
    };
    const s = await server({}, registryWith(hang));
    const c = await connect(s.url());
    const session = await c.make('x/hang-v0');
    await c.ok('reset', { session });
    const step = c.request('step', { session, action: 0 });
    await until(() => [...s.core.connections].some((conn) => (conn as Connection).book.get(session)?.busy === true), 10_000, 'the step to run');
    // Before: the close waited behind the step forever (here: the waitFor's 10 s).
    const closed = await c.request('close', { session });
    expect(closed).toMatchObject({ type: 'result', result: {} });
    expect((await step).error).toMatchObject({ code: 'UNKNOWN_SESSION', details: { reason: 'closed' } });
    expect(aborted).toBe(true);
    expect(s.sessionCount()).toBe(0);
  });

  it('a step running when the server shuts down is answered SHUTTING_DOWN (retryable), not as closed', async () => {
    const s = await startServer({ fixtures: true, port: 0 });
    const c = await connect(s.url());
    const session = await c.make('test/slow-v0', { delay_ms: 60_000 });
    await c.ok('reset', { session });
    const step = c.request('step', { session, action: 0 });
    await until(() => [...s.core.connections].some((conn) => (conn as Connection).book.get(session)?.busy === true), 10_000, 'the step to run');
    await s.stop();
    expect((await step).error).toMatchObject({ code: 'SHUTTING_DOWN', retryable: true });
  });

  it('requests pipelined before the close still run in order', async () => {
    const s = await server();
    const c = await connect(s.url());
    const session = await c.make('test/slow-v0', { delay_ms: 50 });
    const w = [c.waitFor(301), c.waitFor(302), c.waitFor(303)];
    c.sendFrame({ id: 301, type: 'reset', session });
    c.sendFrame({ id: 302, type: 'step', session, action: 0 });
    c.sendFrame({ id: 303, type: 'close', session });
    const [r, st, cl] = await Promise.all(w);
    expect(r!.type).toBe('result');
    expect(st!.type).toBe('result');
    expect(cl!.result).toEqual({});
  });
});

describe('HTTP routes on a token-protected server', () => {
  it('/v2/envs and /v2/schema need the bearer token; /healthz and /readyz stay open', async () => {
    const s = await server({ tokens: [TOKEN] });
    for (const route of ['/v2/envs', '/v2/schema']) {
      const anon = await fetch(s.httpUrl(route));
      expect(anon.status, route).toBe(401);
      expect(anon.headers.get('www-authenticate')).toBe('Bearer');
      expect(((await anon.json()) as Frame).error.code).toBe('UNAUTHORIZED');
      expect((await fetch(s.httpUrl(route), { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      expect((await fetch(s.httpUrl(route), { headers: { authorization: `Bearer ${TOKEN}` } })).status, route).toBe(200);
    }
    expect((await fetch(s.httpUrl('/healthz'))).status).toBe(200);
    expect((await fetch(s.httpUrl('/readyz'))).status).toBe(200);
  });
});

describe('logs and config', () => {
  it('a large kwargs is logged by its keys at info, never whole', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    const open_: EnvDefinition<Record<string, unknown>> = {
      id: 'x/open-kwargs-v0',
      description: 'accepts any kwargs',
      observation_space: { type: 'discrete', n: 1 },
      action_space: { type: 'discrete', n: 1 },
      max_episode_steps: null,
      kwargs_schema: { type: 'object' },
      create: () => ({ reset: async () => ({ observation: 0 }), step: async () => ({ observation: 0, reward: 0, terminated: true }), close: async () => {} }),
    };
    const s = await server({}, registryWith(open_ as EnvDefinition), pino({ level: 'info' }, sink));
    const c = await connect(s.url());
    await c.make('x/open-kwargs-v0', { big: 'b'.repeat(1024 * 1024), small: 1 });
    await c.make('x/open-kwargs-v0', { small: 2 });
    const made = lines.filter((l) => l.includes('session made'));
    expect(made).toHaveLength(2);
    expect(Math.max(...made.map((l) => l.length))).toBeLessThan(4096);
    expect(JSON.parse(made[0]!)).toMatchObject({ kwargs_keys: ['big', 'small'], kwargs_key_count: 2 });
    expect(JSON.parse(made[1]!)).toMatchObject({ kwargs: { small: 2 } });
  });

  it('a whitespace-only or whitespace-holding token is refused by the config', async () => {
    expect(() => resolveConfig({ tokens: ['   '] })).toThrow(ConfigError);
    expect(() => resolveConfig({ tokens: ['a b'] })).toThrow(ConfigError);
    const { writeFile, mkdtemp } = await import('node:fs/promises');
    const dir = await mkdtemp('/tmp/sandgym-hardening-');
    await writeFile(`${dir}/c.json`, JSON.stringify({ host: '0.0.0.0', tokens: ['\t '] }));
    await expect(loadConfigFile(`${dir}/c.json`)).rejects.toThrow(/tokens/);
    expect(resolveConfig({ tokens: ['ok-token'] }).tokens).toEqual(['ok-token']);
  });
});

describe('codec property: a refused value inside a readable frame keeps its id', () => {
  it('holds for random frames in both encodings', async () => {
    const { decodeFrame: decode, refusedRequestId } = await import('../../protocol/src/index.js');
    let seed = 12345;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const refusedJson = ['{"__proto__": 1}', '1e400', '12345678901234567890', `${'['.repeat(600)}${']'.repeat(600)}`];
    const refusedMp = [mp.nan, mp.map([['__proto__', mp.uint(1)]]), Buffer.from([0xc4, 0x01, 0x00]), Buffer.from([0xa2, 0xff, 0xfe])];
    for (let i = 0; i < 2000; i++) {
      const id = rnd(2) ? rnd(128) : rnd(0x7fffffff);
      const bad = rnd(4);
      const idFirst = rnd(2) === 0;
      let data: string | Buffer;
      let binary: boolean;
      if (rnd(2)) {
        binary = false;
        const parts = [`"id": ${id}`, `"type": "step"`, `"action": {"k${rnd(10)}": ${refusedJson[bad]}}`];
        if (!idFirst) parts.push(parts.shift()!);
        data = `{${parts.join(', ')}}`;
      } else {
        binary = true;
        const entries: Array<[string, Buffer]> = [
          ['id', mp.uint(id)],
          ['type', mp.str('step')],
          ['action', mp.map([[`k${rnd(10)}`, refusedMp[bad]!]])],
        ];
        if (!idFirst) entries.push(entries.shift()!);
        data = mp.map(entries);
      }
      let thrown: unknown = null;
      try {
        decode(data, binary);
      } catch (e) {
        thrown = e;
      }
      expect(thrown, `frame ${i} must be refused`).not.toBeNull();
      expect(refusedRequestId(thrown), `frame ${i} (${binary ? 'msgpack' : 'json'}, refused kind ${bad})`).toBe(id);
    }
    // An undecodable frame has no readable id.
    let e: unknown = null;
    try {
      decodeFrame('{"id": 5, "type": ', false);
    } catch (err) {
      e = err;
    }
    expect(refusedRequestId(e)).toBeNull();
  });
});
