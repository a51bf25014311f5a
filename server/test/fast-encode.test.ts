// The hot-path encodability check must agree with the protocol codec on every value.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeFrame, findUnencodable } from '../../protocol/src/index.js';
import { encodeReply, isEncodable } from '../src/fast-encode.js';

class Thing {
  x = 1;
}

describe('fast encode', () => {
  it('agrees with the codec on edge values', () => {
    const values: unknown[] = [
      0, -0, 1.5, 1e21, -1e21, 1e20, 2 ** 60, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53 - 1, 2 ** 53, -(2 ** 53), 'x', true, null, undefined,
      [1, undefined], { a: undefined }, { a: [1, { b: Number.NaN }] }, new Thing(), new Date(0), new Uint8Array(2), Object.create(null),
      10n, () => 1, Symbol('s'), JSON.parse('{"__proto__": 1}'),
    ];
    for (const bin of [false, true]) {
      values.forEach((v, i) => expect(isEncodable(v, bin), `value #${i} ${bin}`).toBe(findUnencodable(v, bin ? 'msgpack' : 'json') === null));
    }
  });

  it('agrees with the codec on random JSON-ish values and produces the same bytes', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (v, bin) => {
        expect(isEncodable(v, bin)).toBe(findUnencodable(v, bin ? 'msgpack' : 'json') === null);
        if (isEncodable(v, bin)) expect(encodeReply({ id: 1, type: 'result', result: v }, bin)).toEqual(encodeFrame({ id: 1, type: 'result', result: v }, bin));
      }),
      { numRuns: 300 },
    );
  });
});
