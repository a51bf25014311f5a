/**
 * Frame codec: JSON for text frames, msgpack for binary frames. Both encodings carry the same data
 * model — null, booleans, finite numbers, strings, arrays, objects with string keys — so a value
 * round-trips identically through either.
 *
 * Refused on decode (PARSE_ERROR): invalid JSON / msgpack, invalid UTF-8, NaN/±Infinity (incl. JSON
 * literals that overflow to Infinity such as 1e400), integer literals beyond ±(2^53-1) (refused, never
 * rounded), msgpack bin/ext types and the reserved byte 0xc1, non-string map keys, trailing bytes,
 * and the object key "__proto__" (refused in both encodings so no decoded object can ever carry a
 * prototype-changing key into code that merges objects), nesting deeper than MAX_MSGPACK_DEPTH in
 * either encoding (checked on JSON text before JSON.parse builds anything). Frames over maxBytes -> TOO_LARGE.
 * decode* never throws anything but ProtocolError, whatever the input. When a refused frame was
 * readable far enough to find a request id (a refused value inside a well-formed frame),
 * refusedRequestId(error) returns it, so the reply can carry it (PROTOCOL.md §2: every request whose
 * id can be read gets its reply).
 */
import { Packr, Unpackr } from 'msgpackr';
import { ProtocolError, protocolError } from './errors.js';

export type Encoding = 'json' | 'msgpack';
export type FrameData = string | Uint8Array | ArrayBuffer;

export interface DecodeOptions {
  /** Largest accepted frame in bytes (UTF-8 bytes for text). Default DEFAULT_MAX_MESSAGE_BYTES. */
  maxBytes?: number;
}

export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** msgpack nesting deeper than this is refused (keeps recursion bounded on hostile input). */
export const MAX_MSGPACK_DEPTH = 512;

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

// Built once: both are on the per-step hot path.
const packr = new Packr({
  useRecords: false,
  mapsAsObjects: true,
  // Smallest map header (fixmap/map16/map32), as every other msgpack library writes it.
  variableMapSize: true,
  // Objects drop undefined-valued keys, as JSON.stringify does.
  skipValues: [undefined],
} as ConstructorParameters<typeof Packr>[0] & { skipValues: unknown[] });
const unpackr = new Unpackr({
  useRecords: false,
  mapsAsObjects: true,
  // Safe: scanMsgpack has already refused every 64-bit integer outside ±(2^53-1).
  int64AsType: 'number',
});
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const utf8Encoder = new TextEncoder();

function parseError(reason: string): ProtocolError {
  return protocolError('PARSE_ERROR', { reason });
}

/** The request id found in a refused frame, per refusal (a side table: the wire error body is unchanged). */
const REFUSED_IDS = new WeakMap<ProtocolError, number>();

/** The id of the request a decode error refused, when the frame was readable far enough to find it. */
export function refusedRequestId(e: unknown): number | null {
  return e instanceof ProtocolError ? (REFUSED_IDS.get(e) ?? null) : null;
}

function withRequestId(e: ProtocolError, id: number | null): ProtocolError {
  if (id !== null) REFUSED_IDS.set(e, id);
  return e;
}

/** The same rule as the envelope's id: an integer 0..2^32-1. */
function asRequestId(v: unknown): number | null {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff ? v : null;
}

function tooLarge(maxBytes: number, size: number): ProtocolError {
  return protocolError('TOO_LARGE', { max_message_bytes: maxBytes }, { max_message_bytes: maxBytes, size });
}

function asBytes(data: Uint8Array | ArrayBuffer): Uint8Array {
  return data instanceof Uint8Array ? data : new Uint8Array(data);
}

/** UTF-8 byte length of a string without allocating (only reached when length*3 may exceed the limit). */
function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

// ---------------------------------------------------------------- decode

/** Decodes one frame: text frames as JSON, binary frames as msgpack. */
export function decodeFrame(data: FrameData, isBinary: boolean, opts: DecodeOptions = {}): unknown {
  return isBinary ? decodeMsgpack(typeof data === 'string' ? utf8Encoder.encode(data) : data, opts) : decodeJson(data, opts);
}

export function decode(data: FrameData, encoding: Encoding, opts: DecodeOptions = {}): unknown {
  return decodeFrame(data, encoding === 'msgpack', opts);
}

/** Cheap pre-check: only text containing a 16+ digit run or a 3+ digit exponent can hold a refused number. */
const RISKY_NUMBER = /\d{16}|[eE][+-]?\d{3}/;

export function decodeJson(data: FrameData, opts: DecodeOptions = {}): unknown {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  try {
    let text: string;
    if (typeof data === 'string') {
      if (data.length * 3 > maxBytes) {
        const size = utf8Length(data);
        if (size > maxBytes) throw tooLarge(maxBytes, size);
      }
      text = data;
    } else {
      const bytes = asBytes(data);
      if (bytes.length > maxBytes) throw tooLarge(maxBytes, bytes.length);
      try {
        text = utf8Decoder.decode(bytes);
      } catch {
        throw parseError('invalid UTF-8');
      }
    }
    // Before JSON.parse: a deep frame is refused in one pass over its text instead of being built
    // (a 15 MB frame of brackets is 7.5 million nested arrays) and walked recursively afterwards.
    if (text.length > MAX_MSGPACK_DEPTH) checkJsonDepth(text);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw parseError(`invalid JSON (${err instanceof Error ? err.message : 'syntax error'})`);
    }
    try {
      if (RISKY_NUMBER.test(text)) scanJsonNumbers(text);
      // A "__proto__" key can only exist if the text spells it, possibly with \u escapes.
      if (text.includes('__proto__') || text.includes('\\u')) assertNoProtoKey(value, 0);
    } catch (err) {
      // The frame is well-formed JSON: its id can be read, so the refusal can be answered with it.
      const id = typeof value === 'object' && value !== null && !Array.isArray(value) ? asRequestId((value as Record<string, unknown>).id) : null;
      throw err instanceof ProtocolError ? withRequestId(err, id) : err;
    }
    return value;
  } catch (err) {
    throw err instanceof ProtocolError ? err : parseError(err instanceof Error ? err.message : 'undecodable frame');
  }
}

/**
 * Refuses JSON text nested deeper than MAX_MSGPACK_DEPTH (the same limit as msgpack and the encoder),
 * without parsing it: one pass counting brackets outside strings. The text may still be invalid JSON;
 * JSON.parse decides that afterwards. A refused frame's top-level `"id": <integer>`, when the scan meets
 * one at depth 1, is kept for the reply.
 */
function checkJsonDepth(text: string): void {
  const n = text.length;
  let depth = 0;
  let exceeded = false;
  let id: number | null = null;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // Jump over the string with indexOf (native), not char by char: most of a large frame is
      // usually string content. A quote preceded by an odd number of backslashes is escaped.
      let j = text.indexOf('"', i + 1);
      while (j > 0) {
        let k = j - 1;
        while (text.charCodeAt(k) === 0x5c /* \ */) k--;
        if (((j - 1 - k) & 1) === 0) break;
        j = text.indexOf('"', j + 1);
      }
      if (j < 0) break; // unterminated: JSON.parse will say so
      if (depth === 1 && id === null && j - i === 3 && text.startsWith('"id"', i)) id = readIdValue(text, j + 1);
      i = j;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > MAX_MSGPACK_DEPTH) {
        exceeded = true;
        // Keep going past the limit only to find the id; stop as soon as both are known.
        if (id !== null) break;
      }
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  if (exceeded) throw withRequestId(parseError(`nesting deeper than ${MAX_MSGPACK_DEPTH}`), id);
}

/** After a top-level `"id"` string at `i`: `: <integer>` -> the integer when it is a valid request id. */
function readIdValue(text: string, i: number): number | null {
  while (i < text.length && /\s/.test(text[i]!)) i++;
  if (text[i] !== ':') return null;
  i++;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  const m = /^(0|[1-9][0-9]{0,9})(?![0-9.eE])/.exec(text.slice(i, i + 12));
  return m ? asRequestId(Number(m[1])) : null;
}

/**
 * Walks JSON text (already known to be valid JSON) and refuses integer literals beyond ±(2^53-1)
 * and number literals that overflow to ±Infinity. Strings are skipped so digits inside them are ignored.
 */
function scanJsonNumbers(text: string): void {
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i += 2;
        else if (d === 0x22) break;
        else i++;
      }
      i++;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      let isInteger = true;
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d >= 0x30 && d <= 0x39) i++;
        else if (d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) {
          isInteger = false;
          i++;
        } else break;
      }
      const literal = text.slice(start, i);
      const v = Number(literal);
      if (!Number.isFinite(v)) throw parseError(`number ${literal.slice(0, 40)} overflows to infinity`);
      if (isInteger && Math.abs(v) > MAX_SAFE) throw parseError(`integer ${literal.slice(0, 40)} is beyond ±(2^53-1)`);
    } else i++;
  }
}

function assertNoProtoKey(value: unknown, depth: number): void {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const v of value) assertNoProtoKey(v, depth + 1);
    return;
  }
  for (const key of Object.keys(value)) {
    if (key === '__proto__') throw parseError('object key "__proto__" is not allowed');
    assertNoProtoKey((value as Record<string, unknown>)[key], depth + 1);
  }
}

export function decodeMsgpack(data: Uint8Array | ArrayBuffer, opts: DecodeOptions = {}): unknown {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  try {
    const bytes = asBytes(data);
    if (bytes.length > maxBytes) throw tooLarge(maxBytes, bytes.length);
    if (bytes.length === 0) throw parseError('empty msgpack frame');
    // msgpackr is lenient (it maps 0xc1 to an object, decodes invalid UTF-8 with U+FFFD, coerces map
    // keys to strings, renames __proto__); a strict structural pass first keeps both encodings equivalent.
    const scanner = new MsgpackScanner(bytes);
    scanner.scanDocument();
    // A refused value inside a well-formed document: refused with the id the scan found.
    if (scanner.refusal) throw withRequestId(scanner.refusal, scanner.id);
    return unpackr.unpack(bytes);
  } catch (err) {
    throw err instanceof ProtocolError ? err : parseError(err instanceof Error ? err.message : 'undecodable frame');
  }
}

const PROTO_KEY = [0x5f, 0x5f, 0x70, 0x72, 0x6f, 0x74, 0x6f, 0x5f, 0x5f]; // "__proto__"

const ID_KEY = [0xa2, 0x69, 0x64]; // fixstr "id"

/**
 * A strict structural pass. Malformed structure (truncation, trailing bytes, 0xc1, non-string keys,
 * too deep) throws at once; a refused value in a well-formed document (NaN, an out-of-range int64,
 * invalid UTF-8, a "__proto__" key, bin/ext) is recorded in `refusal` and the scan goes on, so that
 * the top-level map's "id" can still be read wherever it stands.
 */
class MsgpackScanner {
  private pos = 0;
  private readonly view: DataView;
  /** The first refused value, when the structure was otherwise sound. */
  refusal: ProtocolError | null = null;
  /** The top-level map's "id" when it is a valid request id. */
  id: number | null = null;

  private refuse(reason: string): void {
    this.refusal ??= parseError(reason);
  }

  constructor(private readonly b: Uint8Array) {
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  scanDocument(): void {
    this.value(0);
    if (this.pos !== this.b.length) throw parseError(`${this.b.length - this.pos} trailing bytes after the msgpack value`);
  }

  private need(n: number): void {
    if (this.pos + n > this.b.length) throw parseError('truncated msgpack data');
  }

  private u8(): number {
    this.need(1);
    return this.b[this.pos++]!;
  }

  private u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.pos);
    this.pos += 2;
    return v;
  }

  private u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos);
    this.pos += 4;
    return v;
  }

  private value(depth: number): void {
    const t = this.u8();
    if (t <= 0x7f || t >= 0xe0) return; // fixint
    if (t <= 0x8f) return this.map(t & 0x0f, depth);
    if (t <= 0x9f) return this.array(t & 0x0f, depth);
    if (t <= 0xbf) return this.str(t & 0x1f, false);
    switch (t) {
      case 0xc0:
      case 0xc2:
      case 0xc3:
        return; // nil, false, true
      case 0xc1:
        throw parseError('reserved msgpack byte 0xc1');
      case 0xc4:
      case 0xc5:
      case 0xc6: {
        this.refuse('msgpack bin values are not part of the protocol data model');
        const len = t === 0xc4 ? this.u8() : t === 0xc5 ? this.u16() : this.u32();
        this.need(len);
        this.pos += len;
        return;
      }
      case 0xc7:
      case 0xc8:
      case 0xc9:
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8: {
        this.refuse('msgpack ext values are not part of the protocol data model');
        const len = t === 0xc7 ? this.u8() : t === 0xc8 ? this.u16() : t === 0xc9 ? this.u32() : 1 << (t - 0xd4);
        this.need(len + 1);
        this.pos += len + 1;
        return;
      }
      case 0xca: {
        this.need(4);
        const f = this.view.getFloat32(this.pos);
        this.pos += 4;
        if (!Number.isFinite(f)) this.refuse('NaN and Infinity are not allowed');
        return;
      }
      case 0xcb: {
        this.need(8);
        const f = this.view.getFloat64(this.pos);
        this.pos += 8;
        if (!Number.isFinite(f)) this.refuse('NaN and Infinity are not allowed');
        return;
      }
      case 0xcc:
      case 0xd0:
        this.need(1);
        this.pos += 1;
        return;
      case 0xcd:
      case 0xd1:
        this.need(2);
        this.pos += 2;
        return;
      case 0xce:
      case 0xd2:
        this.need(4);
        this.pos += 4;
        return;
      case 0xcf: {
        this.need(8);
        const hi = this.view.getUint32(this.pos);
        this.pos += 8;
        if (hi > 0x1fffff) this.refuse('uint64 beyond 2^53-1');
        return;
      }
      case 0xd3: {
        this.need(8);
        const hi = this.view.getInt32(this.pos);
        const lo = this.view.getUint32(this.pos + 4);
        this.pos += 8;
        if (hi > 0x1fffff || hi < -0x200000 || (hi === -0x200000 && lo === 0)) this.refuse('int64 beyond ±(2^53-1)');
        return;
      }
      case 0xd9:
        return this.str(this.u8(), false);
      case 0xda:
        return this.str(this.u16(), false);
      case 0xdb:
        return this.str(this.u32(), false);
      case 0xdc:
        return this.array(this.u16(), depth);
      case 0xdd:
        return this.array(this.u32(), depth);
      case 0xde:
        return this.map(this.u16(), depth);
      case 0xdf:
        return this.map(this.u32(), depth);
    }
    throw parseError(`unexpected msgpack byte 0x${t.toString(16)}`);
  }

  private array(len: number, depth: number): void {
    if (depth >= MAX_MSGPACK_DEPTH) throw parseError(`nesting deeper than ${MAX_MSGPACK_DEPTH}`);
    // Every element takes at least one byte: refuse impossible lengths before looping.
    if (len > this.b.length - this.pos) throw parseError('truncated msgpack data');
    for (let i = 0; i < len; i++) this.value(depth + 1);
  }

  private map(len: number, depth: number): void {
    if (depth >= MAX_MSGPACK_DEPTH) throw parseError(`nesting deeper than ${MAX_MSGPACK_DEPTH}`);
    if (len * 2 > this.b.length - this.pos) throw parseError('truncated msgpack data');
    for (let i = 0; i < len; i++) {
      const keyAt = this.pos;
      this.key();
      if (depth === 0 && this.pos - keyAt === 3 && ID_KEY.every((c, j) => this.b[keyAt + j] === c)) this.id = this.peekUint();
      this.value(depth + 1);
    }
  }

  private key(): void {
    const t = this.u8();
    if (t >= 0xa0 && t <= 0xbf) return this.str(t & 0x1f, true);
    if (t === 0xd9) return this.str(this.u8(), true);
    if (t === 0xda) return this.str(this.u16(), true);
    if (t === 0xdb) return this.str(this.u32(), true);
    throw parseError('msgpack map keys must be strings');
  }

  /** The unsigned integer at pos (without consuming it) when it is a valid request id, else null. */
  private peekUint(): number | null {
    const b = this.b;
    const p = this.pos;
    if (p >= b.length) return null;
    const t = b[p]!;
    if (t <= 0x7f) return t;
    if (t === 0xcc && p + 1 < b.length) return b[p + 1]!;
    if (t === 0xcd && p + 2 < b.length) return this.view.getUint16(p + 1);
    if (t === 0xce && p + 4 < b.length) return this.view.getUint32(p + 1);
    return null;
  }

  private str(len: number, isKey: boolean): void {
    this.need(len);
    const start = this.pos;
    this.pos += len;
    if (!isValidUtf8(this.b, start, this.pos)) this.refuse('invalid UTF-8 in msgpack string');
    if (isKey && len === PROTO_KEY.length && PROTO_KEY.every((c, i) => this.b[start + i] === c)) {
      this.refuse('object key "__proto__" is not allowed');
    }
  }
}

/** Strict UTF-8 check (no overlongs, no surrogates, nothing above U+10FFFF). */
export function isValidUtf8(b: Uint8Array, start = 0, end = b.length): boolean {
  let i = start;
  while (i < end) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    if (c < 0xc2 || c > 0xf4) return false;
    const c1 = i + 1 < end ? b[i + 1]! : 0;
    if ((c1 & 0xc0) !== 0x80) return false;
    if (c < 0xe0) {
      i += 2;
      continue;
    }
    const c2 = i + 2 < end ? b[i + 2]! : 0;
    if ((c2 & 0xc0) !== 0x80) return false;
    if (c < 0xf0) {
      if ((c === 0xe0 && c1 < 0xa0) || (c === 0xed && c1 >= 0xa0)) return false;
      i += 3;
      continue;
    }
    const c3 = i + 3 < end ? b[i + 3]! : 0;
    if ((c3 & 0xc0) !== 0x80) return false;
    if ((c === 0xf0 && c1 < 0x90) || (c === 0xf4 && c1 >= 0x90)) return false;
    i += 4;
  }
  return true;
}

// ---------------------------------------------------------------- encode

/** True when value is in the protocol data model for `encoding` (allocation-free; no paths). */
export function isEncodable(value: unknown, encoding: Encoding = 'json'): boolean {
  return isEncodableValue(value, 0, encoding === 'json');
}

/** Where a value leaves the protocol data model, or null when it is encodable. */
export function findUnencodable(value: unknown, encoding: Encoding = 'json'): { path: string; reason: string } | null {
  const json = encoding === 'json';
  // Every outgoing frame is checked, and almost every frame is fine: answer that with an
  // allocation-free pass, and build JSON Pointer paths (a string per key) only for a failing value.
  if (isEncodableValue(value, 0, json)) return null;
  return walkEncodable(value, '', 0, json);
}

/** JSON.stringify writes integral doubles below 1e21 as digit strings: beyond 2^53 a peer would refuse them. */
const JSON_EXPONENT_FORM = 1e21;

/**
 * The same decision as walkEncodable, without paths. It must never accept what walkEncodable refuses
 * (findUnencodable trusts a true); `for...in` visits a superset of Object.keys (also inherited
 * enumerable keys), so a false here at worst costs a walkEncodable that then finds nothing.
 */
function isEncodableValue(v: unknown, depth: number, json: boolean): boolean {
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
          if (item === undefined || !isEncodableValue(item, depth + 1, json)) return false;
        }
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key in v) {
        if (key === '__proto__') return false;
        const item: unknown = (v as Record<string, unknown>)[key];
        if (item !== undefined && !isEncodableValue(item, depth + 1, json)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

function walkEncodable(v: unknown, path: string, depth: number, json: boolean): { path: string; reason: string } | null {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return null;
    case 'number':
      if (!Number.isFinite(v)) return { path, reason: `${v} is not allowed (NaN/Infinity never go on the wire)` };
      // msgpack writes such values as float64; JSON would write an integer literal peers must refuse.
      if (json && Number.isInteger(v) && Math.abs(v) > MAX_SAFE && Math.abs(v) < JSON_EXPONENT_FORM) {
        return { path, reason: `integral number ${v} is beyond ±(2^53-1) and would be written as an integer literal` };
      }
      return null;
    case 'object': {
      if (v === null) return null;
      if (depth >= MAX_MSGPACK_DEPTH) return { path, reason: `nesting deeper than ${MAX_MSGPACK_DEPTH}` };
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const item: unknown = v[i];
          if (item === undefined) return { path: `${path}/${i}`, reason: 'undefined is not allowed in arrays' };
          const bad = walkEncodable(item, `${path}/${i}`, depth + 1, json);
          if (bad) return bad;
        }
        return null;
      }
      const proto: unknown = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null)
        return { path, reason: 'only plain objects and arrays are allowed (no typed arrays, Maps, Dates, class instances)' };
      for (const key of Object.keys(v)) {
        if (key === '__proto__') return { path, reason: 'object key "__proto__" is not allowed' };
        const item: unknown = (v as Record<string, unknown>)[key];
        if (item === undefined) continue; // dropped, as JSON.stringify does
        const bad = walkEncodable(item, `${path}/${escapePointer(key)}`, depth + 1, json);
        if (bad) return bad;
      }
      return null;
    }
    default:
      return { path, reason: `${typeof v} is not allowed` };
  }
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function assertEncodable(value: unknown, encoding: Encoding): void {
  const bad = findUnencodable(value, encoding);
  if (bad) throw protocolError('INVALID_MESSAGE', { reason: `cannot encode value at '${bad.path}': ${bad.reason}` }, bad);
}

/** JSON text of a protocol value. Throws ProtocolError(INVALID_MESSAGE, details {path, reason}) if unencodable. */
export function encodeJson(value: unknown): string {
  assertEncodable(value, 'json');
  return JSON.stringify(value);
}

/** msgpack bytes of a protocol value (smallest int encoding, float64 for non-integers, fixmap/map16). */
export function encodeMsgpack(value: unknown): Uint8Array {
  assertEncodable(value, 'msgpack');
  return packr.pack(value);
}

export function encode(value: unknown, encoding: Encoding): string | Uint8Array {
  return encoding === 'msgpack' ? encodeMsgpack(value) : encodeJson(value);
}

/** Encodes for a WebSocket frame: binary -> msgpack bytes, text -> JSON string. */
export function encodeFrame(value: unknown, binary: boolean): string | Uint8Array {
  return binary ? encodeMsgpack(value) : encodeJson(value);
}

/**
 * The bytes of encodeFrame without its check, for a frame whose every value the caller has already
 * checked (isEncodable for the same encoding) or built from its own strings and finite numbers. A
 * server checks each env result once, where it can still turn a bad one into an error reply; checking
 * the frame around it again would walk the same values twice on the per-step path.
 */
export function encodeCheckedFrame(value: unknown, binary: boolean): string | Uint8Array {
  // JSON.stringify drops undefined object values exactly as the checked encoders do.
  return binary ? packr.pack(value) : JSON.stringify(value);
}
