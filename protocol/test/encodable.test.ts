// The allocation-free encodability check (isEncodable) must agree with the path-building one
// (findUnencodable) on every value, and encodeCheckedFrame must write the bytes encodeFrame writes for
// every value the check accepts: the server checks an env result once and encodes its reply unchecked.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCheckedFrame, encodeFrame, findUnencodable, isEncodable, type Encoding } from '../src/index.js';

class Thing {
  x = 1;
}

const encodingOf = (bin: boolean): Encoding => (bin ? 'msgpack' : 'json');

describe('encodability check and checked encoding', () => {
  it('isEncodable agrees with findUnencodable on edge values', () => {
    const values: unknown[] = [
      0,
      -0,
      1.5,
      1e21,
      -1e21,
      1e20,
      2 ** 60,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      2 ** 53 - 1,
      2 ** 53,
      -(2 ** 53),
      'x',
      true,
      null,
      undefined,
      [1, undefined],
      { a: undefined },
      { a: [1, { b: Number.NaN }] },
      new Thing(),
      new Date(0),
      new Uint8Array(2),
      Object.create(null),
      10n,
      () => 1,
      Symbol('s'),
      JSON.parse('{"__proto__": 1}'),
    ];
    for (const bin of [false, true]) {
      values.forEach((v, i) => expect(isEncodable(v, encodingOf(bin)), `value #${i} ${bin}`).toBe(findUnencodable(v, encodingOf(bin)) === null));
    }
  });

  it('encodeCheckedFrame writes the bytes of encodeFrame for every encodable value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (v, bin) => {
        expect(isEncodable(v, encodingOf(bin))).toBe(findUnencodable(v, encodingOf(bin)) === null);
        if (isEncodable(v, encodingOf(bin)))
          expect(encodeCheckedFrame({ id: 1, type: 'result', result: v }, bin)).toEqual(encodeFrame({ id: 1, type: 'result', result: v }, bin));
      }),
      { numRuns: 300 },
    );
  });

  it('encodeCheckedFrame drops undefined object values as encodeFrame does', () => {
    const frame = { id: 1, type: 'result', result: { a: undefined, b: [1], c: { d: undefined } } };
    for (const bin of [false, true]) expect(encodeCheckedFrame(frame, bin)).toEqual(encodeFrame(frame, bin));
  });
});
