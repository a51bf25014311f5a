import { describe, expect, it } from 'vitest';
import { match, matchAnyOrder, substitute, type Captures } from './matcher.js';

describe('transcript matcher', () => {
  it('matches objects on expected keys only and allows extra keys', () => {
    expect(match({ a: 1 }, { a: 1, b: 2 })).toEqual({ ok: true });
    const r = match({ a: 1, c: 3 }, { a: 1, b: 2 });
    expect(r).toMatchObject({ ok: false, path: '$.c' });
  });

  it('requires equal-length arrays matched element-wise', () => {
    expect(match([1, { x: 'y' }], [1, { x: 'y', z: 0 }]).ok).toBe(true);
    expect(match([1, 2], [1, 2, 3])).toMatchObject({ ok: false, path: '$' });
    expect(match([1, 2], [1, 3])).toMatchObject({ ok: false, path: '$[1]' });
    expect(match([1], { 0: 1 }).ok).toBe(false);
  });

  it('compares scalars by value and type', () => {
    expect(match(1, 1.0).ok).toBe(true);
    expect(match(1, '1').ok).toBe(false);
    expect(match(null, null).ok).toBe(true);
    expect(match(null, undefined).ok).toBe(false);
    expect(match(false, 0).ok).toBe(false);
    expect(match('a', 'a').ok).toBe(true);
  });

  it('implements $type for every JSON type', () => {
    const cases: [string, unknown, boolean][] = [
      ['number', 1.5, true],
      ['number', '1', false],
      ['number', Number.NaN, false],
      ['integer', 3, true],
      ['integer', 3.5, false],
      ['string', '', true],
      ['string', 1, false],
      ['boolean', false, true],
      ['boolean', null, false],
      ['object', {}, true],
      ['object', [], false],
      ['object', null, false],
      ['array', [], true],
      ['array', {}, false],
      ['null', null, true],
      ['null', undefined, false],
    ];
    for (const [type, value, ok] of cases) expect(match({ $type: type }, value).ok, `${type} vs ${String(value)}`).toBe(ok);
    expect(() => match({ $type: 'bogus' }, 1)).toThrow(/unknown \$type/);
  });

  it('implements $any, $absent and $capture', () => {
    expect(match({ a: { $any: true } }, { a: null }).ok).toBe(true);
    expect(match({ a: { $any: true } }, {}).ok).toBe(false);
    expect(match({ a: { $absent: true } }, {}).ok).toBe(true);
    expect(match({ a: { $absent: true } }, { a: 1 })).toMatchObject({ ok: false, path: '$.a' });
    const caps: Captures = {};
    expect(match({ result: { session: { $capture: 's1' } } }, { result: { session: 'abc' } }, caps).ok).toBe(true);
    expect(caps).toEqual({ s1: 'abc' });
    expect(match({ a: { $capture: 'x' } }, {}, caps).ok).toBe(false);
  });

  it('does not treat inherited properties as present', () => {
    expect(match({ toString: { $absent: true } }, {}).ok).toBe(true);
    expect(match({ constructor: { $any: true } }, {}).ok).toBe(false);
  });

  it('compares {$var} in expectations against captures', () => {
    const caps: Captures = { s1: 'abc' };
    expect(match({ session: { $var: 's1' } }, { session: 'abc' }, caps).ok).toBe(true);
    expect(match({ session: { $var: 's1' } }, { session: 'abd' }, caps).ok).toBe(false);
  });

  it('substitutes $var in send templates, deeply', () => {
    const caps: Captures = { s1: 'abc', n: 7 };
    expect(substitute({ id: 1, session: { $var: 's1' }, requests: [{ session: { $var: 's1' }, seed: { $var: 'n' } }] }, caps)).toEqual({
      id: 1,
      session: 'abc',
      requests: [{ session: 'abc', seed: 7 }],
    });
    expect(() => substitute({ $var: 'missing' }, caps)).toThrow(/before it was captured/);
  });

  it('matches pipelined replies in any order, with backtracking over captures', () => {
    const expected = [
      { id: 1, result: { session: { $capture: 'a' } } },
      { id: 2, type: 'error' },
    ];
    const actual = [
      { id: 2, type: 'error', error: {} },
      { id: 1, type: 'result', result: { session: 's' } },
    ];
    const caps: Captures = {};
    expect(matchAnyOrder(expected, actual, caps).ok).toBe(true);
    expect(caps.a).toBe('s');
    // A greedy first pairing would capture from the wrong frame; backtracking recovers.
    const caps2: Captures = {};
    const r = matchAnyOrder([{ v: { $capture: 'x' } }, { v: 1 }], [{ v: 1 }, { v: 2 }], caps2);
    expect(r.ok).toBe(true);
    expect(caps2.x).toBe(2);
    expect(matchAnyOrder([{ v: 1 }, { v: 1 }], [{ v: 1 }, { v: 2 }]).ok).toBe(false);
    expect(matchAnyOrder([{ v: 1 }], [{ v: 1 }, { v: 2 }]).ok).toBe(false);
  });

  it('leaves captures untouched when an any-order match fails', () => {
    const caps: Captures = { keep: 1 };
    expect(matchAnyOrder([{ v: { $capture: 'x' } }, { v: 9 }], [{ v: 1 }, { v: 2 }], caps).ok).toBe(false);
    expect(caps).toEqual({ keep: 1 });
  });
});
