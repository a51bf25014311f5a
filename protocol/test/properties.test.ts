/** fast-check properties: round-trips, decode totality, sample/check agreement. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ProtocolError,
  checkSpace,
  decodeFrame,
  decodeJson,
  decodeMsgpack,
  encodeJson,
  encodeMsgpack,
  makeInvalidSamples,
  mulberry32,
  sampleSpace,
  validateRequest,
  validateSpaceDefinition,
  type Space,
} from '../src/index.js';

const RUNS = 200;

// ------------------------------------------------------------ arbitraries

/** JSON values inside the protocol data model (finite doubles, safe integers, no __proto__ keys). */
const wireValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }),
    fc.maxSafeInteger(),
    fc
      .double({ noNaN: true, noDefaultInfinity: true })
      .filter((d) => !Object.is(d, -0) && (!Number.isInteger(d) || Number.isSafeInteger(d) || Math.abs(d) >= 1e21)),
    fc.string({ unit: 'binary' }),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(
      fc.string().filter((k) => k !== '__proto__'),
      tie('value'),
      { maxKeys: 5 },
    ),
  ),
})).value;

const uint32 = fc.integer({ min: 0, max: 0xffffffff });
const session = fc.string({ minLength: 1, maxLength: 20 });
const obj = fc.dictionary(
  fc.string().filter((k) => k !== '__proto__'),
  wireValue,
  { maxKeys: 4 },
);
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const clean = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

const batchItem = fc.oneof(
  fc.record({ type: fc.constant('reset'), session, seed: opt(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })), options: opt(obj) }).map(clean),
  fc.record({ type: fc.constant('step'), session, action: wireValue }),
  fc.record({ type: fc.constant('close'), session }),
);

const request: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc
    .record({
      id: uint32,
      type: fc.constant('hello'),
      versions: fc.array(fc.integer({ min: 1, max: 65535 }), { minLength: 1, maxLength: 16 }),
      client: fc.record({ name: fc.string({ minLength: 1, maxLength: 128 }), version: fc.string({ maxLength: 128 }) }),
      token: opt(fc.string({ minLength: 1, maxLength: 100 })),
    })
    .map(clean),
  fc
    .record({
      id: uint32,
      type: fc.constant('ping'),
      t: opt(fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e15, max: 1e15 }).filter((d) => !Object.is(d, -0))),
    })
    .map(clean),
  fc.record({ id: uint32, type: fc.constant('list_envs') }),
  fc.record({ id: uint32, type: fc.constant('make'), env_id: fc.string({ minLength: 1, maxLength: 256 }), kwargs: opt(obj) }).map(clean),
  fc.record({ id: uint32, type: fc.constant('reset'), session, seed: opt(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })), options: opt(obj) }).map(clean),
  fc.record({ id: uint32, type: fc.constant('step'), session, action: wireValue }),
  fc.record({ id: uint32, type: fc.constant('close'), session }),
  fc.record({ id: uint32, type: fc.constant('batch'), requests: fc.array(batchItem, { minLength: 1, maxLength: 8 }) }),
);

const bound = fc.oneof(fc.integer({ min: -100, max: 100 }), fc.constant<'inf' | '-inf'>('inf'), fc.constant<'inf' | '-inf'>('-inf'));
const dtype = fc.constantFrom('float32', 'float64', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64' as const);

const boxSpace = fc
  .record({ shape: fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 3 }), dtype, a: bound, b: bound })
  .map(({ shape, dtype, a, b }) => {
    const v = (x: number | string): number => (x === 'inf' ? Infinity : x === '-inf' ? -Infinity : (x as number));
    let [low, high] = v(a) <= v(b) ? [a, b] : [b, a];
    if (low === 'inf') low = '-inf';
    if (high === '-inf') high = 'inf';
    return { type: 'box', shape, dtype, low, high } as Space;
  })
  // e.g. uint8 with high -1 is an empty box, which validateSpaceDefinition refuses (tested in the vectors)
  .filter((s) => validateSpaceDefinition(s) === null);

const toolSchema = fc.constantFrom<object>(
  { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
  { type: 'object', properties: { a: { type: 'number' }, b: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['a', 'b'] },
  {
    type: 'object',
    properties: { mode: { enum: ['fast', 'slow'] }, tags: { type: 'array', items: { type: 'string' }, maxItems: 3 } },
    additionalProperties: false,
  },
  { type: 'object', properties: {} },
);

const space: fc.Arbitrary<Space> = fc.letrec<{ space: Space }>((tie) => ({
  space: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    boxSpace,
    fc
      .record({ type: fc.constant('discrete'), n: fc.integer({ min: 1, max: 50 }), start: opt(fc.integer({ min: -10, max: 10 })) })
      .map((s) => clean(s) as Space),
    fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 4 }).map((nvec) => ({ type: 'multi_discrete', nvec }) as Space),
    fc
      .oneof(fc.integer({ min: 1, max: 5 }), fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }))
      .map((n) => ({ type: 'multi_binary', n }) as Space),
    fc
      .record({ min: fc.integer({ min: 0, max: 3 }), extra: fc.integer({ min: 0, max: 10 }), charset: opt(fc.constantFrom('abc', '01', 'xyz日')) })
      .map(({ min, extra, charset }) => clean({ type: 'text', max_length: min + extra, min_length: min, charset }) as Space),
    fc
      .uniqueArray(fc.record({ key: fc.string({ maxLength: 6 }).filter((k) => k !== '__proto__'), space: tie('space') }), {
        selector: (e) => e.key,
        maxLength: 3,
      })
      .map((spaces) => ({ type: 'dict', spaces }) as Space),
    fc.array(tie('space'), { maxLength: 3 }).map((spaces) => ({ type: 'tuple', spaces }) as Space),
    tie('space').map((s) => ({ type: 'sequence', space: s }) as Space),
    fc.array(tie('space'), { minLength: 1, maxLength: 3 }).map((spaces) => ({ type: 'one_of', spaces }) as Space),
    toolSchema.map((schema) => ({ type: 'json', schema }) as Space),
    fc
      .uniqueArray(fc.record({ name: fc.constantFrom('echo', 'add', 'search', 'finish'), parameters: toolSchema }), {
        selector: (t) => t.name,
        minLength: 1,
        maxLength: 3,
      })
      .map((tools) => ({ type: 'tool_call', tools: tools.map((t) => ({ ...t, description: `tool ${t.name}` })) }) as Space),
  ),
})).space;

// ------------------------------------------------------------ properties

describe('property: requests', () => {
  it('random valid requests validate and round-trip both encodings', () => {
    fc.assert(
      fc.property(request, (req) => {
        const r = validateRequest(req);
        expect(r.ok ? null : r.error.details).toBeNull();
        expect(decodeJson(encodeJson(req))).toEqual(req);
        expect(decodeMsgpack(encodeMsgpack(req))).toEqual(req);
        expect(decodeFrame(encodeMsgpack(req), true)).toEqual(decodeFrame(encodeJson(req), false));
      }),
      { numRuns: RUNS },
    );
  });
  it('any wire value round-trips both encodings', () => {
    fc.assert(
      fc.property(wireValue, (v) => {
        expect(decodeJson(encodeJson(v))).toEqual(v);
        expect(decodeMsgpack(encodeMsgpack(v))).toEqual(v);
      }),
      { numRuns: RUNS },
    );
  });
});

function onlyProtocolErrors(run: () => unknown): void {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ProtocolError);
    expect(['PARSE_ERROR', 'TOO_LARGE']).toContain((err as ProtocolError).code);
  }
}

describe('property: decode is total', () => {
  it('random bytes only ever produce ProtocolError (msgpack and JSON)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        onlyProtocolErrors(() => decodeMsgpack(bytes));
        onlyProtocolErrors(() => decodeJson(bytes));
        onlyProtocolErrors(() => decodeFrame(bytes, true, { maxBytes: 32 }));
      }),
      { numRuns: 2000 },
    );
  });
  it('mutated valid msgpack frames only ever produce values or ProtocolError', () => {
    fc.assert(
      fc.property(request, fc.nat(), fc.integer({ min: 0, max: 255 }), (req, pos, byte) => {
        const bytes = Uint8Array.from(encodeMsgpack(req));
        bytes[pos % bytes.length] = byte;
        onlyProtocolErrors(() => decodeMsgpack(bytes));
        onlyProtocolErrors(() => decodeMsgpack(bytes.subarray(0, pos % bytes.length)));
      }),
      { numRuns: 1000 },
    );
  });
  it('random strings only ever produce ProtocolError as JSON', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 64 }), (s) => onlyProtocolErrors(() => decodeJson(s))),
      { numRuns: 1000 },
    );
  });
});

describe('property: spaces', () => {
  it('random spaces are valid definitions; their samples are in them; invalid samples never are', () => {
    fc.assert(
      fc.property(space, fc.integer(), (s, seed) => {
        expect(validateSpaceDefinition(s)).toBeNull();
        const rng = mulberry32(seed);
        for (let i = 0; i < 3; i++) {
          const v = sampleSpace(s, rng);
          expect(checkSpace(s, v)).toBeNull();
          // samples survive the wire unchanged
          expect(checkSpace(s, decodeMsgpack(encodeMsgpack(v)))).toBeNull();
          expect(checkSpace(s, decodeJson(encodeJson(v)))).toBeNull();
        }
        const invalid = makeInvalidSamples(s);
        expect(invalid.length).toBeGreaterThan(0);
        for (const bad of invalid) expect(checkSpace(s, bad.value)).not.toBeNull();
      }),
      { numRuns: RUNS },
    );
  });
});
