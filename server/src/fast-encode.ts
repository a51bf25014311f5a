// Reply encoding for the hot path. `isEncodable` is an allocation-free check of an env result (the
// drain poisons a session whose result is outside the wire data model, before it is framed).
// `encodeReply` checks each frame once: JSON here (then JSON.stringify), msgpack inside the codec's
// encodeMsgpack, whose check is the same allocation-free pass (JSON Pointer paths are built only for a
// failing value, and the codec then throws ProtocolError with the exact path).
import { encodeFrame, encodeMsgpack, isEncodable as inDataModel } from '../../protocol/src/index.js';

/** True when v is in the wire data model (finite numbers, plain objects, arrays, strings...). */
export function isEncodable(v: unknown, binary: boolean): boolean {
  return inDataModel(v, binary ? 'msgpack' : 'json');
}

/** Same bytes as protocol encodeFrame; throws the codec's ProtocolError (with path) when unencodable. */
export function encodeReply(frame: unknown, binary: boolean): string | Uint8Array {
  // msgpack: encodeMsgpack's own check is this same pass; walking here too would check twice.
  if (binary) return encodeMsgpack(frame);
  if (!inDataModel(frame, 'json')) return encodeFrame(frame, false);
  // JSON.stringify drops undefined object values exactly like the codec does.
  return JSON.stringify(frame);
}
