// Matcher engine for protocol transcripts (contract: "Transcript vector format"). Expectations are
// JSON with a few special objects: {$type}, {$any}, {$capture}, {$absent}; `send` templates use {$var}.
// Objects match on the expected keys only; arrays must match element-wise with equal length.

export type Captures = Record<string, unknown>;

export type MatchResult = { ok: true } | { ok: false; path: string; reason: string };

const TYPE_CHECKS: Record<string, (v: unknown) => boolean> = {
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  integer: (v) => typeof v === 'number' && Number.isInteger(v),
  string: (v) => typeof v === 'string',
  boolean: (v) => typeof v === 'boolean',
  object: (v) => isPlainObject(v),
  array: (v) => Array.isArray(v),
  null: (v) => v === null,
};

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/** A special matcher object is a one-key object whose key starts with `$`. */
function special(expected: unknown): [string, unknown] | undefined {
  if (!isPlainObject(expected)) return undefined;
  const keys = Object.keys(expected);
  if (keys.length !== 1 || !keys[0]!.startsWith('$')) return undefined;
  return [keys[0]!, expected[keys[0]!]];
}

function describe(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 120 ? `${s.slice(0, 117)}...` : s;
}

function fail(path: string, reason: string): MatchResult {
  return { ok: false, path, reason };
}

/**
 * Matches `actual` against `expected`, recording captures into `captures` (mutated even on failure;
 * callers that backtrack pass a copy).
 */
export function match(expected: unknown, actual: unknown, captures: Captures = {}, path = '$'): MatchResult {
  const sp = special(expected);
  if (sp) {
    const [op, arg] = sp;
    switch (op) {
      case '$type': {
        const check = TYPE_CHECKS[String(arg)];
        if (!check) throw new Error(`unknown $type '${String(arg)}' at ${path}`);
        return check(actual) ? { ok: true } : fail(path, `expected ${String(arg)}, got ${describe(actual)}`);
      }
      case '$any':
        return actual === undefined ? fail(path, 'expected a value, key is absent') : { ok: true };
      case '$capture':
        if (actual === undefined) return fail(path, `expected a value to capture as ${String(arg)}, key is absent`);
        captures[String(arg)] = actual;
        return { ok: true };
      case '$absent':
        return actual === undefined ? { ok: true } : fail(path, `expected key to be absent, got ${describe(actual)}`);
      case '$var':
        // A $var in an expectation compares against the captured value.
        if (!(String(arg) in captures)) throw new Error(`$var '${String(arg)}' used before capture at ${path}`);
        return match(captures[String(arg)], actual, captures, path);
      default:
        throw new Error(`unknown matcher ${op} at ${path}`);
    }
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return fail(path, `expected array, got ${describe(actual)}`);
    if (actual.length !== expected.length) return fail(path, `expected ${expected.length} elements, got ${actual.length}: ${describe(actual)}`);
    for (let i = 0; i < expected.length; i++) {
      const r = match(expected[i], actual[i], captures, `${path}[${i}]`);
      if (!r.ok) return r;
    }
    return { ok: true };
  }
  if (isPlainObject(expected)) {
    if (!isPlainObject(actual)) return fail(path, `expected object, got ${describe(actual)}`);
    for (const key of Object.keys(expected)) {
      const value = Object.prototype.hasOwnProperty.call(actual, key) ? actual[key] : undefined;
      const r = match(expected[key], value, captures, `${path}.${key}`);
      if (!r.ok) return r;
    }
    return { ok: true };
  }
  if (typeof expected === 'number' && typeof actual === 'number') {
    return expected === actual ? { ok: true } : fail(path, `expected ${expected}, got ${actual}`);
  }
  return Object.is(expected, actual) ? { ok: true } : fail(path, `expected ${describe(expected)}, got ${describe(actual)}`);
}

/**
 * Matches replies that may arrive in any order against expectations: finds an assignment where every
 * expectation matches a distinct frame (backtracking, since captures made by one pairing can decide
 * another). On success `captures` receives the winning assignment's captures.
 */
export function matchAnyOrder(expected: unknown[], actual: unknown[], captures: Captures = {}): MatchResult {
  if (expected.length !== actual.length) return fail('$', `expected ${expected.length} frames, got ${actual.length}`);
  const used = new Array<boolean>(actual.length).fill(false);
  let firstFailure: MatchResult | undefined;
  const solve = (i: number, caps: Captures): Captures | undefined => {
    if (i === expected.length) return caps;
    for (let j = 0; j < actual.length; j++) {
      if (used[j]) continue;
      const trial = { ...caps };
      const r = match(expected[i], actual[j], trial, `$[expect ${i} vs frame ${j}]`);
      if (!r.ok) {
        firstFailure ??= r;
        continue;
      }
      used[j] = true;
      const done = solve(i + 1, trial);
      if (done) return done;
      used[j] = false;
    }
    return undefined;
  };
  const result = solve(0, { ...captures });
  if (!result) {
    return fail(
      '$',
      `no assignment of ${actual.length} frames to expectations; e.g. ${firstFailure && !firstFailure.ok ? `${firstFailure.path}: ${firstFailure.reason}` : 'none'}`,
    );
  }
  Object.assign(captures, result);
  return { ok: true };
}

/** Replaces `{"$var": name}` objects in a send template with captured values. */
export function substitute(template: unknown, captures: Captures): unknown {
  const sp = special(template);
  if (sp && sp[0] === '$var') {
    const name = String(sp[1]);
    if (!(name in captures)) throw new Error(`$var '${name}' used before it was captured`);
    return captures[name];
  }
  if (Array.isArray(template)) return template.map((t) => substitute(t, captures));
  if (isPlainObject(template)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(template)) out[k] = substitute(v, captures);
    return out;
  }
  return template;
}
