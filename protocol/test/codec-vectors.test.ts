import { describe, expect, it } from 'vitest';
import { ProtocolError, decodeJson, decodeMsgpack, encodeJson, encodeMsgpack } from '../src/index.js';
import { bytesToHex, hexToBytes, readVector, type CodecFile } from './vectors.js';

const file = readVector<CodecFile>('codec/codec.json');

describe('codec vectors: canonical cases', () => {
  for (const c of file.cases) {
    it(c.name, () => {
      expect(encodeJson(c.value)).toBe(c.json);
      expect(decodeJson(c.json)).toEqual(c.value);
      expect(decodeJson(new TextEncoder().encode(c.json))).toEqual(c.value);
      if (c.msgpack !== undefined) {
        expect(bytesToHex(encodeMsgpack(c.value))).toBe(c.msgpack);
        expect(decodeMsgpack(hexToBytes(c.msgpack))).toEqual(c.value);
        // both encodings decode to the same value
        expect(decodeMsgpack(hexToBytes(c.msgpack))).toEqual(decodeJson(c.json));
      } else {
        expect(decodeMsgpack(encodeMsgpack(c.value))).toEqual(c.value);
      }
    });
  }
});

describe('codec vectors: decode-only inputs', () => {
  for (const c of file.decode_only) {
    it(c.name, () => {
      const v = c.msgpack !== undefined ? decodeMsgpack(hexToBytes(c.msgpack)) : decodeJson(c.json ?? '');
      expect(v).toEqual(c.value);
    });
  }
});

describe('codec vectors: refused inputs', () => {
  for (const c of file.refused) {
    it(`${c.encoding}: ${c.name} -> ${c.error}`, () => {
      const opts = c.max_bytes !== undefined ? { maxBytes: c.max_bytes } : {};
      const run = (): unknown =>
        c.encoding === 'msgpack' ? decodeMsgpack(hexToBytes(c.hex ?? ''), opts) : decodeJson(c.hex !== undefined ? hexToBytes(c.hex) : (c.text ?? ''), opts);
      let caught: unknown;
      try {
        run();
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ProtocolError);
      expect((caught as ProtocolError).code).toBe(c.error);
    });
  }
});

describe('encode refuses values outside the data model', () => {
  const bad: [string, unknown][] = [
    ['NaN', { r: NaN }],
    ['Infinity', [Infinity]],
    ['-Infinity', -Infinity],
    ['bigint', { a: 1n }],
    ['function', { f: () => 1 }],
    ['undefined in array', [undefined]],
    ['typed array', { obs: new Float32Array(2) }],
    ['Date', new Date(0)],
    ['Map', new Map()],
  ];
  for (const [name, value] of bad) {
    it(name, () => {
      expect(() => encodeJson(value)).toThrow(ProtocolError);
      expect(() => encodeMsgpack(value)).toThrow(ProtocolError);
    });
  }
  it('refuses integral doubles beyond 2^53 in JSON only (msgpack writes them as float64)', () => {
    expect(() => encodeJson(2 ** 60)).toThrow(ProtocolError);
    expect(decodeMsgpack(encodeMsgpack(2 ** 60))).toBe(2 ** 60);
    expect(encodeJson(1e21)).toBe('1e+21');
  });
  it('drops undefined object values in both encodings', () => {
    expect(decodeJson(encodeJson({ a: undefined, b: 1 }))).toEqual({ b: 1 });
    expect(decodeMsgpack(encodeMsgpack({ a: undefined, b: 1 }))).toEqual({ b: 1 });
  });
  it('reports the path of the offending value', () => {
    try {
      encodeJson({ obs: [1, { x: NaN }] });
      expect.unreachable();
    } catch (err) {
      expect((err as ProtocolError).details).toMatchObject({ path: '/obs/1/x' });
    }
  });
});

describe('size limit', () => {
  it('counts UTF-8 bytes of text frames', () => {
    const s = JSON.stringify('é'.repeat(10)); // 22 bytes, 12 UTF-16 units
    expect(decodeJson(s, { maxBytes: 22 })).toBe('é'.repeat(10));
    expect(() => decodeJson(s, { maxBytes: 21 })).toThrow(expect.objectContaining({ code: 'TOO_LARGE' }) as unknown as Error);
  });
  it('TOO_LARGE carries details.max_message_bytes', () => {
    try {
      decodeMsgpack(new Uint8Array(100), { maxBytes: 10 });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ProtocolError);
      expect((err as ProtocolError).details).toMatchObject({ max_message_bytes: 10 });
      expect((err as ProtocolError).closeCode).toBe(1009);
    }
  });
  it('refuses msgpack nesting deeper than MAX_MSGPACK_DEPTH and deep JSON never throws untyped', () => {
    const deep = new Uint8Array(10_000).fill(0x91);
    expect(() => decodeMsgpack(deep)).toThrow(ProtocolError);
    const text = '['.repeat(200_000) + ']'.repeat(200_000);
    try {
      decodeJson(text);
    } catch (err) {
      expect(err).toBeInstanceOf(ProtocolError);
    }
  });
});
