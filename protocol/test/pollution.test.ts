/** __proto__ / constructor keys can never change a prototype, whatever the encoding. */
import { afterEach, describe, expect, it } from 'vitest';
import { ProtocolError, checkSpace, decodeJson, decodeMsgpack, encodeMsgpack, validateRequest, type Space } from '../src/index.js';
import { hexToBytes } from './vectors.js';

afterEach(() => {
  // Any leak would show up on every object.
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted')).toBe(false);
});

/**
 * A deep merge that assigns with `target[key] = ...` (so a "__proto__" key would hit the setter)
 * but only descends into own properties. With "__proto__" refused by the decoder, this is safe.
 * (A merge that descends into inherited properties, e.g. target.constructor, is unsafe with any input;
 * PROTOCOL.md tells receivers to use own-property checks.)
 */
function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const key of Object.keys(source)) {
    const v = source[key];
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      if (!Object.prototype.hasOwnProperty.call(target, key)) target[key] = {};
      deepMerge(target[key] as Record<string, unknown>, v as Record<string, unknown>);
    } else target[key] = v;
  }
}

describe('prototype pollution', () => {
  it('JSON "__proto__" keys are refused (raw and \\u-escaped, at any depth)', () => {
    for (const text of [
      '{"__proto__":{"polluted":true}}',
      '{"a":[{"__proto__":{"polluted":true}}]}',
      '{"\\u005f\\u005fproto\\u005f\\u005f":{"polluted":true}}',
    ]) {
      expect(() => decodeJson(text)).toThrow(ProtocolError);
    }
  });
  it('msgpack "__proto__" keys are refused', () => {
    // {"__proto__": {"polluted": true}}
    const hex = '81a95f5f70726f746f5f5f81a8706f6c6c75746564c3';
    expect(() => decodeMsgpack(hexToBytes(hex))).toThrow(ProtocolError);
  });
  it('"__proto__" as a string value is fine', () => {
    expect(decodeJson('{"k":"__proto__"}')).toEqual({ k: '__proto__' });
  });
  it('"constructor"/"prototype" keys decode as plain data and do not pollute through a naive merge', () => {
    const text = '{"constructor":{"prototype":{"polluted":true}},"prototype":{"polluted":true}}';
    for (const decoded of [decodeJson(text), decodeMsgpack(encodeMsgpack(JSON.parse(text)))]) {
      const obj = decoded as Record<string, unknown>;
      expect(Object.getPrototypeOf(obj)).toBe(Object.prototype);
      expect(Object.keys(obj)).toEqual(['constructor', 'prototype']);
      const target: Record<string, unknown> = {};
      deepMerge(target, obj);
      expect(target).toEqual(obj);
      expect({ ...obj }).toEqual(obj);
      expect(Object.getPrototypeOf(Object.assign({}, obj))).toBe(Object.prototype);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    }
  });
  it('decoded objects all have Object.prototype (no null-prototype surprises)', () => {
    const v = decodeMsgpack(encodeMsgpack({ a: { b: [{ c: 1 }] } })) as { a: { b: { c: number }[] } };
    expect(Object.getPrototypeOf(v.a)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(v.a.b[0])).toBe(Object.prototype);
  });
  it('validators and the space checker treat such keys as ordinary data', () => {
    const req = decodeJson('{"id":1,"type":"make","env_id":"x","kwargs":{"constructor":{"prototype":{"polluted":true}}}}');
    expect(validateRequest(req).ok).toBe(true);
    const space: Space = { type: 'dict', spaces: [{ key: 'constructor', space: { type: 'discrete', n: 2 } }] };
    expect(checkSpace(space, decodeJson('{"constructor":1}'))).toBeNull();
    expect(checkSpace(space, {})).not.toBeNull(); // inherited Object.prototype.constructor does not count as present
  });
});
