/**
 * Spaces: membership check (hot path: every step's action goes through checkSpace), definition
 * check, sampling and invalid-sample generation (for property tests and the server's env checker).
 *
 * Paths are JSON Pointers into the value ("" = the value itself, "/move/0", "/arguments/text").
 * Violation paths are only built on failure, so the success path allocates nothing.
 */
import type { ValidateFunction } from 'ajv';
import { compileUserSchema, userSchemaAjv } from './ajv.js';
import { describeAjvError, matchesSpaceSchema } from './validate.js';
import type { Bound, Bounds, BoxSpace, Dtype, JsonSpace, MultiBinarySpace, Space, TextSpace, Tool, ToolCallSpace } from './generated/types.js';

export interface SpaceViolation {
  /** JSON Pointer of the offending part of the value (or of the space definition). */
  path: string;
  reason: string;
}

/** Uniform random number in [0, 1). */
export type Rng = () => number;

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const FLOAT32_MAX = 3.4028234663852886e38;

/** Inclusive value range of each dtype (64-bit ints are limited to what the wire carries: ±(2^53-1)). */
export const DTYPE_RANGE: Readonly<Record<Dtype, readonly [number, number]>> = {
  float32: [-FLOAT32_MAX, FLOAT32_MAX],
  float64: [-Number.MAX_VALUE, Number.MAX_VALUE],
  int8: [-128, 127],
  int16: [-32768, 32767],
  int32: [-2147483648, 2147483647],
  int64: [-MAX_SAFE, MAX_SAFE],
  uint8: [0, 255],
  uint16: [0, 65535],
  uint32: [0, 4294967295],
  uint64: [0, MAX_SAFE],
};

export function isIntegerDtype(dtype: Dtype): boolean {
  return dtype !== 'float32' && dtype !== 'float64';
}

function violation(path: string, reason: string): SpaceViolation {
  return { path, reason };
}

function prefixed(seg: string | number, v: SpaceViolation | null): SpaceViolation | null {
  if (v === null) return null;
  return { path: `/${typeof seg === 'number' ? seg : escapeSegment(seg)}${v.path}`, reason: v.reason };
}

function escapeSegment(key: string): string {
  return key.includes('~') || key.includes('/') ? key.replace(/~/g, '~0').replace(/\//g, '~1') : key;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)?.slice(0, 40) ?? ''}`;
}

function boundValue(b: Bound, which: 'low' | 'high'): number {
  if (b === 'inf') return Infinity;
  if (b === '-inf') return -Infinity;
  if (typeof b === 'number') return b;
  throw new Error(`invalid ${which} bound ${JSON.stringify(b)}`);
}

// ---------------------------------------------------------------- compiled-schema caches

// Keyed by the space object so a long-lived env_spec compiles each schema exactly once; the
// compiled function is dropped from Ajv's own cache so short-lived spaces do not leak.
const jsonValidators = new WeakMap<JsonSpace, ValidateFunction>();
const toolValidators = new WeakMap<ToolCallSpace, Map<string, { tool: Tool; validate: ValidateFunction }>>();
const charsets = new WeakMap<TextSpace, Set<string>>();

function compileDetached(schema: object): ValidateFunction {
  const fn = compileUserSchema(schema);
  userSchemaAjv.removeSchema(fn.schema as object);
  return fn;
}

function jsonValidator(space: JsonSpace): ValidateFunction {
  let fn = jsonValidators.get(space);
  if (!fn) {
    fn = compileDetached(space.schema);
    jsonValidators.set(space, fn);
  }
  return fn;
}

function toolTable(space: ToolCallSpace): Map<string, { tool: Tool; validate: ValidateFunction }> {
  let table = toolValidators.get(space);
  if (!table) {
    table = new Map();
    for (const tool of space.tools) table.set(tool.name, { tool, validate: compileDetached(tool.parameters) });
    toolValidators.set(space, table);
  }
  return table;
}

function charsetOf(space: TextSpace & { charset: string }): Set<string> {
  let set = charsets.get(space);
  if (!set) {
    set = new Set(Array.from(space.charset));
    charsets.set(space, set);
  }
  return set;
}

// ---------------------------------------------------------------- checkSpace

/** null when `value` is in `space`, else where and why it is not. */
export function checkSpace(space: Space, value: unknown): SpaceViolation | null {
  switch (space.type) {
    case 'box':
      return checkBox(space, value);
    case 'discrete': {
      const start = space.start ?? 0;
      if (typeof value !== 'number' || !Number.isInteger(value)) return violation('', `expected an integer, got ${describe(value)}`);
      if (value < start || value >= start + space.n) return violation('', `${value} is outside [${start}, ${start + space.n})`);
      return null;
    }
    case 'multi_discrete': {
      const { nvec } = space;
      if (!Array.isArray(value)) return violation('', `expected an array, got ${describe(value)}`);
      if (value.length !== nvec.length) return violation('', `expected ${nvec.length} elements, got ${value.length}`);
      for (let i = 0; i < nvec.length; i++) {
        const v: unknown = value[i];
        const lo = space.start?.[i] ?? 0;
        const n = nvec[i]!;
        if (typeof v !== 'number' || !Number.isInteger(v)) return violation(`/${i}`, `expected an integer, got ${describe(v)}`);
        if (v < lo || v >= lo + n) return violation(`/${i}`, `${v} is outside [${lo}, ${lo + n})`);
      }
      return null;
    }
    case 'multi_binary':
      return checkMultiBinary(space, value);
    case 'text':
      return checkText(space, value);
    case 'dict': {
      if (!isPlainObject(value)) return violation('', `expected an object, got ${describe(value)}`);
      let present = 0;
      for (const entry of space.spaces) {
        if (!Object.prototype.hasOwnProperty.call(value, entry.key)) return violation(`/${escapeSegment(entry.key)}`, 'required key is missing');
        present++;
        const bad = checkSpace(entry.space, value[entry.key]);
        if (bad) return prefixed(entry.key, bad);
      }
      if (Object.keys(value).length !== present) {
        const known = new Set(space.spaces.map((e) => e.key));
        const extra = Object.keys(value).find((k) => !known.has(k)) ?? '';
        return violation(`/${escapeSegment(extra)}`, 'unexpected key');
      }
      return null;
    }
    case 'tuple': {
      if (!Array.isArray(value)) return violation('', `expected an array, got ${describe(value)}`);
      if (value.length !== space.spaces.length) return violation('', `expected ${space.spaces.length} elements, got ${value.length}`);
      for (let i = 0; i < value.length; i++) {
        const bad = checkSpace(space.spaces[i]!, value[i]);
        if (bad) return prefixed(i, bad);
      }
      return null;
    }
    case 'sequence': {
      if (!Array.isArray(value)) return violation('', `expected an array, got ${describe(value)}`);
      for (let i = 0; i < value.length; i++) {
        const bad = checkSpace(space.space, value[i]);
        if (bad) return prefixed(i, bad);
      }
      return null;
    }
    case 'one_of': {
      if (!Array.isArray(value) || value.length !== 2) return violation('', 'expected [index, value]');
      const idx: unknown = value[0];
      if (typeof idx !== 'number' || !Number.isInteger(idx) || idx < 0 || idx >= space.spaces.length) {
        return violation('/0', `index must be an integer in [0, ${space.spaces.length})`);
      }
      return prefixed(1, checkSpace(space.spaces[idx]!, value[1]));
    }
    case 'json': {
      const validate = jsonValidator(space);
      if (validate(value)) return null;
      return describeAjvError(validate.errors);
    }
    case 'tool_call':
      return checkToolCall(space, value);
    default:
      return violation('', `unknown space type ${JSON.stringify((space as { type?: unknown }).type)}`);
  }
}

function checkToolCall(space: ToolCallSpace, value: unknown): SpaceViolation | null {
  if (!isPlainObject(value)) return violation('', `expected a tool call {name, arguments}, got ${describe(value)}`);
  const name = value.name;
  if (typeof name !== 'string') return violation('/name', name === undefined ? 'required property is missing' : `expected a string, got ${describe(name)}`);
  const entry = toolTable(space).get(name);
  if (!entry) return violation('/name', `unknown tool '${name.slice(0, 64)}'; known: ${space.tools.map((t) => t.name).join(', ')}`);
  if (!Object.prototype.hasOwnProperty.call(value, 'arguments')) return violation('/arguments', 'required property is missing');
  for (const k of Object.keys(value)) {
    if (k !== 'name' && k !== 'arguments') return violation(`/${escapeSegment(k)}`, 'unexpected key');
  }
  const args = value.arguments;
  if (!isPlainObject(args)) return violation('/arguments', `expected an object, got ${describe(args)}`);
  if (entry.validate(args)) return null;
  const bad = describeAjvError(entry.validate.errors);
  return { path: `/arguments${bad.path}`, reason: bad.reason };
}

function checkText(space: TextSpace, value: unknown): SpaceViolation | null {
  if (typeof value !== 'string') return violation('', `expected a string, got ${describe(value)}`);
  const min = space.min_length ?? 0;
  // UTF-16 length bounds the code-point count from above (and 2x from below): count only when needed.
  if (value.length > space.max_length || value.length < min * 2 || space.charset !== undefined) {
    let count = 0;
    const allowed = space.charset !== undefined ? charsetOf(space as TextSpace & { charset: string }) : null;
    for (const ch of value) {
      if (allowed && !allowed.has(ch)) return violation('', `character ${JSON.stringify(ch)} at ${count} is not in the charset`);
      count++;
    }
    if (count > space.max_length) return violation('', `length ${count} exceeds max_length ${space.max_length}`);
    if (count < min) return violation('', `length ${count} is below min_length ${min}`);
  }
  return null;
}

function checkMultiBinary(space: MultiBinarySpace, value: unknown): SpaceViolation | null {
  const shape = typeof space.n === 'number' ? [space.n] : space.n;
  return checkNested(shape, 0, value, (v) => (v === 0 || v === 1 ? null : violation('', `expected 0 or 1, got ${describe(v)}`)));
}

/** Walks nested arrays of the given shape, calling `leaf` with each element and its index path. */
function checkNested(
  shape: readonly number[],
  dim: number,
  value: unknown,
  leaf: (v: unknown, index: readonly number[]) => SpaceViolation | null,
  index: number[] = [],
): SpaceViolation | null {
  if (dim === shape.length) return leaf(value, index);
  const n = shape[dim]!;
  if (!Array.isArray(value)) return violation('', `expected an array of ${n} elements (shape [${shape.join(', ')}]), got ${describe(value)}`);
  if (value.length !== n) return violation('', `expected ${n} elements (shape [${shape.join(', ')}]), got ${value.length}`);
  for (let i = 0; i < n; i++) {
    index.push(i);
    const bad = checkNested(shape, dim + 1, value[i], leaf, index);
    index.pop();
    if (bad) return prefixed(i, bad);
  }
  return null;
}

function boundAt(bounds: Bounds, index: readonly number[]): Bound {
  let b: Bounds = bounds;
  for (let d = 0; d < index.length && Array.isArray(b); d++) b = b[index[d]!]!;
  return b as Bound;
}

function checkBox(space: BoxSpace, value: unknown): SpaceViolation | null {
  const { dtype } = space;
  const [dmin, dmax] = DTYPE_RANGE[dtype];
  const isInt = isIntegerDtype(dtype);
  const scalarLow = !Array.isArray(space.low) ? boundValue(space.low as Bound, 'low') : null;
  const scalarHigh = !Array.isArray(space.high) ? boundValue(space.high as Bound, 'high') : null;
  return checkNested(space.shape, 0, value, (v, index) => {
    if (typeof v !== 'number') return violation('', `expected a number, got ${describe(v)}`);
    if (isInt && !Number.isInteger(v)) return violation('', `${v} is not an integer (dtype ${dtype})`);
    if (v < dmin || v > dmax) return violation('', `${v} is outside the ${dtype} range`);
    const lo = scalarLow ?? boundValue(boundAt(space.low, index), 'low');
    const hi = scalarHigh ?? boundValue(boundAt(space.high, index), 'high');
    if (v < lo) return violation('', `${v} is below low ${lo}`);
    if (v > hi) return violation('', `${v} is above high ${hi}`);
    return null;
  });
}

// ---------------------------------------------------------------- validateSpaceDefinition

/**
 * null when `space` is a usable space definition: it matches space.json and is consistent (bounds
 * shaped like the box, low <= high, unique dict keys and tool names, json/tool schemas compile).
 */
export function validateSpaceDefinition(space: unknown): SpaceViolation | null {
  const schemaBad = matchesSpaceSchema(space);
  if (schemaBad) return schemaBad;
  return checkDefinition(space as Space);
}

function checkDefinition(space: Space): SpaceViolation | null {
  switch (space.type) {
    case 'box':
      return checkBoxDefinition(space);
    case 'multi_discrete':
      if (space.start && space.start.length !== space.nvec.length) return violation('/start', 'start must have as many elements as nvec');
      return null;
    case 'text':
      if ((space.min_length ?? 0) > space.max_length) return violation('/min_length', 'min_length exceeds max_length');
      return null;
    case 'dict': {
      const seen = new Set<string>();
      for (let i = 0; i < space.spaces.length; i++) {
        const entry = space.spaces[i]!;
        if (seen.has(entry.key)) return violation(`/spaces/${i}/key`, `duplicate key '${entry.key}'`);
        seen.add(entry.key);
        const bad = checkDefinition(entry.space);
        if (bad) return { path: `/spaces/${i}/space${bad.path}`, reason: bad.reason };
      }
      return null;
    }
    case 'tuple':
    case 'one_of':
      for (let i = 0; i < space.spaces.length; i++) {
        const bad = checkDefinition(space.spaces[i]!);
        if (bad) return { path: `/spaces/${i}${bad.path}`, reason: bad.reason };
      }
      return null;
    case 'sequence': {
      const bad = checkDefinition(space.space);
      return bad ? { path: `/space${bad.path}`, reason: bad.reason } : null;
    }
    case 'json':
      try {
        jsonValidator(space);
        return null;
      } catch (err) {
        return violation('/schema', `schema does not compile: ${err instanceof Error ? err.message : String(err)}`);
      }
    case 'tool_call': {
      const seen = new Set<string>();
      for (let i = 0; i < space.tools.length; i++) {
        const tool = space.tools[i]!;
        if (seen.has(tool.name)) return violation(`/tools/${i}/name`, `duplicate tool name '${tool.name}'`);
        seen.add(tool.name);
        try {
          compileDetached(tool.parameters);
        } catch (err) {
          return violation(`/tools/${i}/parameters`, `schema does not compile: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      toolTable(space);
      return null;
    }
    default:
      return null;
  }
}

function checkBoxDefinition(space: BoxSpace): SpaceViolation | null {
  for (const which of ['low', 'high'] as const) {
    const bounds = space[which];
    if (Array.isArray(bounds)) {
      const bad = checkNested(space.shape, 0, bounds, (b) => (typeof b === 'number' || b === 'inf' || b === '-inf' ? null : violation('', 'expected a bound')));
      if (bad) return { path: `/${which}${bad.path}`, reason: `${which} must be a scalar or have the box's shape: ${bad.reason}` };
    }
  }
  if (space.low === 'inf' || space.high === '-inf') return violation('/low', 'low must not be "inf" and high must not be "-inf"');
  const size = space.shape.reduce((a, b) => a * b, 1);
  if (size > 1 << 24) return violation('/shape', 'box has more than 2^24 elements');
  let bad: SpaceViolation | null = null;
  const [dmin, dmax] = DTYPE_RANGE[space.dtype];
  const isInt = isIntegerDtype(space.dtype);
  forEachIndex(space.shape, (index) => {
    const lo = boundValue(boundAt(space.low, index), 'low');
    const hi = boundValue(boundAt(space.high, index), 'high');
    const at = index.length ? `/low/${index.join('/')}` : '/low';
    if (lo === Infinity || hi === -Infinity || lo > hi) {
      bad = violation(at, `low ${lo} exceeds high ${hi}`);
      return false;
    }
    // An element whose bounds admit no value of the dtype makes the box empty.
    const effLo = Math.max(lo, dmin);
    const effHi = Math.min(hi, dmax);
    if (effLo > effHi || (isInt && Math.ceil(effLo) > Math.floor(effHi))) {
      bad = violation(at, `bounds [${lo}, ${hi}] admit no ${space.dtype} value`);
      return false;
    }
    return true;
  });
  return bad;
}

function forEachIndex(shape: readonly number[], fn: (index: number[]) => boolean): void {
  const index = new Array<number>(shape.length).fill(0);
  if (shape.some((n) => n === 0)) return;
  for (;;) {
    if (!fn(index)) return;
    let d = shape.length - 1;
    while (d >= 0) {
      index[d]!++;
      if (index[d]! < shape[d]!) break;
      index[d] = 0;
      d--;
    }
    if (d < 0) return;
  }
}

// ---------------------------------------------------------------- sampling

/** A small seeded PRNG (mulberry32) for deterministic sampling. */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randInt(rng: Rng, lo: number, hi: number): number {
  // inclusive; lo/hi are safe integers with lo <= hi
  return Math.min(hi, lo + Math.floor(rng() * (hi - lo + 1)));
}

const SAMPLE_ALPHABET = Array.from('abcXYZ 019_-é日😀');
const UNBOUNDED_SPAN = 1000;

/**
 * A random value of `space` (uniform where bounded; unbounded box dimensions draw from a window
 * of ±1000 around the finite bound or 0). json and tool_call spaces sample from their JSON Schema
 * (subset: type, enum, const, properties/required, items, min/max*, anyOf/oneOf); a schema outside
 * that subset throws Error.
 */
export function sampleSpace(space: Space, rng: Rng): unknown {
  switch (space.type) {
    case 'box':
      return sampleBox(space, rng);
    case 'discrete':
      return (space.start ?? 0) + Math.min(space.n - 1, Math.floor(rng() * space.n));
    case 'multi_discrete':
      return space.nvec.map((n, i) => (space.start?.[i] ?? 0) + Math.min(n - 1, Math.floor(rng() * n)));
    case 'multi_binary': {
      const shape = typeof space.n === 'number' ? [space.n] : space.n;
      return buildNested(shape, () => (rng() < 0.5 ? 0 : 1));
    }
    case 'text': {
      const min = space.min_length ?? 0;
      const len = randInt(rng, min, Math.max(min, Math.min(space.max_length, min + 12)));
      const alphabet = space.charset !== undefined ? Array.from(space.charset) : SAMPLE_ALPHABET;
      let s = '';
      for (let i = 0; i < len; i++) s += alphabet[Math.floor(rng() * alphabet.length)] ?? alphabet[0]!;
      return s;
    }
    case 'dict': {
      const out: Record<string, unknown> = {};
      for (const e of space.spaces) out[e.key] = sampleSpace(e.space, rng);
      return out;
    }
    case 'tuple':
      return space.spaces.map((s) => sampleSpace(s, rng));
    case 'sequence': {
      const len = randInt(rng, 0, 3);
      return Array.from({ length: len }, () => sampleSpace(space.space, rng));
    }
    case 'one_of': {
      const i = randInt(rng, 0, space.spaces.length - 1);
      return [i, sampleSpace(space.spaces[i]!, rng)];
    }
    case 'json': {
      const v = sampleSchema(space.schema as SchemaNode, rng, 0);
      if (checkSpace(space, v) !== null) throw new Error('sampleSpace: cannot sample this json schema');
      return v;
    }
    case 'tool_call': {
      const tool = space.tools[randInt(rng, 0, space.tools.length - 1)]!;
      const call = { name: tool.name, arguments: sampleSchema(tool.parameters as SchemaNode, rng, 0) };
      if (checkSpace(space, call) !== null) throw new Error(`sampleSpace: cannot sample arguments of tool ${tool.name}`);
      return call;
    }
    default:
      throw new Error(`unknown space type ${JSON.stringify((space as { type?: unknown }).type)}`);
  }
}

function buildNested(shape: readonly number[], leaf: (index: number[]) => unknown, dim = 0, index: number[] = []): unknown {
  if (dim === shape.length) return leaf(index);
  const out: unknown[] = [];
  for (let i = 0; i < shape[dim]!; i++) {
    index.push(i);
    out.push(buildNested(shape, leaf, dim + 1, index));
    index.pop();
  }
  return out;
}

/** Effective finite [lo, hi] for sampling one box element. */
function sampleRange(space: BoxSpace, index: readonly number[]): [number, number] {
  const [dmin, dmax] = DTYPE_RANGE[space.dtype];
  let lo = Math.max(boundValue(boundAt(space.low, index), 'low'), dmin);
  let hi = Math.min(boundValue(boundAt(space.high, index), 'high'), dmax);
  if (!Number.isFinite(lo) && !Number.isFinite(hi)) [lo, hi] = [-UNBOUNDED_SPAN, UNBOUNDED_SPAN];
  else if (!Number.isFinite(lo)) lo = hi - UNBOUNDED_SPAN;
  else if (!Number.isFinite(hi)) hi = lo + UNBOUNDED_SPAN;
  return [lo, hi];
}

function sampleBox(space: BoxSpace, rng: Rng): unknown {
  const isInt = isIntegerDtype(space.dtype);
  return buildNested(space.shape, (index) => {
    const [lo, hi] = sampleRange(space, index);
    if (isInt) return randInt(rng, Math.ceil(lo), Math.floor(hi));
    let v = lo + rng() * (hi - lo);
    if (space.dtype === 'float32') v = Math.fround(v);
    return v < lo || v > hi || !Number.isFinite(v) ? lo : v;
  });
}

type SchemaNode = Record<string, unknown> | boolean;

/** Samples the common JSON Schema subset used by tool parameters; see sampleSpace. */
function sampleSchema(schema: SchemaNode, rng: Rng, depth: number): unknown {
  if (schema === true) return null;
  if (schema === false) throw new Error('cannot sample schema false');
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[randInt(rng, 0, schema.enum.length - 1)];
  const alternatives = (schema.oneOf ?? schema.anyOf) as SchemaNode[] | undefined;
  if (Array.isArray(alternatives) && alternatives.length > 0) return sampleSchema(alternatives[randInt(rng, 0, alternatives.length - 1)]!, rng, depth + 1);
  let type = schema.type;
  if (Array.isArray(type)) type = type[randInt(rng, 0, type.length - 1)];
  if (type === undefined) type = 'properties' in schema ? 'object' : 'items' in schema ? 'array' : 'null';
  const num = (k: string): number | undefined => (typeof schema[k] === 'number' ? (schema[k] as number) : undefined);
  switch (type) {
    case 'null':
      return null;
    case 'boolean':
      return rng() < 0.5;
    case 'integer': {
      const lo = Math.ceil(num('minimum') ?? (num('exclusiveMinimum') ?? -101) + 1);
      const hi = Math.floor(num('maximum') ?? (num('exclusiveMaximum') ?? lo + 201) - 1);
      return randInt(rng, lo, Math.max(lo, hi));
    }
    case 'number': {
      const lo = num('minimum') ?? num('exclusiveMinimum') ?? -100;
      const hi = num('maximum') ?? num('exclusiveMaximum') ?? lo + 200;
      const v = lo + rng() * (hi - lo);
      return v === lo && num('exclusiveMinimum') !== undefined ? (lo + hi) / 2 : v;
    }
    case 'string': {
      const min = num('minLength') ?? 0;
      const max = Math.max(min, Math.min(num('maxLength') ?? min + 8, min + 8));
      const len = randInt(rng, min, max);
      let s = '';
      for (let i = 0; i < len; i++) s += SAMPLE_ALPHABET[Math.floor(rng() * 6)]!;
      return s;
    }
    case 'array': {
      const min = num('minItems') ?? 0;
      const len = depth > 4 ? min : randInt(rng, min, Math.max(min, Math.min(num('maxItems') ?? min + 3, min + 3)));
      const items = (schema.items ?? true) as SchemaNode;
      return Array.from({ length: len }, () => sampleSchema(items, rng, depth + 1));
    }
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, SchemaNode>;
      const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
      const out: Record<string, unknown> = {};
      for (const [k, sub] of Object.entries(props)) {
        if (required.has(k) || (depth < 4 && rng() < 0.5)) out[k] = sampleSchema(sub, rng, depth + 1);
      }
      return out;
    }
    default:
      throw new Error(`cannot sample schema type ${JSON.stringify(type)}`);
  }
}

// ---------------------------------------------------------------- invalid samples

export interface InvalidSample {
  value: unknown;
  /** What makes it invalid (for test names and env-checker reports). */
  reason: string;
}

/**
 * Values that are NOT in `space`: wrong type, wrong shape, out of bounds, wrong dtype, missing or
 * extra keys, unknown tool, bad arguments... Every returned value fails checkSpace (guaranteed:
 * candidates that would pass are dropped). Deterministic for a given space.
 */
export function makeInvalidSamples(space: Space): InvalidSample[] {
  const out: InvalidSample[] = [];
  for (const c of invalidCandidates(space)) {
    if (checkSpace(space, c.value) !== null && !out.some((o) => sameJson(o.value, c.value))) out.push(c);
  }
  return out;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function validSample(space: Space): unknown {
  try {
    return sampleSpace(space, mulberry32(7));
  } catch {
    return undefined;
  }
}

const WRONG_TYPES: InvalidSample[] = [
  { value: null, reason: 'null instead of a value' },
  { value: 'x', reason: 'a string of the wrong type' },
  { value: 0.5, reason: 'a number of the wrong type' },
  { value: true, reason: 'a boolean' },
  { value: [], reason: 'an empty array' },
  { value: {}, reason: 'an empty object' },
];

function invalidCandidates(space: Space): InvalidSample[] {
  const c: InvalidSample[] = [...WRONG_TYPES];
  const add = (value: unknown, reason: string): void => {
    if (value !== undefined) c.push({ value, reason });
  };
  switch (space.type) {
    case 'box': {
      const sample = validSample(space);
      add(space.shape.length === 0 ? [sample] : [sample], 'wrong shape (an extra dimension)');
      if (space.shape.length > 0)
        add(
          buildNested(
            space.shape.map((n, i) => (i === 0 ? n + 1 : n)),
            () => 0,
          ),
          'wrong shape (one element too many)',
        );
      if (space.shape.length > 0 && space.shape[0]! > 0)
        add(
          buildNested(
            space.shape.map((n, i) => (i === 0 ? n - 1 : n)),
            () => 0,
          ),
          'wrong shape (one element too few)',
        );
      const first = new Array<number>(space.shape.length).fill(0);
      const lo = boundValue(boundAt(space.low, first), 'low');
      const hi = boundValue(boundAt(space.high, first), 'high');
      const [dmin, dmax] = DTYPE_RANGE[space.dtype];
      const withFirst = (v: unknown): unknown => replaceFirst(space.shape, sample, v);
      if (Number.isFinite(lo)) add(withFirst(lo - Math.max(1, Math.abs(lo) * 0.5)), 'first element below low');
      if (Number.isFinite(hi)) add(withFirst(hi + Math.max(1, Math.abs(hi) * 0.5)), 'first element above high');
      if (isIntegerDtype(space.dtype)) {
        add(withFirst(dmax + 1), `first element beyond the ${space.dtype} range`);
        add(withFirst(dmin - 1), `first element below the ${space.dtype} range`);
        const inside = Number.isFinite(lo) ? lo : Number.isFinite(hi) ? hi - 1 : 0;
        add(withFirst(inside + 0.5), `a non-integer for dtype ${space.dtype}`);
      } else if (space.dtype === 'float32') {
        add(withFirst(1e39), 'first element beyond the float32 range');
      }
      add(withFirst('1'), 'a string element');
      add(withFirst(null), 'a null element');
      break;
    }
    case 'discrete': {
      const start = space.start ?? 0;
      add(start - 1, 'below start');
      add(start + space.n, 'at start + n (exclusive upper end)');
      add(start + 0.5, 'a non-integer');
      add(String(start), 'the index as a string');
      add([start], 'the index wrapped in an array');
      break;
    }
    case 'multi_discrete': {
      const sample = validSample(space) as number[];
      add(sample.slice(1), 'one element too few');
      add([...sample, 0], 'one element too many');
      add([(space.start?.[0] ?? 0) + space.nvec[0]!, ...sample.slice(1)], 'first element out of range');
      add([(space.start?.[0] ?? 0) - 1, ...sample.slice(1)], 'first element below start');
      add([0.5, ...sample.slice(1)], 'a non-integer element');
      break;
    }
    case 'multi_binary': {
      const shape = typeof space.n === 'number' ? [space.n] : space.n;
      add(
        buildNested(shape, () => 2),
        'elements equal to 2',
      );
      add(
        buildNested(
          shape.map((n, i) => (i === 0 ? n + 1 : n)),
          () => 0,
        ),
        'wrong shape',
      );
      add(
        buildNested(shape, () => true),
        'booleans instead of 0/1',
      );
      break;
    }
    case 'text': {
      if (space.max_length < 1 << 20) add('a'.repeat(space.max_length + 1), 'longer than max_length');
      if ((space.min_length ?? 0) > 0) add('a'.repeat((space.min_length ?? 1) - 1), 'shorter than min_length');
      if (space.charset !== undefined) {
        const allowed = new Set(Array.from(space.charset));
        const outside = ['\u0000', '~', 'Z', '0', '日', ' '].find((ch) => !allowed.has(ch));
        if (outside !== undefined) add(outside.repeat(Math.max(1, space.min_length ?? 0)), 'a character outside the charset');
      }
      add(5, 'a number instead of a string');
      break;
    }
    case 'dict': {
      const sample = validSample(space) as Record<string, unknown> | undefined;
      if (sample) {
        const first = space.spaces[0];
        if (first) {
          const { [first.key]: _drop, ...missing } = sample;
          add(missing, `missing key '${first.key}'`);
          for (const inner of invalidCandidates(first.space).slice(WRONG_TYPES.length, WRONG_TYPES.length + 4)) {
            add({ ...sample, [first.key]: inner.value }, `'${first.key}': ${inner.reason}`);
          }
          add({ ...sample, [first.key]: null }, `'${first.key}' is null`);
        }
        add({ ...sample, __unexpected__: 1 }, 'an unexpected extra key');
        add(Object.values(sample), 'an array of the values instead of an object');
      }
      break;
    }
    case 'tuple': {
      const sample = validSample(space) as unknown[] | undefined;
      if (sample) {
        add([...sample, 0], 'one element too many');
        if (sample.length > 0) add(sample.slice(1), 'one element too few');
        const first = space.spaces[0];
        if (first) add([null, ...sample.slice(1)], 'first element null');
      }
      break;
    }
    case 'sequence': {
      add([null], 'a null element');
      for (const inner of invalidCandidates(space.space).slice(WRONG_TYPES.length, WRONG_TYPES.length + 3)) add([inner.value], `element: ${inner.reason}`);
      add('not a list', 'a string instead of an array');
      break;
    }
    case 'one_of': {
      const sample = validSample(space.spaces[0]!);
      add([space.spaces.length, sample], 'index out of range');
      add([-1, sample], 'negative index');
      add([0], 'missing value');
      add([0, sample, 0], 'three elements');
      add(['0', sample], 'index as a string');
      add([0, null], 'value invalid for the chosen space');
      break;
    }
    case 'json': {
      for (const v of [null, 0, 1.5, -1, '', 'x', true, [], [1], {}, { a: 1 }]) add(v, 'a value the schema rejects');
      break;
    }
    case 'tool_call': {
      const tool = space.tools[0]!;
      const names = new Set(space.tools.map((t) => t.name));
      let unknown = 'no_such_tool';
      while (names.has(unknown)) unknown += '_';
      const args = (validSample({ type: 'tool_call', tools: [tool] }) as { arguments?: unknown } | undefined)?.arguments ?? {};
      add({ name: unknown, arguments: args }, 'unknown tool name');
      add({ name: tool.name }, 'missing arguments');
      add({ arguments: args }, 'missing name');
      add({ name: tool.name, arguments: JSON.stringify(args) }, 'arguments as a JSON string instead of an object');
      add({ name: tool.name, arguments: [] }, 'arguments as an array');
      add({ name: tool.name, arguments: args, extra: 1 }, 'an unexpected extra key');
      add({ name: 1, arguments: args }, 'a numeric name');
      add({ name: tool.name, arguments: { ...(args as object), __unexpected__: 1 } }, 'an unexpected argument (rejected when additionalProperties is false)');
      for (const t of space.tools) add({ name: t.name, arguments: {} }, `no arguments for '${t.name}' (rejected when it has required parameters)`);
      for (const t of space.tools) {
        const props = (t.parameters as { properties?: Record<string, unknown> }).properties ?? {};
        for (const k of Object.keys(props)) add({ name: t.name, arguments: { [k]: { nested: [null] } } }, `argument '${k}' of the wrong type`);
      }
      break;
    }
  }
  return c;
}

function replaceFirst(shape: readonly number[], sample: unknown, v: unknown): unknown {
  if (shape.length === 0) return v;
  if (shape.some((n) => n === 0)) return undefined;
  const copy = structuredCloneJson(sample);
  let node = copy as unknown[];
  for (let d = 0; d < shape.length - 1; d++) node = node[0] as unknown[];
  node[0] = v;
  return copy;
}

function structuredCloneJson(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v)) as unknown;
}
