// Reply encoding for the hot path. `isEncodable` is an allocation-free check of an env result (the
// drain poisons a session whose result is outside the wire data model, before it is framed).
// `encodeReply` checks each frame once: JSON here (then JSON.stringify), msgpack inside the codec's
// encodeMsgpack, whose check is the same allocation-free pass (JSON Pointer paths are built only for a
// failing value, and the codec then throws ProtocolError with the exact path).
import { encodeFrame, encodeMsgpack, MAX_MSGPACK_DEPTH } from '../../protocol/src/index.js';

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/** JSON.stringify writes integral doubles below 1e21 as digit strings, which peers refuse beyond 2^53. */
const JSON_EXPONENT_FORM = 1e21;
const ObjectProto = Object.prototype;

function encodable(v: unknown, depth: number, json: boolean): boolean {
  // Mirrors protocol/src/codec.ts findUnencodable (kept in step by server/test/fast-encode.test.ts).
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      if (!Number.isFinite(v)) return false;
      if (json && Number.isInteger(v)) {
        const a = Math.abs(v);
        return !(a > MAX_SAFE && a < JSON_EXPONENT_FORM);
      }
      return true;
    case 'object': {
      if (v === null) return true;
      if (depth >= MAX_MSGPACK_DEPTH) return false;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const item: unknown = v[i];
          if (item === undefined || !encodable(item, depth + 1, json)) return false;
        }
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(v);
      if (proto !== ObjectProto && proto !== null) return false;
      for (const key in v) {
        if (key === '__proto__') return false;
        const item: unknown = (v as Record<string, unknown>)[key];
        if (item !== undefined && !encodable(item, depth + 1, json)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

/** True when v is in the wire data model (finite numbers, plain objects, arrays, strings...). */
export function isEncodable(v: unknown, binary: boolean): boolean {
  return encodable(v, 0, !binary);
}

/** Same bytes as protocol encodeFrame; throws the codec's ProtocolError (with path) when unencodable. */
export function encodeReply(frame: unknown, binary: boolean): string | Uint8Array {
  // msgpack: encodeMsgpack's own check is this same pass; walking here too would check twice.
  if (binary) return encodeMsgpack(frame);
  if (!encodable(frame, 0, true)) return encodeFrame(frame, false);
  // JSON.stringify drops undefined object values exactly like the codec does.
  return JSON.stringify(frame);
}
