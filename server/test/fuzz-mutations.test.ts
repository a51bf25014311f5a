// Mutation fuzzing at volume (issue 13): SANDGYM_FUZZ_FRAMES (default 100,000) byte-mutated request
// frames on one authenticated connection of a token-protected server, while an unauthenticated attacker
// keeps reconnecting and sending junk before hello, and a control episode runs on a third connection and
// must finish exactly as the env's model says. Every fuzz frame gets exactly one reply, in order (none of
// the templates reaches a session or an env, so every reply is synchronous), carrying the frame's id
// whenever the frame decodes to a request with a valid id; never INTERNAL; the server stays up.
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { decodeFrame, encodeFrame, ERROR_CODES, PROTOCOL_VERSIONS, refusedRequestId } from '../../protocol/src/index.js';
import { RawClient } from './helpers/raw-client.js';
import { startServer, type TestServer } from './helpers/server.js';

const FRAMES = Number(process.env.SANDGYM_FUZZ_FRAMES ?? 100_000);
const WINDOW = 500;
const TOKEN = 'fuzz-token';
const REGISTRY = new Set<string>(ERROR_CODES as readonly string[]);

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ tokens: [TOKEN], handshake_max_bytes: 8192 });
});
afterAll(async () => {
  await server?.stop();
});

/** Deterministic PRNG (mulberry32), so a failure names a reproducible frame index. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Requests whose replies never wait on a session or an env: pings, list_envs, a second hello, and
// session requests (also in a batch) for a session this connection does not have.
const TEMPLATES: Array<Record<string, unknown>> = [
  { type: 'ping', t: 1.5 },
  { type: 'ping' },
  { type: 'hello', versions: [...PROTOCOL_VERSIONS], client: { name: 'fuzz', version: '1' } },
  { type: 'step', session: 's_nope', action: { name: 'echo', arguments: { text: 'hi', n: [1, 2, { k: null }] } } },
  { type: 'reset', session: 's_nope', seed: 7, options: { task_id: 'x' } },
  { type: 'close', session: 's_nope' },
  {
    type: 'batch',
    requests: [
      { type: 'step', session: 's_nope', action: 1 },
      { type: 'close', session: 's_nope' },
    ],
  },
  { type: 'make', env_id: 'no/such-env', kwargs: { a: 1 } },
];

function mutate(bytes: Uint8Array, r: () => number): Uint8Array {
  let b = Buffer.from(bytes);
  const n = 1 + Math.floor(r() * 3);
  for (let i = 0; i < n && b.length > 0; i++) {
    const at = Math.floor(r() * b.length);
    const op = Math.floor(r() * 5);
    if (op === 0) b[at] = Math.floor(r() * 256);
    else if (op === 1) b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
    else if (op === 2) b = Buffer.concat([b.subarray(0, at), Buffer.from([Math.floor(r() * 256)]), b.subarray(at)]);
    else if (op === 3) b = b.subarray(0, at);
    else b[at] = b[at]! ^ (1 << Math.floor(r() * 8));
  }
  return b;
}

/** The id the contract requires for a frame: its own when it decodes (or is refused readably), else null. */
function expectedId(data: Uint8Array, binary: boolean): number | null {
  try {
    const v = decodeFrame(data, binary) as Record<string, unknown> | null;
    const id = v && typeof v === 'object' && !Array.isArray(v) ? v.id : undefined;
    return typeof id === 'number' && Number.isInteger(id) && id >= 0 && id <= 0xffffffff ? id : null;
  } catch (e) {
    return refusedRequestId(e);
  }
}

/** An unauthenticated peer sending junk before hello, reconnecting whenever it is cut off. */
function attacker(url: string): { stop: () => Promise<number> } {
  let on = true;
  let connections = 0;
  const r = rng(99);
  const loop = (async () => {
    while (on) {
      const ws = new WebSocket(url);
      connections++;
      const closed = new Promise<void>((res) => ws.once('close', () => res()));
      ws.on('error', () => undefined);
      await new Promise<void>((res) => (ws.once('open', () => res()), ws.once('close', () => res())));
      while (on && ws.readyState === WebSocket.OPEN) {
        const junk = Buffer.alloc(1 + Math.floor(r() * 2048), Math.floor(r() * 256));
        ws.send(junk, { binary: r() < 0.5, fin: r() < 0.7 });
        await new Promise((res) => setTimeout(res, 1));
      }
      ws.terminate();
      await closed;
    }
  })();
  return {
    stop: async () => {
      on = false;
      await loop;
      return connections;
    },
  };
}

it(`answers ${FRAMES} mutated frames once each, in order, beside a pre-auth attacker and a control episode`, async () => {
  const url = server.url();
  const fuzz = await RawClient.connect(url, { token: TOKEN });
  const control = await RawClient.connect(url, { token: TOKEN });
  const enemy = attacker(url);

  // The control episodes: test/counter-v0 adds the action (0 or 1) and terminates at 3 (reward = action).
  const controlRun = (async () => {
    const session = await control.make('test/counter-v0');
    for (let episode = 0; episode < 20; episode++) {
      expect((await control.ok('reset', { session, seed: episode })).observation).toBe(0);
      expect(await control.ok('step', { session, action: 1 })).toMatchObject({ observation: 1, reward: 1, terminated: false });
      expect(await control.ok('step', { session, action: 0 })).toMatchObject({ observation: 1, reward: 0, terminated: false });
      expect(await control.ok('step', { session, action: 1 })).toMatchObject({ observation: 2, reward: 1, terminated: false });
      expect(await control.ok('step', { session, action: 1 })).toMatchObject({ observation: 3, reward: 1, terminated: true });
    }
    await control.ok('close', { session });
  })();

  const r = rng(13);
  const replies: Array<{ id: number | null; type: string; code?: string }> = [];
  let wake: (() => void) | null = null;
  fuzz.ws.removeAllListeners('message');
  fuzz.ws.on('message', (data: Buffer, isBinary: boolean) => {
    const m = decodeFrame(data, isBinary, { maxBytes: 1 << 30 }) as { id: number | null; type: string; error?: { code: string } };
    if (m.type === 'event') return;
    replies.push({ id: m.id, type: m.type, code: m.error?.code });
    wake?.();
  });

  let sent = 0;
  let checked = 0;
  let internal = 0;
  while (sent < FRAMES) {
    const expected: Array<number | null> = [];
    for (let i = 0; i < WINDOW && sent < FRAMES; i++, sent++) {
      const binary = r() < 0.5;
      const t = TEMPLATES[Math.floor(r() * TEMPLATES.length)]!;
      const frame = { id: Math.floor(r() * 0xffffffff), ...t };
      const clean = encodeFrame(frame, binary);
      const data = mutate(typeof clean === 'string' ? Buffer.from(clean) : clean, r);
      if (data.length === 0) {
        i--;
        sent--;
        continue;
      }
      expected.push(expectedId(data, binary));
      fuzz.ws.send(data, { binary });
    }
    while (replies.length < checked + expected.length) {
      await new Promise<void>((res, rej) => {
        const timer = setTimeout(() => rej(new Error(`only ${replies.length - checked} of ${expected.length} replies for frames ${checked}..`)), 60_000);
        wake = () => {
          clearTimeout(timer);
          wake = null;
          res();
        };
      });
    }
    for (let i = 0; i < expected.length; i++) {
      const got = replies[checked + i]!;
      if (got.code === 'INTERNAL') internal++;
      if (got.id !== expected[i]) throw new Error(`frame ${checked + i}: reply id ${got.id}, expected ${expected[i]} (${JSON.stringify(got)})`);
      if (got.type === 'error' && !REGISTRY.has(got.code!)) throw new Error(`frame ${checked + i}: unregistered code ${got.code}`);
    }
    checked += expected.length;
  }
  expect(replies.length).toBe(FRAMES);
  expect(internal).toBe(0);
  await controlRun;
  const attackerConnections = await enemy.stop();
  expect(attackerConnections).toBeGreaterThan(1);
  // The server is fine afterwards, and no pre-auth connection is left over.
  const before = replies.length;
  fuzz.ws.send(JSON.stringify({ id: 4242, type: 'ping', t: 9 }));
  await new Promise<void>((res) => {
    if (replies.length > before) return res();
    wake = () => res();
  });
  expect(replies[before]).toEqual({ id: 4242, type: 'result', code: undefined });
  expect(server.core.pendingHandshakes).toBeLessThanOrEqual(1);
  fuzz.ws.terminate();
  control.ws.terminate();
}, 600_000);
