// sandgym node harness worker: runs workspace code AS THE AGENT UID, reached by the judge (harness.mjs through
// driver.mjs) over two pipes, fd 3 (judge -> worker) and fd 4 (worker -> judge), with length-prefixed JSON frames.
// Started as `node --input-type=module -e <this source> <config json>` (the agent cannot read judge files, so the
// source travels as argv). fds 0, 1 and 2 are /dev/null: workspace prints never reach the protocol (a deliberate
// write to fd 4 is the judge's problem: it treats everything this process says as hostile input). This file only
// has to be correct for honest workspaces; everything it needs is captured before any workspace code runs, so an
// honest workspace that patches globals (JSON, Array.prototype, Buffer...) does not break it.
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { types } from 'node:util';

const PROTOCOL = 1;
const MAX_FRAME = 8 * 1024 * 1024;
const MAX_DEPTH = 64;
const MAX_NODES = 1_000_000;
const MAX_HANDLES = 100_000;
const RIN = 3;
const ROUT = 4;

const CONFIG = JSON.parse(process.argv[1] ?? '{}');
const WORKSPACE = CONFIG.workspace ?? '/workspace';

// ---- primordials: captured before workspace code can replace them ---------------------------------------------
const { parse: jsonParse, stringify: jsonStringify } = JSON;
const { readSync, writeSync } = fs;
const BufferAlloc = Buffer.alloc;
const BufferFrom = Buffer.from;
const BufferConcat = Buffer.concat;
const { getPrototypeOf, keys: objectKeys, create: objectCreate, prototype: ObjectPrototype } = Object;
const isArray = Array.isArray;
const ArrayPrototype = Array.prototype;
const MapPrototype = Map.prototype;
const SetPrototype = Set.prototype;
const DatePrototype = Date.prototype;
const ErrorPrototype = Error.prototype;
const call = Function.prototype.call.bind(Function.prototype.call);
const dateGetTime = DatePrototype.getTime;
const mapEntries = MapPrototype.entries;
const setValues = SetPrototype.values;
const mapSet = MapPrototype.set;
const setAdd = SetPrototype.add;
const mapGet = MapPrototype.get;
const mapHas = MapPrototype.has;
const mapDelete = MapPrototype.delete;
const weakGet = WeakMap.prototype.get;
const weakSet = WeakMap.prototype.set;
const ReflectApply = Reflect.apply;
const ReflectConstruct = Reflect.construct;
const numberIsNaN = Number.isNaN;
const objectIs = Object.is;
const stringOf = String;
const isUint8Array = (v) => v instanceof Uint8Array;
const { isModuleNamespaceObject, isProxy } = types;
const hexId = () => randomBytes(16).toString('hex');
const BUILTIN_ERRORS = new Map(
  [Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError, AggregateError].map((c) => [c, c.name]),
);

class Fatal extends Error {}
class Unencodable extends Error {}

// ---- frames ----------------------------------------------------------------------------------------------------
function readExact(n) {
  const buf = BufferAlloc(n);
  let off = 0;
  while (off < n) {
    let k;
    try {
      k = readSync(RIN, buf, off, n - off, null);
    } catch (e) {
      if (e && e.code === 'EAGAIN') continue;
      throw e;
    }
    if (k === 0) throw new Fatal('eof');
    off += k;
  }
  return buf;
}

function recv() {
  const n = readExact(4).readUInt32BE(0);
  if (n > MAX_FRAME) throw new Fatal('frame too large');
  return jsonParse(readExact(n).toString('utf8'));
}

function send(msg) {
  const body = BufferFrom(jsonStringify(msg), 'utf8');
  if (body.length > MAX_FRAME) throw new Unencodable(`message larger than ${MAX_FRAME} bytes`);
  const head = BufferAlloc(4);
  head.writeUInt32BE(body.length, 0);
  const buf = BufferConcat([head, body]);
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(ROUT, buf, off, buf.length - off);
    } catch (e) {
      if (e && e.code === 'EAGAIN') continue;
      throw e;
    }
  }
}

// ---- handles ---------------------------------------------------------------------------------------------------
const objects = new Map();
function newHandle(obj) {
  if (objects.size >= MAX_HANDLES) throw new Unencodable(`too many live workspace handles (${MAX_HANDLES})`);
  const id = hexId();
  call(mapSet, objects, id, obj);
  return id;
}

function typeName(v) {
  if (v === null) return 'null';
  if (typeof v !== 'object' && typeof v !== 'function') return typeof v;
  try {
    const c = v.constructor;
    if (typeof c === 'function' && typeof c.name === 'string' && c.name) return c.name.slice(0, 100);
  } catch {
    // a throwing getter: fall through
  }
  return typeof v === 'function' ? 'Function' : 'Object';
}

function isErrorClass(v) {
  if (typeof v !== 'function') return false;
  if (BUILTIN_ERRORS.has(v)) return true;
  try {
    return v.prototype instanceof Error;
  } catch {
    return false;
  }
}

function classDesc(cls, depth = 0) {
  const b = BUILTIN_ERRORS.get(cls);
  if (b !== undefined) return { b };
  if (depth > 16 || !isErrorClass(cls)) return { b: 'Error' };
  let parent;
  try {
    parent = getPrototypeOf(cls);
  } catch {
    parent = Error;
  }
  return { n: stringOf(cls.name || 'WorkspaceError').slice(0, 100), h: newHandle(cls), base: classDesc(parent, depth + 1) };
}

// ---- judge objects seen from here ------------------------------------------------------------------------------
const judgeFns = new Map(); // judge callback id -> the function workspace code holds (stable identity)
const judgeFnIds = new WeakMap();
const judgeErrIds = new WeakMap(); // error objects standing for a judge callback's exception
function judgeFunction(id) {
  let f = call(mapGet, judgeFns, id);
  if (f === undefined) {
    f = function judgeCallback(...args) {
      return callJudge({ op: 'callback', fn: id, args: encArgs(args) });
    };
    call(mapSet, judgeFns, id, f);
    call(weakSet, judgeFnIds, f, id);
  }
  return f;
}

// ---- values ----------------------------------------------------------------------------------------------------
function enc(v, st = { n: 0, seen: new Map() }, depth = 0) {
  if (++st.n > MAX_NODES) throw new Unencodable(`more than ${MAX_NODES} values`);
  if (depth > MAX_DEPTH) throw new Unencodable(`nested deeper than ${MAX_DEPTH}`);
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'number') {
    if (numberIsNaN(v)) return { n: 'NaN' };
    if (v === Infinity) return { n: 'Infinity' };
    if (v === -Infinity) return { n: '-Infinity' };
    if (objectIs(v, -0)) return { n: '-0' };
    return v;
  }
  if (v === undefined) return { u: 0 };
  if (typeof v === 'bigint') return { bi: v.toString() };
  if (typeof v === 'function') {
    const jid = call(weakGet, judgeFnIds, v);
    if (jid !== undefined) return { cb: jid };
    if (isErrorClass(v)) return { x: classDesc(v) };
    return { h: newHandle(v), k: 'fn', n: typeName(v) };
  }
  if (typeof v !== 'object') return { h: newHandle(v), k: 'obj', n: typeof v };
  const ref = call(mapGet, st.seen, v);
  if (ref !== undefined) return { r: ref };
  // Modules and proxies are objects of the workspace, never data (a Proxy could pose as any value).
  if (isModuleNamespaceObject(v)) return { h: newHandle(v), k: 'obj', n: 'Module' };
  if (isProxy(v)) return { h: newHandle(v), k: 'obj', n: 'Proxy' };
  const proto = getPrototypeOf(v);
  const d = depth + 1;
  const mark = () => call(mapSet, st.seen, v, st.seen.size);
  if (proto === ArrayPrototype && isArray(v)) {
    mark();
    const out = [];
    for (let i = 0; i < v.length; i++) out.push(enc(v[i], st, d));
    return { a: out };
  }
  if (proto === ObjectPrototype || proto === null) {
    mark();
    const out = [];
    for (const k of objectKeys(v)) out.push([k, enc(v[k], st, d)]);
    return proto === null ? { on: out } : { o: out };
  }
  if (proto === MapPrototype) {
    mark();
    const out = [];
    for (const [k, x] of call(mapEntries, v)) out.push([enc(k, st, d), enc(x, st, d)]);
    return { m: out };
  }
  if (proto === SetPrototype) {
    mark();
    const out = [];
    for (const x of call(setValues, v)) out.push(enc(x, st, d));
    return { s: out };
  }
  if (proto === DatePrototype) return { dt: enc(call(dateGetTime, v), st, d) };
  if (isUint8Array(v)) return { b: BufferFrom(v.buffer, v.byteOffset, v.byteLength).toString('base64') };
  return { h: newHandle(v), k: 'obj', n: typeName(v) };
}

function encArgs(args) {
  return enc(args);
}

// The judge is trusted: this only has to invert its encoder.
function dec(v, st = { refs: [] }) {
  if (v === null || typeof v !== 'object') return v;
  if (isArray(v)) throw new Fatal('bare array');
  if ('a' in v) {
    const out = [];
    st.refs.push(out);
    for (const x of v.a) out.push(dec(x, st));
    return out;
  }
  if ('o' in v || 'on' in v) {
    const out = 'on' in v ? objectCreate(null) : {};
    st.refs.push(out);
    for (const [k, x] of v.o ?? v.on) out[k] = dec(x, st);
    return out;
  }
  if ('m' in v) {
    const out = new Map();
    st.refs.push(out);
    for (const [k, x] of v.m) call(mapSet, out, dec(k, st), dec(x, st));
    return out;
  }
  if ('s' in v) {
    const out = new Set();
    st.refs.push(out);
    for (const x of v.s) call(setAdd, out, dec(x, st));
    return out;
  }
  if ('r' in v) return st.refs[v.r];
  if ('n' in v) return { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity, '-0': -0 }[v.n];
  if ('u' in v) return undefined;
  if ('bi' in v) return BigInt(v.bi);
  if ('dt' in v) return new Date(dec(v.dt, st));
  if ('b' in v) return new Uint8Array(BufferFrom(v.b, 'base64'));
  if ('h' in v) {
    if (!call(mapHas, objects, v.h)) throw new ReferenceError('unknown workspace handle');
    return call(mapGet, objects, v.h);
  }
  if ('cb' in v) return judgeFunction(v.cb);
  throw new Fatal('unknown tag');
}

function excDesc(e) {
  if (e === null || (typeof e !== 'object' && typeof e !== 'function')) {
    return { thrown: safeEnc(e) };
  }
  const jerr = call(weakGet, judgeErrIds, e);
  if (jerr !== undefined) return { jerr };
  let isErr = false;
  try {
    isErr = e instanceof Error;
  } catch {
    isErr = false;
  }
  if (!isErr) return { thrown: safeEnc(e) };
  let cls = Error;
  try {
    const c = e.constructor;
    if (isErrorClass(c)) cls = c;
  } catch {
    cls = Error;
  }
  let message = '';
  try {
    message = stringOf(e.message).slice(0, 2000);
  } catch {
    message = '';
  }
  return { cls: classDesc(cls), message };
}

function safeEnc(v) {
  try {
    return enc(v);
  } catch {
    return { u: 0 };
  }
}

// ---- the conversation ------------------------------------------------------------------------------------------
let seq = 0;
let depthOfCalls = 0;

/** Asks the judge something while one of its calls is pending (the only time workspace code runs). */
function callJudge(msg) {
  const id = ++seq;
  msg.id = id;
  send(msg);
  const reply = serveUntil(id);
  if (reply.op === 'raise') {
    const Cls = [Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError].find((c) => c.name === reply.b) ?? Error;
    const err = new Cls('');
    if (typeof reply.jerr === 'string') call(weakSet, judgeErrIds, err, reply.jerr);
    throw err;
  }
  return dec(reply.value);
}

/** Serves nested judge requests (synchronously) until the reply to our own request arrives. */
function serveUntil(waitingFor) {
  for (;;) {
    const msg = recv();
    if (msg === null || typeof msg !== 'object') throw new Fatal('not an object');
    if (msg.op === 'return' || msg.op === 'raise') {
      if (msg.id !== waitingFor) throw new Fatal('unexpected reply');
      return msg;
    }
    release(msg);
    const r = runOp(msg, false);
    reply(msg.id, r);
  }
}

function release(msg) {
  if (isArray(msg.rel)) for (const id of msg.rel) call(mapDelete, objects, id);
}

function reply(id, r) {
  if (r.ok && r.value !== null && typeof r.value === 'object' && MANY in r.value) {
    const items = r.value[MANY];
    r = { ok: true, value: undefined, many: items };
  }
  if (r.ok) {
    try {
      const value = r.many ? { many: r.many.map((x) => (x.ok ? enc(x.value) : { exc: excDesc(x.error) })) } : enc(r.value);
      send({ op: 'return', id, value });
    } catch (e) {
      if (!(e instanceof Unencodable)) throw e;
      send({ op: 'raise', id, harness: 'unencodable', str: stringOf(e.message).slice(0, 500) });
    }
    return;
  }
  try {
    send({ op: 'raise', id, exc: excDesc(r.error) });
  } catch (e) {
    if (!(e instanceof Unencodable)) throw e;
    send({ op: 'raise', id, exc: { cls: { b: 'Error' }, message: '' } });
  }
}

function isThenable(v) {
  if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return false;
  try {
    return typeof v.then === 'function';
  } catch {
    return false;
  }
}

function runOp(msg, top) {
  const fn = OPS[msg.op];
  if (typeof fn !== 'function' || !Object.prototype.hasOwnProperty.call(OPS, msg.op)) throw new Fatal(`unknown op ${stringOf(msg.op)}`);
  depthOfCalls++;
  try {
    const value = fn(msg, top);
    return { ok: true, value };
  } catch (error) {
    return { ok: false, error };
  } finally {
    depthOfCalls--;
  }
}

const obj = (msg, key = 'obj') => dec({ h: msg[key] });
const args = (msg) => (msg.args === undefined ? [] : dec(msg.args));

function walk(target, names) {
  let self;
  let v = target;
  for (const n of names) {
    self = v;
    v = v[n];
  }
  return { self, v };
}

function importModule(msg, top) {
  const rel = msg.path;
  if (typeof rel !== 'string' || !/^[A-Za-z0-9_.@/-]{1,200}$/.test(rel) || rel.startsWith('/') || rel.split('/').some((p) => p === '..' || p === '' || p === '.')) {
    throw new TypeError('invalid workspace module path');
  }
  if (!top) throw new Error('workspace.module() cannot run inside a callback');
  return { [ASYNC]: import(pathToFileURL(path.join(WORKSPACE, rel)).href) };
}

const ASYNC = Symbol('async');
const MANY = Symbol('many');

const OPS = {
  __proto__: null,
  ping: () => null,
  import: importModule,
  get: (m) => obj(m)[m.name],
  set: (m) => {
    obj(m)[m.name] = dec(m.value);
    return null;
  },
  call: (m) => ReflectApply(obj(m), m.self === undefined ? undefined : dec(m.self), args(m)),
  new: (m) => ReflectConstruct(obj(m), args(m)),
  getpath: (m) => walk(obj(m), m.path).v,
  callpath: (m) => {
    const { self, v } = walk(obj(m), m.path);
    return ReflectApply(v, self, args(m));
  },
  newpath: (m) => ReflectConstruct(walk(obj(m), m.path).v, args(m)),
  call_many: (m) => {
    let f = obj(m);
    let self = m.self === undefined ? undefined : dec(m.self);
    if (isArray(m.path)) ({ self, v: f } = walk(f, m.path));
    const out = [];
    for (const a of m.args_list) {
      try {
        out.push({ ok: true, value: ReflectApply(f, self, dec(a)) });
      } catch (error) {
        if (!m.return_exceptions) throw error;
        out.push({ ok: false, error });
      }
    }
    return { [MANY]: out };
  },
  str: (m) => stringOf(obj(m)),
  type_name: (m) => typeName(dec(m.value)),
  isinstance: (m) => dec(m.value) instanceof dec(m.cls),
  list: (m) => {
    const out = [];
    for (const x of dec(m.value)) {
      if (out.length >= m.limit) throw new RangeError(`iterable yielded more than ${m.limit} items`);
      out.push(x);
    }
    return out;
  },
  keys: (m) => objectKeys(dec(m.value)),
};

async function topLevel(msg) {
  release(msg);
  let r = runOp(msg, true);
  if (r.ok && r.value !== null && typeof r.value === 'object' && ASYNC in r.value) {
    try {
      r = { ok: true, value: await r.value[ASYNC] };
    } catch (error) {
      r = { ok: false, error };
    }
  } else if (r.ok && isThenable(r.value)) {
    // An async workspace function: its settled value crosses (the event loop runs only while a call is pending).
    try {
      r = { ok: true, value: await r.value };
    } catch (error) {
      r = { ok: false, error };
    }
  }
  reply(msg.id, r);
}

async function main() {
  process.chdir(WORKSPACE);
  send({ op: 'ready', protocol: PROTOCOL, pid: process.pid });
  for (;;) {
    let msg;
    try {
      msg = recv();
    } catch {
      break;
    }
    if (msg === null || typeof msg !== 'object' || msg.op === 'return' || msg.op === 'raise') break;
    try {
      await topLevel(msg);
    } catch {
      break;
    }
  }
  process.reallyExit ? process.reallyExit(0) : process.exit(0);
}

main();
