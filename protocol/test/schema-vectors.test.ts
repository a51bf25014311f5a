import { describe, expect, it } from 'vitest';
import {
  ProtocolError,
  decodeJson,
  decodeMsgpack,
  encodeJson,
  encodeMsgpack,
  validateRequest,
  validateResult,
  validateServerMessage,
  type RequestType,
} from '../src/index.js';
import { hexToBytes, listVectors, readVector, type SchemaCase, type SchemaFile } from './vectors.js';

function decodeCase(c: SchemaCase): unknown {
  if (c.raw_json !== undefined) return decodeJson(c.raw_json);
  if (c.raw_msgpack_hex !== undefined) return decodeMsgpack(hexToBytes(c.raw_msgpack_hex));
  return c.frame;
}

/** The outcome a receiver reports for a case: null when valid, else the ProtocolError. */
function outcome(file: SchemaFile, c: SchemaCase): ProtocolError | null {
  let value: unknown;
  try {
    value = decodeCase(c);
  } catch (err) {
    if (err instanceof ProtocolError) return err;
    throw err;
  }
  if (file.direction === 'request') {
    const r = validateRequest(value);
    return r.ok ? null : r.error;
  }
  const r = validateServerMessage(value);
  if (!r.ok) return r.error;
  if (c.op !== undefined && r.msg.type === 'result') {
    const res = validateResult(c.op as RequestType, r.msg.result);
    return res.ok ? null : res.error;
  }
  return null;
}

for (const rel of listVectors('schema')) {
  const file = readVector<SchemaFile>(rel);
  describe(`schema vectors ${rel}`, () => {
    it('has cases', () => expect(file.cases.length).toBeGreaterThan(0));
    for (const c of file.cases) {
      it(`${c.valid ? 'valid' : `invalid (${c.error})`}: ${c.name}`, () => {
        const err = outcome(file, c);
        if (c.valid) {
          expect(err?.details ?? err).toBeNull();
        } else {
          expect(err).toBeInstanceOf(ProtocolError);
          expect(err?.code).toBe(c.error);
          if (c.path !== undefined) expect(err?.details?.path).toBe(c.path);
        }
      });
      if (c.frame !== undefined) {
        it(`round-trips both encodings: ${c.name}`, () => {
          expect(decodeJson(encodeJson(c.frame))).toEqual(c.frame);
          expect(decodeMsgpack(encodeMsgpack(c.frame))).toEqual(c.frame);
        });
      }
    }
  });
}
