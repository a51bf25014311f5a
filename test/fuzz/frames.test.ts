// fast-check fuzzing of the live server with random and malformed frames. Each fuzz frame is sent on
// the same connection as a well-behaved session (test/counter-v0) whose steps are interleaved and
// checked against a model: the server must answer every bad frame with exactly one typed error frame
// (a registry code, in the frame's own encoding), never crash, and never disturb the good session.

import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, PROTOCOL_VERSIONS } from '../../protocol/src/index.js';
import { RawSocket } from '../helpers/raw-socket.js';
import { startServer, type TestServer } from '../helpers/server.js';

const MAX_MESSAGE_BYTES = 256 * 1024;
const RUNS = Number(process.env.SANDGYM_FUZZ_RUNS ?? 150);
const TIME_LIMIT_MS = 20_000;
/** Good-session ids live far above fuzz ids so replies are never confused. */
const GOOD_ID_BASE = 3_000_000_000;
const REGISTRY = new Set<string>(ERROR_CODES as readonly string[]);

// Raw encoders: fuzz frames must be able to carry what the protocol codec refuses to encode.
const rawPack = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });

interface FuzzFrame {
  label: string;
  data: string | Uint8Array;
  /** The reply id the contract requires, or 'null-or-id' when it depends on whether the frame decodes. */
  expectId: number | null | { oneOf: (number | null)[] };
}

function isUint32(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffff_ffff;
}

function frameOf(label: string, value: unknown, binary: boolean, decodes: boolean): FuzzFrame {
  const data = binary ? (rawPack.pack(value) as Uint8Array) : JSON.stringify(value);
  const id = value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>).id : undefined;
  const expectId = decodes ? (isUint32(id) ? id : null) : { oneOf: [null, ...(isUint32(id) ? [id] : [])] };
  return { label, data, expectId };
}

// ------------------------------------------------------------------ arbitraries

const fuzzId = fc.integer({ min: 0, max: 999_999_999 });
const badId = fc.oneof(fc.constant(-1), fc.constant(2 ** 32), fc.constant(1.5), fc.constant('7'), fc.constant(null), fc.constant([1]));
const encodingFlag = fc.boolean();

const randomBytes = fc.uint8Array({ minLength: 0, maxLength: 512 }).map((b): FuzzFrame => ({ label: 'random bytes', data: b, expectId: { oneOf: [null] } }));
const randomText = fc.string({ unit: 'binary', maxLength: 512 }).map((s): FuzzFrame => ({ label: 'random text', data: s, expectId: { oneOf: [null] } }));

/** Arbitrary JSON-ish values (incl. big integers and -0 the codec refuses) in either encoding. */
const arbitraryValue = fc.tuple(fc.jsonValue({ maxDepth: 4 }), encodingFlag).map(([v, binary]) => frameOf('arbitrary value', v, binary, false));

/** Requests that look right but break exactly one rule; `session` is the good session id, `tools` a reset test/tools-v0 session. */
function plausibleWrong(session: string, tools: string): fc.Arbitrary<FuzzFrame> {
  const hello = { versions: [...PROTOCOL_VERSIONS], client: { name: 'fuzz', version: '0' } };
  const mutations: fc.Arbitrary<[string, Record<string, unknown>]>[] = [
    fc
      .string({ minLength: 1, maxLength: 12 })
      .filter((t) => !['hello', 'ping', 'list_envs', 'make', 'reset', 'step', 'close', 'batch', 'result', 'error', 'event'].includes(t))
      .map((t) => ['unknown type', { type: t }]),
    fc.constant(['second hello', { type: 'hello', ...hello }]),
    fc.constantFrom<[string, Record<string, unknown>]>(
      ['step missing action', { type: 'step', session }],
      ['step missing session', { type: 'step', action: 0 }],
      ['reset session not a string', { type: 'reset', session: 12 }],
      ['make missing env_id', { type: 'make' }],
      ['make kwargs array', { type: 'make', env_id: 'test/slow-v0', kwargs: [1] }],
      ['batch empty', { type: 'batch', requests: [] }],
      ['batch item with id', { type: 'batch', requests: [{ id: 1, type: 'step', session, action: 0 }] }],
      ['batch of hello', { type: 'batch', requests: [{ type: 'hello', ...hello }] }],
      ['close missing session', { type: 'close' }],
      ['ping t not a number', { type: 'ping', t: 'now' }],
      ['list_envs extra field', { type: 'list_envs', extra: true }],
      ['prototype key: constructor', { type: 'ping', constructor: { prototype: { polluted: 1 } } }],
      ['prototype key: prototype', { type: 'step', session, action: 0, prototype: { polluted: 1 } }],
      ['make slow with bad kwargs', { type: 'make', env_id: 'test/slow-v0', kwargs: { delay_ms: -5 } }],
      ['make unknown env', { type: 'make', env_id: 'fuzz/nope-v0' }],
    ),
    fc
      .string({ maxLength: 20 })
      .filter((s) => s !== session)
      .map((s) => ['step on unknown session', { type: 'step', session: s, action: 0 }]),
    fc
      .oneof(fc.constant(-1), fc.constant(1.5), fc.constant('1'), fc.constant(null), fc.constant({}))
      .map((seed) => ['reset bad seed', { type: 'reset', session: `x${String(seed)}`, seed }]),
    // Tool names that exist on Object.prototype must not resolve to anything.
    fc
      .constantFrom('constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf', 'prototype', '')
      .map((name) => ['invalid action on good session', { type: 'step', session: tools, action: { name, arguments: {} } }]),
    fc
      .constantFrom<unknown>(
        { name: 'echo' },
        { name: 'echo', arguments: { text: 1 } },
        { name: 'echo', arguments: { text: 'x', extra: 1 } },
        { name: 'add', arguments: { a: '1', b: 2 } },
        { name: 'echo', arguments: [] },
        ['echo', {}],
        { name: 'echo', arguments: { text: 'x' }, more: 1 },
      )
      .map((action) => ['invalid action on good session', { type: 'step', session: tools, action }]),
    // Invalid actions on the good session: must be INVALID_ACTION and leave it untouched.
    fc
      .oneof(
        fc.constant(2),
        fc.constant(-1),
        fc.constant(0.5),
        fc.constant('1'),
        fc.constant([1]),
        fc.constant({ a: 1 }),
        fc.constant(true),
        fc.integer({ min: 2, max: 2 ** 31 }),
      )
      .map((action) => ['invalid action on good session', { type: 'step', session, action }]),
  ];
  return fc.tuple(fc.oneof(...mutations), fuzzId, encodingFlag).map(([[label, body], id, binary]) => frameOf(label, { id, ...body }, binary, true));
}

const withBadId = fc.tuple(badId, encodingFlag).map(([id, binary]) => frameOf('bad id', { id, type: 'ping' }, binary, true));

/** Deep nesting: beyond msgpack's depth cap, and deep JSON (inside an action and at top level). */
const deepNesting = (session: string) =>
  fc.tuple(fc.integer({ min: 600, max: 20_000 }), encodingFlag, fc.boolean()).map(([depth, binary, inAction]): FuzzFrame => {
    // Inside an action for the good session, so the server's action validation meets it too.
    // Written by hand: JSON.stringify and msgpackr's packer recurse and overflow at these depths.
    if (binary) return { label: `nesting depth ${depth} (msgpack)`, data: deepMsgpack(depth, inAction ? session : undefined), expectId: { oneOf: [null, 5] } };
    let text = '0';
    for (let i = 0; i < depth; i++) text = i % 2 ? `[${text}]` : `{"k":${text}}`;
    if (inAction) text = `{"id":5,"type":"step","session":${JSON.stringify(session)},"action":${text}}`;
    return { label: `nesting depth ${depth} (json)`, data: text, expectId: { oneOf: [null, 5] } };
  });

/** msgpack bytes of the same nesting, written by hand (msgpackr's packer itself recurses too deep). */
function deepMsgpack(depth: number, session: string | undefined): Uint8Array {
  const parts: number[] = [];
  if (session !== undefined) {
    const head = rawPack.pack({ id: 5, type: 'step', session }) as Uint8Array;
    parts.push(head[0]! + 1, ...head.subarray(1), 0xa6, ...Buffer.from('action')); // fixmap count + 1, then key "action"
  }
  for (let i = depth - 1; i >= 0; i--) parts.push(...(i % 2 ? [0x91] : [0x81, 0xa1, 0x6b]));
  parts.push(0x00);
  return new Uint8Array(parts);
}

/** __proto__ keys are refused by the codec in both encodings (PARSE_ERROR). */
const protoKeys = fc.tuple(fuzzId, encodingFlag).map(([id, binary]): FuzzFrame => {
  const text = `{"id":${id},"type":"ping","__proto__":{"polluted":true}}`;
  if (!binary) return { label: '__proto__ key (json)', data: text, expectId: { oneOf: [null, id] } };
  const obj: Record<string, unknown> = { id, type: 'ping' };
  Object.defineProperty(obj, '__proto__', { value: { polluted: true }, enumerable: true });
  return { label: '__proto__ key (msgpack)', data: rawPack.pack(obj) as Uint8Array, expectId: { oneOf: [null, id] } };
});

/** Big frames under the limit: long strings where short ones belong. */
const bigFrame = fc
  .tuple(fc.integer({ min: 10_000, max: MAX_MESSAGE_BYTES - 1_000 }), fuzzId, encodingFlag)
  .map(([size, id, binary]) => frameOf(`big frame ${size} B`, { id, type: 'step', session: 'x'.repeat(size) }, binary, true));

const malformedJson = fc
  .constantFrom(
    '',
    '{',
    '{"id":1,',
    '[]',
    'null',
    '1',
    '"str"',
    '{"id":1,"type":"ping"}}',
    '{"id":99999999999999999999,"type":"ping"}',
    '{"id":1,"type":"ping","t":1e400}',
    'NaN',
    '{"id":1,"type":"ping","t":NaN}',
    '\u0000',
  )
  .map(
    (s): FuzzFrame => ({
      label: `malformed json ${JSON.stringify(s).slice(0, 40)}`,
      data: s,
      // A refused value in a well-formed frame keeps the frame's id (PROTOCOL.md §2); the rest have none.
      expectId: s === '{"id":1,"type":"ping","t":1e400}' ? 1 : { oneOf: [null] },
    }),
  );
const malformedMsgpack = fc
  .constantFrom(
    '',
    'c1',
    '81',
    '82a1',
    'c4026869',
    'd6ff00000001',
    'cf0020000000000000',
    'cb7ff8000000000000',
    '81a2696401a474797065a470696e67c0',
    '81a269640100',
  )
  .map((hex): FuzzFrame => ({ label: `malformed msgpack ${hex || '(empty)'}`, data: new Uint8Array(Buffer.from(hex, 'hex')), expectId: { oneOf: [null] } }));

// ------------------------------------------------------------------ harness

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ fixtures: true, max_message_bytes: MAX_MESSAGE_BYTES, log_level: 'fatal' });
});
afterAll(async () => {
  await server?.close();
});

/** A connection with a good counter session and a model of its state. */
class Harness {
  private nextGoodId = GOOD_ID_BASE;
  private count = 0;
  private steps = 0;
  /** test/counter-v0's max_episode_steps: the server truncates there. */
  private static readonly MAX_STEPS = 10;
  session = '';
  /** A reset test/tools-v0 session that only ever receives invalid actions. */
  tools = '';
  stats = { frames: 0, codes: new Map<string, number>() };

  constructor(readonly sock: RawSocket) {}

  static async open(url: string): Promise<Harness> {
    const h = new Harness(await RawSocket.open(url));
    await h.sock.hello('json', GOOD_ID_BASE - 1);
    const made = await h.sock.request({ id: GOOD_ID_BASE - 2, type: 'make', env_id: 'test/counter-v0' }, 'json');
    h.session = made.result.session;
    await h.reset();
    const tools = await h.sock.request({ id: GOOD_ID_BASE - 3, type: 'make', env_id: 'test/tools-v0' }, 'json');
    h.tools = tools.result.session;
    const toolsReset = await h.sock.request({ id: GOOD_ID_BASE - 4, type: 'reset', session: h.tools }, 'msgpack');
    expect(toolsReset.result.observation).toBe('ready');
    return h;
  }

  private async goodRequest(body: Record<string, unknown>): Promise<any> {
    const id = this.nextGoodId++;
    this.sock.send({ id, ...body }, id % 2 ? 'msgpack' : 'json');
    const msg = await this.sock.nextMessage(10_000);
    expect(msg.id, `good reply id: ${JSON.stringify(msg)}`).toBe(id);
    return msg;
  }

  async reset(): Promise<void> {
    const r = await this.goodRequest({ type: 'reset', session: this.session });
    expect(r.result.observation).toBe(0);
    this.count = 0;
    this.steps = 0;
  }

  /** Sends one fuzz frame and one good step; checks both answers. */
  async round(frame: FuzzFrame, action: 0 | 1): Promise<void> {
    this.sock.sendRaw(frame.data);
    const goodId = this.nextGoodId++;
    this.sock.send({ id: goodId, type: 'step', session: this.session, action }, goodId % 2 ? 'msgpack' : 'json');
    let good: any;
    const others: { message: any; isBinary: boolean }[] = [];
    while (!good || others.length < 1) {
      const r = await this.sock.next(10_000).catch((e: Error) => {
        throw new Error(`${frame.label}: ${e.message} (good reply: ${good ? 'yes' : 'no'}, fuzz replies: ${others.length})`);
      });
      if (r.kind === 'close') throw new Error(`${frame.label}: server closed the connection (${r.code} ${r.reason})`);
      if (r.decodeError) throw new Error(`${frame.label}: undecodable reply (${r.decodeError})`);
      if (r.message?.id === goodId) good = r.message;
      else others.push({ message: r.message, isBinary: r.isBinary });
    }
    expect(others, `${frame.label}: exactly one reply per fuzz frame`).toHaveLength(1);
    const reply = others[0]!;
    expect(reply.message?.type, `${frame.label}: ${JSON.stringify(reply.message)}`).toBe('error');
    const code = reply.message.error?.code as string;
    expect(REGISTRY.has(code), `${frame.label}: code ${code} not in the registry`).toBe(true);
    expect(typeof reply.message.error.message).toBe('string');
    expect(typeof reply.message.error.retryable).toBe('boolean');
    expect(['request', 'session', 'connection']).toContain(reply.message.error.scope);
    expect(reply.isBinary, `${frame.label}: reply must use the frame's encoding`).toBe(typeof frame.data !== 'string');
    const allowed = typeof frame.expectId === 'object' && frame.expectId !== null ? frame.expectId.oneOf : [frame.expectId];
    expect(allowed, `${frame.label}: reply id ${String(reply.message.id)} (${code})`).toContain(reply.message.id);
    if (frame.label === 'invalid action on good session') expect(code).toBe('INVALID_ACTION');
    this.stats.frames++;
    this.stats.codes.set(code, (this.stats.codes.get(code) ?? 0) + 1);
    // The good session advanced exactly by its own step.
    expect(good.type, `good step after ${frame.label}: ${JSON.stringify(good)}`).toBe('result');
    this.count += action;
    this.steps++;
    const terminated = this.count >= 3;
    expect(good.result).toMatchObject({ observation: this.count, reward: action, terminated });
    // Terminating on the limit step may or may not also say truncated (the contract leaves it open).
    if (!(terminated && this.steps >= Harness.MAX_STEPS)) expect(good.result.truncated).toBe(this.steps >= Harness.MAX_STEPS);
    if (good.result.terminated || good.result.truncated) await this.reset();
  }

  /** After fuzzing: nothing left over, the session still works, the connection is open. */
  async finish(): Promise<void> {
    await new Promise((r) => setTimeout(r, 50));
    expect(this.sock.buffered, 'stray frames after the last round').toBe(0);
    const pong = await this.goodRequest({ type: 'ping', t: 1 });
    expect(pong.result).toEqual({ t: 1 });
    expect(this.sock.isOpen).toBe(true);
    await this.sock.close();
  }
}

async function fuzz(name: string, arb: fc.Arbitrary<FuzzFrame> | ((session: string, tools: string) => fc.Arbitrary<FuzzFrame>), runs = RUNS): Promise<void> {
  const h = await Harness.open(server.url);
  const frames = typeof arb === 'function' ? arb(h.session, h.tools) : arb;
  await fc.assert(
    fc.asyncProperty(frames, fc.constantFrom<0 | 1>(0, 1), async (frame, action) => h.round(frame, action)),
    { numRuns: runs, interruptAfterTimeLimit: TIME_LIMIT_MS, markInterruptAsFailure: false, endOnFailure: true },
  );
  await h.finish();
  expect(h.stats.frames, `${name}: rounds run`).toBeGreaterThan(0);
}

describe('fuzzing the live server with bad frames', () => {
  it('random bytes as binary frames', async () => {
    await fuzz('bytes', randomBytes);
  });

  it('random strings as text frames', async () => {
    await fuzz('text', randomText);
  });

  it('arbitrary JSON values in either encoding', async () => {
    await fuzz('values', arbitraryValue);
  });

  it('structurally plausible but wrong requests', async () => {
    await fuzz('plausible', (session, tools) => fc.oneof(plausibleWrong(session, tools), withBadId));
  });

  it('hand-written malformed frames', async () => {
    await fuzz('malformed', fc.oneof(malformedJson, malformedMsgpack), 60);
  });

  it('deep nesting, prototype keys and big frames', async () => {
    await fuzz('hostile', (session) => fc.oneof(deepNesting(session), protoKeys, bigFrame), 40);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('closes with TOO_LARGE/1009 over max_message_bytes and keeps serving others', async () => {
    const bystander = await Harness.open(server.url);
    for (const binary of [false, true]) {
      const sock = await RawSocket.open(server.url);
      await sock.hello('json');
      const huge = { id: 9, type: 'step', session: 's', action: 'x'.repeat(MAX_MESSAGE_BYTES + 10) };
      sock.sendRaw(binary ? (rawPack.pack(huge) as Uint8Array) : JSON.stringify(huge));
      let closeCode: number | undefined;
      const codes: string[] = [];
      for (;;) {
        const r = await sock.next(10_000);
        if (r.kind === 'close') {
          closeCode = r.code;
          break;
        }
        codes.push(r.message?.error?.code);
      }
      expect(closeCode).toBe(1009);
      expect(codes.every((c) => c === 'TOO_LARGE')).toBe(true);
    }
    await bystander.round({ label: 'after TOO_LARGE', data: '{', expectId: null }, 1);
    await bystander.finish();
  });
});
