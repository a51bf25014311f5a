// sandgym-harness: the judge side of the node harness (issue 12; API: docs/TASKS.md "Node harness tasks").
//
// Hidden tests `import { workspace } from 'sandgym-harness'` and run in `node --test` AS THE JUDGE; nothing of the
// workspace is on their module path. Workspace code runs in ONE worker process per test file (worker.mjs) as the
// agent uid, started with nsenter by a driver thread (driver.mjs) that owns its pipes, so this thread can wait for
// a reply with Atomics.wait: every round trip is synchronous underneath; the promise API (`await m.f(x)`) settles
// at once and exists for readability, the sync API (`workspace.sync`) for tests that call workspace code from
// judge callbacks or need plain expressions. Everything the worker sends is hostile input: frames are bounded in
// size, JSON nesting, value depth and count; handle ids are the worker's own names, used only as keys back into
// it; judge callbacks are looked up by random ids the judge made and run only while a judge call is pending; no
// class or module is looked up by a name the worker sends (builtin errors come from a fixed table); workspace
// objects arrive as opaque handles whose valueOf/toString/toJSON/Symbol.toPrimitive, keys, prototype and `in`
// throw, so "equal to everything" has nothing to attach to. A crash, hang, OOM or kill -1 of the worker fails the
// test that was using it (a WorkspaceError) and the next use starts a fresh worker.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { inspect } from 'node:util';
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';

const PROTOCOL = 1;
export const MAX_FRAME = 8 * 1024 * 1024;
export const MAX_DEPTH = 64;
export const MAX_NODES = 1_000_000;
/** JSON nesting checked on the raw bytes before parsing: values cost at most 3 JSON levels each, plus the envelope. */
const MAX_JSON_DEPTH = 3 * MAX_DEPTH + 8;
const HID = /^[0-9a-f]{32}$/;
const NAME = /^[A-Za-z_$][\w$]{0,99}$/;
const MODULE_PATH = /^[A-Za-z0-9_.@/-]{1,200}$/;

// ---- errors ----------------------------------------------------------------------------------------------------
/** Base of the harness's own errors (never an AssertionError, never matched by assert.throws(fn, RangeError)). */
export class WorkspaceError extends Error {
  constructor(message) {
    super(message);
    this.name = 'WorkspaceError';
    // Read by the agent-facing reporter: this message is the harness's own, safe to show.
    this.sandgym_harness = true;
  }
}
/** A round trip to the worker exceeded its deadline; the worker was killed. */
export class WorkspaceTimeout extends WorkspaceError {
  constructor(m) {
    super(m);
    this.name = 'WorkspaceTimeout';
  }
}
/** The worker died (exit, signal, OOM, kill -1), or a handle belongs to a worker that has been replaced. */
export class WorkspaceCrashed extends WorkspaceError {
  constructor(m) {
    super(m);
    this.name = 'WorkspaceCrashed';
  }
}
/** The worker sent something malformed, oversized, unsolicited or unknown; the worker was killed. */
export class WorkspaceProtocolError extends WorkspaceError {
  constructor(m) {
    super(m);
    this.name = 'WorkspaceProtocolError';
  }
}
/** Workspace code threw something that is not an Error (a string, a plain object...): `.value` holds it. */
export class WorkspaceThrow extends WorkspaceError {
  constructor(value) {
    super('workspace code threw a value that is not an Error');
    this.name = 'WorkspaceThrow';
    this.value = value;
  }
}

const BUILTIN_ERRORS = new Map(
  [Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError, AggregateError].map((c) => [c.name, c]),
);
const BUILTIN_ERROR_CLASSES = new Set(BUILTIN_ERRORS.values());

function remote(e) {
  Object.defineProperty(e, 'sandgym_remote', { value: true, enumerable: true, configurable: false, writable: false });
  return e;
}

// ---- configuration -----------------------------------------------------------------------------------------------
/** Seconds the worker may take from spawn to "ready" (see Client.start). */
const WORKER_START_S = 60;

function loadConfig() {
  const p = process.env.SANDGYM_NODE_HARNESS_CONFIG;
  const cfg = p ? JSON.parse(readFileSync(p, 'utf8')) : {};
  return {
    workspace: cfg.workspace ?? process.env.SANDGYM_WORKSPACE ?? '/workspace',
    node: cfg.node ?? process.execPath,
    path: cfg.path ?? '/usr/local/bin:/usr/bin:/bin',
    call_timeout_s: Number(cfg.call_timeout_s ?? 10),
    same_uid: cfg.same_uid ?? process.env.SANDGYM_HARNESS_SAME_UID === '1',
    data_mb: cfg.data_mb,
    nproc: cfg.nproc,
    nofile: cfg.nofile,
    submission: cfg.submission,
    exceptions: cfg.exceptions ?? {},
  };
}

const WORKER_SOURCE = readFileSync(new URL('./worker.mjs', import.meta.url), 'utf8');

// ---- transport: a driver thread owns the pipes; this thread waits on a SharedArrayBuffer ------------------------
class Transport {
  constructor() {
    this.sab = new SharedArrayBuffer(4);
    this.signal = new Int32Array(this.sab);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.thread = new Worker(new URL('./driver.mjs', import.meta.url), { workerData: { port: port2, sab: this.sab }, transferList: [port2], execArgv: [], stdout: true, stderr: true });
    this.thread.unref();
    this.thread.on('error', () => {});
  }

  post(msg, transfer) {
    this.port.postMessage(msg, transfer);
  }

  poll() {
    const r = receiveMessageOnPort(this.port);
    return r ? r.message : null;
  }

  /** The driver's next message, or null after waitMs (the driver itself enforces the call deadline first). */
  next(waitMs) {
    const end = Date.now() + waitMs;
    for (;;) {
      let m = this.poll();
      if (m) return m;
      const seen = Atomics.load(this.signal, 0);
      m = this.poll();
      if (m) return m;
      const left = end - Date.now();
      if (left <= 0) return null;
      Atomics.wait(this.signal, 0, seen, left);
    }
  }
}

/** Maximum JSON nesting of raw bytes (strings skipped), without parsing: a deep frame never reaches JSON.parse. */
function jsonDepthExceeds(bytes, limit) {
  let depth = 0;
  let inStr = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inStr) {
      if (b === 0x5c) i++;
      else if (b === 0x22) inStr = false;
    } else if (b === 0x22) inStr = true;
    else if (b === 0x5b || b === 0x7b) {
      if (++depth > limit) return true;
    } else if (b === 0x5d || b === 0x7d) depth--;
  }
  return false;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

// ---- handles -----------------------------------------------------------------------------------------------------
const STATE = new WeakMap(); // proxy target -> state
const PROXY_STATE = new WeakMap(); // proxy -> state
const REF_STATE = new WeakMap(); // member-ref proxy -> { state, path }
const HANDLE_PROTO = Object.freeze(Object.create(null));

function refuse(what) {
  return () => {
    throw new TypeError(`workspace handles refuse ${what}: compare plain values (an attribute, workspace.str(), workspace.list())`);
  };
}
const REFUSE_PRIMITIVE = refuse('conversion to a primitive');
function label(state) {
  return `<workspace ${state.kind} ${state.path ? state.path.join('.') : state.tname}>`;
}

/** Traps every handle shares: no keys, no prototype, no `in`, no conversion. */
const COMMON_TRAPS = {
  getPrototypeOf: () => HANDLE_PROTO,
  setPrototypeOf: refuse('prototype changes'),
  has: refuse('`in` (use a method or workspace.keys())'),
  ownKeys: refuse('key listing (comparison; use workspace.keys())'),
  getOwnPropertyDescriptor: refuse('property descriptors'),
  defineProperty: refuse('defineProperty'),
  deleteProperty: refuse('delete'),
  preventExtensions: refuse('preventExtensions'),
};

function specialGet(state, k) {
  if (k === Symbol.toPrimitive) return REFUSE_PRIMITIVE;
  if (k === inspect.custom) return () => label(state);
  if (typeof k === 'symbol') return undefined;
  if (k === 'then') return undefined; // never a thenable: `await handle` gives the handle
  if (k === 'valueOf' || k === 'toString' || k === 'toJSON' || k === 'toLocaleString') return REFUSE_PRIMITIVE;
  return null;
}

const SYNC_TRAPS = {
  ...COMMON_TRAPS,
  get(t, k) {
    const s = STATE.get(t);
    const sp = specialGet(s, k);
    if (sp !== null) return sp;
    return s.c.op(s, 'get', { name: k }, 'sync', k);
  },
  set(t, k, v) {
    const s = STATE.get(t);
    if (typeof k === 'symbol') throw new TypeError('symbol keys cannot cross to the workspace');
    s.c.op(s, 'set', { name: k, value: s.c.enc(v) }, 'sync');
    return true;
  },
  apply(t, self, args) {
    const s = STATE.get(t);
    return s.c.op(s, 'call', { self: s.c.encSelf(self), args: s.c.enc(args) }, 'sync');
  },
  construct(t, args) {
    const s = STATE.get(t);
    return s.c.op(s, 'new', { args: s.c.enc(args) }, 'sync');
  },
};

function settle(fn) {
  try {
    return Promise.resolve(fn());
  } catch (e) {
    return Promise.reject(e);
  }
}

const ASYNC_TRAPS = {
  ...COMMON_TRAPS,
  get(t, k) {
    const s = STATE.get(t);
    const sp = specialGet(s, k);
    if (sp !== null) return sp;
    return memberRef(s, [k]);
  },
  set(t, k, v) {
    const s = STATE.get(t);
    if (typeof k === 'symbol') throw new TypeError('symbol keys cannot cross to the workspace');
    s.c.op(s, 'set', { name: k, value: s.c.enc(v) }, 'async');
    return true;
  },
  apply(t, self, args) {
    const s = STATE.get(t);
    return settle(() => s.c.op(s, 'call', { self: s.c.encSelf(self), args: s.c.enc(args) }, 'async'));
  },
  construct(t, args) {
    const s = STATE.get(t);
    return settle(() => s.c.op(s, 'new', { args: s.c.enc(args) }, 'async'));
  },
};

/** `h.a.b` on an async handle: nothing crosses until it is awaited (read), called or constructed (one round trip). */
const REF_TRAPS = {
  ...COMMON_TRAPS,
  get(t, k) {
    const r = STATE.get(t);
    if (k === 'then') {
      return (resolve, reject) => {
        try {
          resolve(r.state.c.op(r.state, 'getpath', { path: r.path }, 'async'));
        } catch (e) {
          reject(e);
        }
      };
    }
    const sp = specialGet(r.state, k);
    if (sp !== null) return sp;
    return memberRef(r.state, [...r.path, k]);
  },
  set() {
    throw new TypeError('assign through an awaited handle: (await h.a).b = v');
  },
  apply(t, self, args) {
    const r = STATE.get(t);
    return settle(() => r.state.c.op(r.state, 'callpath', { path: r.path, args: r.state.c.enc(args) }, 'async'));
  },
  construct(t, args) {
    const r = STATE.get(t);
    return settle(() => r.state.c.op(r.state, 'newpath', { path: r.path, args: r.state.c.enc(args) }, 'async'));
  },
};

function memberRef(state, path) {
  if (path.length > 64) throw new RangeError('member path too long');
  const target = function () {};
  const r = { state, path };
  STATE.set(target, r);
  const p = new Proxy(target, REF_TRAPS);
  REF_STATE.set(p, r);
  return p;
}

function makeHandle(state, mode) {
  const target = state.kind === 'fn' ? function () {} : {};
  STATE.set(target, state);
  const p = new Proxy(target, mode === 'async' ? ASYNC_TRAPS : SYNC_TRAPS);
  PROXY_STATE.set(p, state);
  return p;
}

function safeName(n, fallback) {
  return typeof n === 'string' && NAME.test(n) ? n : fallback;
}

// ---- the client --------------------------------------------------------------------------------------------------
class Client {
  constructor() {
    this.cfg = null;
    this.transport = null;
    this.alive = false;
    this.pid = null;
    this.gen = 0;
    this.stack = [];
    this.seq = 0;
    this.deadline = 0;
    this.timeoutOverride = null;
    this.callbacks = new Map(); // id -> judge function
    this.callbackIds = new Map(); // judge function -> id
    this.judgeErrors = new Map(); // id -> error a judge callback threw
    this.excClasses = new Map(); // "name|base" -> judge class
    this.excHandles = new Map(); // judge class -> { gen, id }
    this.paths = new Map(); // JSON(path) -> handle id (current generation)
    this.poisoned = new Map(); // module path -> [class, message]
    this.released = [];
    this.lastCall = 0;
  }

  config() {
    this.cfg ??= loadConfig();
    return this.cfg;
  }

  callTimeoutS() {
    return this.timeoutOverride ?? this.config().call_timeout_s;
  }

  argv() {
    const cfg = this.config();
    const wcfg = JSON.stringify({ workspace: cfg.workspace });
    const node = [cfg.node, '--input-type=module', '-e', WORKER_SOURCE, wcfg];
    if (cfg.same_uid) return node;
    const uid = process.env.SANDGYM_AGENT_UID ?? '';
    if (!/^[0-9]+$/.test(uid) || Number(uid) === 0) throw new WorkspaceError('SANDGYM_AGENT_UID is not set: refusing to run workspace code as the judge');
    const limits = ['--core=0'];
    if (cfg.data_mb) limits.push(`--data=${Number(cfg.data_mb) * 1024 * 1024}`);
    if (cfg.nproc) limits.push(`--nproc=${Number(cfg.nproc)}`);
    if (cfg.nofile) limits.push(`--nofile=${Number(cfg.nofile)}`);
    // Limits and the OOM preference are set while still the judge (the agent cannot raise them back), then the uid drops.
    return ['prlimit', ...limits, '--', 'choom', '-n', '1000', '--', 'nsenter', '-S', uid, '-G', uid, '--', ...node];
  }

  start() {
    this.transport ??= new Transport();
    while (this.transport.poll()); // leftovers of a dead worker
    const cfg = this.config();
    // OPENSSL_CONF: node >= 18 refuses to start when the system OpenSSL config exists but is unreadable to the
    // agent (bubblewrap masks /etc/ssl); the worker needs none of it.
    const env = { PATH: cfg.path, HOME: '/tmp', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', SANDGYM_WORKSPACE: cfg.workspace, NODE_OPTIONS: '', OPENSSL_CONF: '/dev/null' };
    // Start-up has a budget of its own: only judge code runs before "ready" (no workspace module is loaded
    // yet, and a grading sandbox holds no agent process), so a slow start is the machine's load, never the
    // submission's; at a load of ~100 node took over 10 s here and a correct solution scored 0.
    this.deadline = Date.now() + Math.max(WORKER_START_S, this.callTimeoutS()) * 1000;
    this.alive = true;
    this.transport.post({ t: 'start', argv: this.argv(), env, cwd: '/', deadline: this.deadline });
    const msg = this.recv();
    if (msg.op !== 'ready' || msg.protocol !== PROTOCOL) this.fail(WorkspaceProtocolError, 'workspace worker did not start correctly');
  }

  kill() {
    if (this.transport) this.transport.post({ t: 'kill' });
    if (this.pid !== null) {
      try {
        process.kill(-this.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    this.pid = null;
    this.alive = false;
  }

  reset() {
    this.gen++;
    this.callbacks.clear();
    this.callbackIds.clear();
    this.judgeErrors.clear();
    this.excHandles.clear();
    this.paths.clear();
    this.released = [];
  }

  fail(Cls, message) {
    this.kill();
    this.reset();
    throw new Cls(message);
  }

  stop() {
    if (this.alive) {
      this.kill();
      this.reset();
    }
  }

  // ---- frames ------------------------------------------------------------------------------------------------------
  send(msg) {
    const data = Buffer.from(JSON.stringify(msg), 'utf8');
    if (data.length > MAX_FRAME) throw new RangeError(`arguments larger than ${MAX_FRAME} bytes cannot cross to the workspace`);
    const bytes = new Uint8Array(data);
    this.transport.post({ t: 'send', data: bytes, deadline: this.deadline }, [bytes.buffer]);
  }

  recv() {
    for (;;) {
      const m = this.transport.next(Math.max(0, this.deadline - Date.now()) + 5000);
      if (m === null) this.fail(WorkspaceTimeout, `workspace call timed out after ${this.callTimeoutS()} s`);
      if (m.t === 'pid') {
        this.pid = m.pid;
        continue;
      }
      if (m.t === 'dead') {
        if (m.kind === 'timeout') this.fail(WorkspaceTimeout, `workspace call timed out after ${this.callTimeoutS()} s`);
        if (m.kind === 'protocol') this.fail(WorkspaceProtocolError, String(m.message).slice(0, 300));
        this.fail(WorkspaceCrashed, String(m.message).slice(0, 300));
      }
      if (m.t !== 'frame' || !(m.data instanceof Uint8Array)) this.fail(WorkspaceProtocolError, 'harness driver sent an unknown message');
      if (jsonDepthExceeds(m.data, MAX_JSON_DEPTH)) this.fail(WorkspaceProtocolError, `workspace worker sent JSON nested deeper than ${MAX_JSON_DEPTH}`);
      let msg;
      try {
        msg = JSON.parse(utf8.decode(m.data));
      } catch {
        this.fail(WorkspaceProtocolError, 'workspace worker sent a malformed frame');
      }
      if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) this.fail(WorkspaceProtocolError, 'workspace worker sent a frame that is not an object');
      return msg;
    }
  }

  idleCheck() {
    const m = this.transport.poll();
    if (m === null) return;
    if (m.t === 'pid') return this.idleCheck();
    if (m.t === 'dead' && m.kind === 'crashed') this.fail(WorkspaceCrashed, `workspace worker died between calls (${String(m.message).slice(0, 200)})`);
    this.fail(WorkspaceProtocolError, 'workspace worker sent data while no call was pending');
  }

  // ---- requests ----------------------------------------------------------------------------------------------------
  request(msg, mode) {
    const nested = this.stack.length > 0;
    if (!nested) {
      if (!this.alive) this.start();
      else this.idleCheck();
      this.deadline = Date.now() + this.callTimeoutS() * 1000;
    } else if (!this.alive) {
      throw new WorkspaceCrashed('workspace worker was replaced during this call');
    }
    const gen = this.gen;
    const id = ++this.seq;
    msg.id = id;
    if (this.released.length) msg.rel = this.released.splice(0, 1000);
    this.stack.push(id);
    try {
      this.send(msg);
      for (;;) {
        const reply = this.recv();
        if (reply.op === 'return' || reply.op === 'raise') {
          if (reply.id !== id) this.fail(WorkspaceProtocolError, 'workspace worker answered a call that is not pending');
          return reply;
        }
        if (reply.op === 'callback') this.serveCallback(reply, mode);
        else this.fail(WorkspaceProtocolError, 'workspace worker sent an unknown message');
        if (this.gen !== gen) throw new WorkspaceCrashed('workspace worker was replaced during this call');
      }
    } finally {
      this.stack.pop();
    }
  }

  serveCallback(msg, mode) {
    const cid = msg.id;
    if (!Number.isSafeInteger(cid)) this.fail(WorkspaceProtocolError, 'workspace worker sent a callback without an id');
    const fn = typeof msg.fn === 'string' ? this.callbacks.get(msg.fn) : undefined;
    if (fn === undefined) this.fail(WorkspaceProtocolError, 'workspace worker called a callback it was never given');
    const args = this.dec(msg.args, mode);
    if (!Array.isArray(args)) this.fail(WorkspaceProtocolError, 'workspace worker sent malformed callback arguments');
    const gen = this.gen;
    let value;
    try {
      const result = fn(...args);
      if (result !== null && typeof result === 'object' && typeof result.then === 'function' && !PROXY_STATE.has(result)) {
        throw new TypeError('a judge callback returned a promise: workspace code calls callbacks synchronously');
      }
      value = this.enc(result);
    } catch (e) {
      if (e instanceof WorkspaceError || this.gen !== gen) throw e;
      // The workspace gets a builtin error of the same type WITHOUT the judge's message (it may quote expected
      // values); rethrown back to the judge, it arrives as the original error object.
      const jerr = randomBytes(16).toString('hex');
      this.judgeErrors.set(jerr, e);
      const b = e instanceof Error && BUILTIN_ERRORS.get(e.constructor?.name) === e.constructor ? e.constructor.name : 'Error';
      this.send({ op: 'raise', id: cid, b, jerr });
      return;
    }
    this.send({ op: 'return', id: cid, value });
  }

  result(reply, mode, childPath, attr) {
    if (reply.op === 'return') {
      const v = reply.value;
      if (attr !== undefined && v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && 'x' in v) return this.excAttr(v.x, attr, mode, childPath);
      return this.dec(v, mode, childPath);
    }
    if (reply.harness === 'unencodable') throw new WorkspaceError(`the workspace result cannot cross: ${typeof reply.str === 'string' ? reply.str.slice(0, 300) : '?'}`);
    throw this.exception(reply.exc, mode);
  }

  op(state, name, fields, mode, child) {
    fields.op = name;
    fields.obj = this.hid(state);
    const childPath = child !== undefined && state.path ? [...state.path, child] : undefined;
    // A member read (h.X, `await m.X`) that yields an error class: checked (excAttr) under the member's name.
    const attr = name === 'get' ? fields.name : name === 'getpath' && Array.isArray(fields.path) ? fields.path[fields.path.length - 1] : undefined;
    return this.result(this.request(fields, mode), mode, childPath, typeof attr === 'string' ? attr : undefined);
  }

  /**
   * A workspace member that is an error class (`m.ParseError`, what `assert.throws` gets): the submission must not
   * choose what the test accepts (issue 30). It must be a class the workspace defines under that name, never a
   * builtin (`export const ParseError = Error`), and its builtin base must be the one the task declares (task.json
   * `exceptions`, e.g. {"ParseError": "RangeError"}).
   */
  excAttr(desc, attr, mode, path) {
    const where = path ? path.join('.') : attr;
    if (desc !== null && typeof desc === 'object' && 'b' in desc) {
      throw new WorkspaceError(`workspace member ${where} is the builtin ${safeName(desc.b, 'Error')}, not an error class the workspace defines`);
    }
    const Cls = this.excClass(desc, 0, path);
    if (desc.n !== attr) throw new WorkspaceError(`workspace member ${where} is the error class ${Cls.name}: a task's error class must be defined under its own name`);
    const declared = (this.config().exceptions ?? {})[attr];
    if (declared !== undefined) {
      let d = desc;
      for (let i = 0; i < 20 && d && !('b' in d); i++) d = d.base;
      const base = d && typeof d.b === 'string' && BUILTIN_ERRORS.has(d.b) ? d.b : 'Error';
      if (base !== declared) throw new WorkspaceError(`workspace error class ${where} derives from ${base}; the task declares it a ${declared}`);
    }
    return Cls;
  }

  hid(state) {
    if (state.id !== null && state.gen === this.gen) return state.id;
    if (!state.path) throw new WorkspaceCrashed('this workspace object belonged to a worker that has since been replaced');
    state.id = this.resolvePath(state.path);
    state.gen = this.gen;
    return state.id;
  }

  resolvePath(path) {
    const key = JSON.stringify(path);
    const got = this.paths.get(key);
    if (got !== undefined) return got;
    let value;
    if (path.length === 1) {
      const p = this.poisoned.get(path[0]);
      if (p) throw new p[0](`importing workspace module ${path[0]} failed earlier in this run (${p[1]})`);
      try {
        value = this.result(this.request({ op: 'import', path: path[0] }, 'sync'), 'sync');
      } catch (e) {
        if (e instanceof WorkspaceTimeout || e instanceof WorkspaceCrashed) this.poisoned.set(path[0], [e.constructor, e.message]);
        throw e;
      }
    } else {
      const parent = this.resolvePath(path.slice(0, -1));
      value = this.result(this.request({ op: 'get', obj: parent, name: path[path.length - 1] }, 'sync'), 'sync', undefined, path[path.length - 1]);
    }
    let id;
    const st = value !== null && (typeof value === 'object' || typeof value === 'function') ? PROXY_STATE.get(value) : undefined;
    if (st) id = st.id;
    else if (typeof value === 'function' && this.excHandles.has(value)) id = this.excHandles.get(value).id;
    else throw new WorkspaceError(`workspace attribute ${path.join('.')} is a plain value, not an object`);
    this.paths.set(key, id);
    return id;
  }

  register(fn) {
    const got = this.callbackIds.get(fn);
    if (got !== undefined) return got;
    const id = randomBytes(16).toString('hex');
    this.callbacks.set(id, fn);
    this.callbackIds.set(fn, id);
    return id;
  }

  // ---- values: judge -> worker ----------------------------------------------------------------------------------
  encSelf(self) {
    if (self === undefined || self === null || (typeof self !== 'object' && typeof self !== 'function')) return undefined;
    return PROXY_STATE.has(self) || REF_STATE.has(self) ? this.enc(self) : undefined;
  }

  enc(v, st = { n: 0, seen: new Map() }, depth = 0) {
    if (++st.n > MAX_NODES || depth > MAX_DEPTH) throw new RangeError('value too large or too deep to cross to the workspace');
    if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
    if (typeof v === 'number') {
      if (Number.isNaN(v)) return { n: 'NaN' };
      if (v === Infinity) return { n: 'Infinity' };
      if (v === -Infinity) return { n: '-Infinity' };
      if (Object.is(v, -0)) return { n: '-0' };
      return v;
    }
    if (v === undefined) return { u: 0 };
    if (typeof v === 'bigint') return { bi: v.toString() };
    if (typeof v === 'symbol') throw new TypeError('a symbol cannot be passed to workspace code');
    const hs = PROXY_STATE.get(v);
    if (hs) {
      if (hs.c !== this) throw new TypeError('handle from another harness');
      return { h: this.hid(hs) };
    }
    const rs = REF_STATE.get(v);
    if (rs) return this.enc(this.op(rs.state, 'getpath', { path: rs.path }, 'sync'), st, depth);
    if (typeof v === 'function') {
      const eh = this.excHandles.get(v);
      if (eh && eh.gen === this.gen) return { h: eh.id };
      if (eh && v.sandgymPath) return { h: this.resolvePath(v.sandgymPath) };
      if (BUILTIN_ERROR_CLASSES.has(v)) throw new TypeError('builtin error classes cannot be passed to workspace code');
      if (eh) throw new TypeError('this error class does not belong to the current workspace worker');
      return { cb: this.register(v) };
    }
    const ref = st.seen.get(v);
    if (ref !== undefined) return { r: ref };
    const proto = Object.getPrototypeOf(v);
    const d = depth + 1;
    const mark = () => st.seen.set(v, st.seen.size);
    if (Array.isArray(v) && proto === Array.prototype) {
      mark();
      const out = [];
      for (let i = 0; i < v.length; i++) out.push(this.enc(v[i], st, d));
      return { a: out };
    }
    if (proto === Object.prototype || proto === null) {
      mark();
      const out = Object.keys(v).map((k) => [k, this.enc(v[k], st, d)]);
      return proto === null ? { on: out } : { o: out };
    }
    if (v instanceof Map && proto === Map.prototype) {
      mark();
      return { m: [...v].map(([k, x]) => [this.enc(k, st, d), this.enc(x, st, d)]) };
    }
    if (v instanceof Set && proto === Set.prototype) {
      mark();
      return { s: [...v].map((x) => this.enc(x, st, d)) };
    }
    if (v instanceof Date) return { dt: this.enc(v.getTime(), st, d) };
    if (v instanceof Uint8Array) return { b: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') };
    throw new TypeError(`a ${v.constructor?.name ?? 'value'} cannot be passed to workspace code (plain data, handles and functions only)`);
  }

  // ---- values: worker -> judge (hostile) ------------------------------------------------------------------------
  bad(what) {
    this.fail(WorkspaceProtocolError, `workspace worker sent ${what}`);
  }

  dec(v, mode, path, st = { n: 0, refs: [] }, depth = 0) {
    if (++st.n > MAX_NODES) this.bad(`more than ${MAX_NODES} values in one frame`);
    if (depth > MAX_DEPTH) this.bad(`values nested deeper than ${MAX_DEPTH}`);
    if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
    if (typeof v === 'number') return v;
    if (typeof v !== 'object' || Array.isArray(v)) this.bad('an unknown value');
    const keys = Object.keys(v);
    const d = depth + 1;
    if (keys.length === 3 && 'h' in v) {
      const { h, k, n } = v;
      if (typeof h !== 'string' || !HID.test(h) || (k !== 'fn' && k !== 'obj') || typeof n !== 'string' || n.length > 100) this.bad('a malformed handle');
      return makeHandle({ c: this, id: h, gen: this.gen, kind: k, tname: n, path: path ?? null }, mode);
    }
    if (keys.length !== 1) this.bad('an unknown value');
    const tag = keys[0];
    const x = v[tag];
    const list = (y) => (Array.isArray(y) ? y : this.bad('a malformed container'));
    switch (tag) {
      case 'a': {
        const out = [];
        st.refs.push(out);
        for (const i of list(x)) out.push(this.dec(i, mode, undefined, st, d));
        return out;
      }
      case 'o':
      case 'on': {
        const out = tag === 'on' ? Object.create(null) : {};
        st.refs.push(out);
        for (const pair of list(x)) {
          if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string') this.bad('a malformed object');
          // defineProperty: a "__proto__" key is an ordinary key, never a prototype change.
          Object.defineProperty(out, pair[0], { value: this.dec(pair[1], mode, undefined, st, d), enumerable: true, writable: true, configurable: true });
        }
        return out;
      }
      case 'm': {
        const out = new Map();
        st.refs.push(out);
        for (const pair of list(x)) {
          if (!Array.isArray(pair) || pair.length !== 2) this.bad('a malformed Map');
          out.set(this.dec(pair[0], mode, undefined, st, d), this.dec(pair[1], mode, undefined, st, d));
        }
        return out;
      }
      case 's': {
        const out = new Set();
        st.refs.push(out);
        for (const i of list(x)) out.add(this.dec(i, mode, undefined, st, d));
        return out;
      }
      case 'r':
        if (!Number.isSafeInteger(x) || x < 0 || x >= st.refs.length) this.bad('a reference to nothing');
        return st.refs[x];
      case 'n':
        if (x === 'NaN') return NaN;
        if (x === 'Infinity') return Infinity;
        if (x === '-Infinity') return -Infinity;
        if (x === '-0') return -0;
        return this.bad('a malformed number');
      case 'u':
        return undefined;
      case 'bi':
        if (typeof x !== 'string' || x.length > 10000 || !/^-?[0-9]+$/.test(x)) this.bad('a malformed bigint');
        return BigInt(x);
      case 'dt': {
        const t = this.dec(x, mode, undefined, st, d);
        if (typeof t !== 'number') this.bad('a malformed Date');
        return new Date(t);
      }
      case 'b':
        if (typeof x !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(x)) this.bad('malformed bytes');
        return new Uint8Array(Buffer.from(x, 'base64'));
      case 'x':
        return this.excClass(x, 0, path);
      case 'cb': {
        const f = typeof x === 'string' ? this.callbacks.get(x) : undefined;
        if (f === undefined) this.bad('a judge function id it was never given');
        return f;
      }
      default:
        return this.bad('an unknown value tag');
    }
  }

  excClass(desc, depth, path) {
    if (desc === null || typeof desc !== 'object' || Array.isArray(desc) || depth > 16) this.bad('a malformed error class');
    if ('b' in desc) {
      if (Object.keys(desc).length !== 1 || typeof desc.b !== 'string') this.bad('a malformed error class');
      return BUILTIN_ERRORS.get(desc.b) ?? Error; // a fixed table: never a lookup by the worker's name
    }
    const { n, h, base } = desc;
    if (Object.keys(desc).length !== 3 || typeof n !== 'string' || n.length > 100 || typeof h !== 'string' || !HID.test(h)) this.bad('a malformed error class');
    const Base = this.excClass(base, depth + 1);
    const name = safeName(n, 'WorkspaceError');
    const key = `${name}|${this.excKey(Base)}`;
    let Cls = this.excClasses.get(key);
    if (!Cls) {
      if (this.excClasses.size > 10_000) this.bad('too many error classes');
      Cls = { [name]: class extends Base {} }[name];
      Object.defineProperty(Cls.prototype, 'name', { value: name, writable: true, configurable: true, enumerable: false });
      this.excClasses.set(key, Cls);
    }
    this.excHandles.set(Cls, { gen: this.gen, id: h });
    if (path) Cls.sandgymPath = path;
    return Cls;
  }

  excKey(Cls) {
    if (BUILTIN_ERROR_CLASSES.has(Cls)) return Cls.name;
    for (const [k, c] of this.excClasses) if (c === Cls) return `(${k})`;
    return '?';
  }

  exception(desc, mode) {
    if (desc === null || typeof desc !== 'object' || Array.isArray(desc)) this.bad('a malformed exception');
    if ('jerr' in desc) {
      const e = typeof desc.jerr === 'string' ? this.judgeErrors.get(desc.jerr) : undefined;
      if (e === undefined) this.bad('a judge error id it was never given');
      return e;
    }
    if ('thrown' in desc) return remote(new WorkspaceThrow(this.dec(desc.thrown, mode)));
    const Cls = this.excClass(desc.cls, 0);
    const message = typeof desc.message === 'string' ? desc.message.slice(0, 2000) : '';
    const e = Cls === AggregateError ? new AggregateError([], message) : new Cls(message);
    return remote(e);
  }
}

const MANY = Symbol('many');
const client = new Client();
process.on('exit', () => client.stop());

// ---- the two views of the workspace's files (issue 30 item 2; docs/TASKS.md "Reading files: two views") --------
// Nothing the worker says is used to read a file. The SUBMISSION view is the judge's capture of the submitted tree,
// taken before any workspace code ran (a judge-only JSON file the grader writes; `submission` in the config): code
// that rewrites its files at import or patches the worker does not change it. The CURRENT view (what programs
// produced, `workspace.current`) is read by a FRESH reader process per read: no workspace code in it, file access as
// the agent uid (setpriv: effective uid the agent's, no capabilities), real uid the judge's so that the kernel makes
// it non-dumpable (no ptrace, /proc fds or memory for the agent). The agent can still kill or stop it: the read then
// fails (WorkspaceError / WorkspaceTimeout) and so does the test, never a pass.
const READER_SOURCE = `
const fs = require('node:fs');
const path = require('node:path');
let out;
const req = JSON.parse(fs.readFileSync(0, 'utf8'));
const ws = req.workspace, fn = req.fn, a = req.args;
const p = (x) => path.resolve(ws, x);
const uid = process.geteuid(), gid = process.getegid();
function executable(q) {
  const st = fs.statSync(q);
  if (!st.isFile()) return false;
  const bit = st.uid === uid ? 0o100 : st.gid === gid ? 0o010 : 0o001;
  return (st.mode & bit) !== 0;
}
function tree(root) {
  const res = [];
  const walk = (dir, prefix) => {
    for (const d of fs.readdirSync(dir, { withFileTypes: true })) {
      let isDir = d.isDirectory();
      if (d.isSymbolicLink()) { try { isDir = fs.statSync(path.join(dir, d.name)).isDirectory(); } catch { isDir = false; } }
      res.push(prefix + d.name + (isDir ? '/' : ''));
      if (res.length > 100000) throw Object.assign(new Error('more than 100000 entries'), { code: 'E2BIG' });
      if (d.isDirectory()) walk(path.join(dir, d.name), prefix + d.name + '/');
    }
  };
  walk(root, '');
  return res.sort();
}
function exists(q) { try { fs.statSync(q); return true; } catch { return false; } }
try {
  let v;
  if (fn === 'readFile') {
    const fd = fs.openSync(p(a[0]), 'r');
    try {
      const buf = Buffer.alloc(Number(a[1]) + 1);
      let n = 0;
      for (;;) { const k = fs.readSync(fd, buf, n, buf.length - n, null); if (k === 0 || (n += k) >= buf.length) break; }
      v = { b: buf.subarray(0, n).toString('base64') };
    } finally { fs.closeSync(fd); }
  } else if (fn === 'exists') v = exists(p(a[0]));
  else if (fn === 'isFile') v = exists(p(a[0])) && fs.statSync(p(a[0])).isFile();
  else if (fn === 'isDir') v = exists(p(a[0])) && fs.statSync(p(a[0])).isDirectory();
  else if (fn === 'listdir') v = fs.readdirSync(p(a[0])).sort();
  else if (fn === 'tree') v = tree(p(a[0]));
  else if (fn === 'stat') {
    const st = fs.lstatSync(p(a[0]));
    v = { size: st.size, mode: st.mode & 0o7777, mtime: st.mtimeMs / 1000, isFile: st.isFile(), isDir: st.isDirectory(), isSymlink: st.isSymbolicLink(),
      isExecutable: !st.isDirectory() && exists(p(a[0])) && executable(p(a[0])) };
  } else throw new Error('unknown reader op');
  out = { v };
} catch (e) {
  out = { e: typeof e?.code === 'string' ? e.code : 'EIO', m: String(e?.code ?? 'error') + ': ' + String(a[0]) };
}
process.stdout.write(JSON.stringify(out));
`;

/** A read the submission cannot answer: the path is absent, not a directory, a directory... (code like fs's). */
export class WorkspaceFileError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'WorkspaceFileError';
    this.code = code;
  }
}

const MAX_READER_OUTPUT = 64 << 20;

class Capture {
  /** The submission as captured before any workspace code ran: Map(relative path -> {type, mode, data}). */
  constructor(file, root) {
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    this.root = root;
    const entries = new Map([['', { type: 'directory', mode: 0o755 }]]);
    for (const e of doc.entries) {
      const rel = String(e.path).replace(/^\/+|\/+$/g, '');
      if (e.type === 'file') entries.set(rel, { type: 'file', mode: e.mode & 0o7777, data: Buffer.from(e.content ?? '', 'base64') });
      else if (e.type === 'symlink') entries.set(rel, { type: 'symlink', mode: e.mode & 0o7777, target: String(e.target ?? '') });
      else if (e.type === 'directory') entries.set(rel, { type: 'directory', mode: e.mode & 0o7777 });
      else throw new WorkspaceError(`submission capture: unknown entry type ${JSON.stringify(e.type)}`);
      const parts = rel.split('/');
      for (let i = 1; i < parts.length; i++) {
        const d = parts.slice(0, i).join('/');
        if (!entries.has(d)) entries.set(d, { type: 'directory', mode: 0o755 });
      }
    }
    this.entries = entries;
    this.children = new Map();
    for (const rel of entries.keys()) {
      if (rel === '') continue;
      const i = rel.lastIndexOf('/');
      const parent = i < 0 ? '' : rel.slice(0, i);
      if (!this.children.has(parent)) this.children.set(parent, []);
      this.children.get(parent).push(i < 0 ? rel : rel.slice(i + 1));
    }
    for (const v of this.children.values()) v.sort();
  }

  /** [relative path, entry] the path names in the submission, or [null, code] (a symlink leaving the workspace dangles). */
  resolve(rel, followLast = true) {
    const todo = rel.split('/').filter((x) => x && x !== '.');
    let done = [];
    let hops = 0;
    while (todo.length) {
      const name = todo.shift();
      if (name === '..') {
        if (!done.length) return [null, 'ENOENT'];
        done.pop();
        continue;
      }
      const parent = this.entries.get(done.join('/'));
      if (!parent || parent.type !== 'directory') return [null, 'ENOTDIR'];
      const cur = [...done, name].join('/');
      const e = this.entries.get(cur);
      if (!e) return [null, 'ENOENT'];
      if (e.type === 'symlink' && (todo.length || followLast)) {
        if (++hops > 40) return [null, 'ELOOP'];
        let t = e.target;
        if (t.startsWith('/')) {
          if (t !== this.root && !t.startsWith(`${this.root}/`)) return [null, 'ENOENT'];
          done = [];
          t = t.slice(this.root.length);
        }
        todo.unshift(...t.split('/').filter((x) => x && x !== '.'));
        continue;
      }
      done.push(name);
    }
    const r = done.join('/');
    const e = this.entries.get(r);
    return e ? [r, e] : [null, 'ENOENT'];
  }

  call(fn, rel, extra) {
    const fail = (code) => {
      throw new WorkspaceFileError(code, `${code}: ${rel}`);
    };
    if (fn === 'exists') return this.resolve(rel)[0] !== null;
    if (fn === 'isFile' || fn === 'isDir') {
      const [r, e] = this.resolve(rel);
      return r !== null && e.type === (fn === 'isFile' ? 'file' : 'directory');
    }
    if (fn === 'stat') {
      const [r, e] = this.resolve(rel, false);
      if (r === null) fail(e);
      const [t, te] = this.resolve(rel);
      return {
        size: e.type === 'file' ? e.data.length : e.type === 'symlink' ? Buffer.byteLength(e.target) : 0,
        mode: e.type === 'symlink' ? 0o777 : e.mode,
        // Modification times are not part of the submission (the grading copy does not keep them).
        mtime: 0,
        isFile: e.type === 'file',
        isDir: e.type === 'directory',
        isSymlink: e.type === 'symlink',
        isExecutable: t !== null && te.type === 'file' && (te.mode & 0o100) !== 0,
      };
    }
    const [r, e] = this.resolve(rel);
    if (r === null) fail(e);
    if (fn === 'readFile') {
      if (e.type === 'directory') fail('EISDIR');
      return new Uint8Array(e.data.subarray(0, Number(extra) + 1));
    }
    if (e.type !== 'directory') fail('ENOTDIR');
    if (fn === 'listdir') return [...(this.children.get(r) ?? [])];
    if (fn === 'tree') {
      const out = [];
      const stack = [[r, '']];
      while (stack.length) {
        const [d, prefix] = stack.pop();
        for (const name of this.children.get(d) ?? []) {
          const child = d ? `${d}/${name}` : name;
          const [cr, ce] = this.resolve(child);
          if (cr !== null && ce.type === 'directory') {
            out.push(`${prefix}${name}/`);
            // Like the reader's walk: symlinks to directories are listed, not entered.
            if (this.entries.get(child).type === 'directory') stack.push([child, `${prefix}${name}/`]);
          } else out.push(prefix + name);
        }
      }
      return out.sort();
    }
    throw new TypeError(fn);
  }
}

let capture;
function loadCapture() {
  if (capture === undefined) {
    const cfg = client.config();
    // No capture configured: only host stand-ins and direct uses of the harness (the grader always hands one).
    capture = cfg.submission ? new Capture(cfg.submission, cfg.workspace.replace(/\/+$/, '')) : null;
  }
  return capture;
}

/** The path relative to the workspace root when it names something inside it (lexically), else null. */
function workspaceRel(p) {
  const root = client.config().workspace.replace(/\/+$/, '');
  const full = posix.normalize(String(p).startsWith('/') ? String(p) : `${root}/${p}`).replace(/\/+$/, '');
  if (full === root) return '';
  return full.startsWith(`${root}/`) ? full.slice(root.length + 1) : null;
}

function freshRead(fn, p, extra) {
  const cfg = client.config();
  const req = JSON.stringify({ workspace: cfg.workspace, fn, args: extra === undefined ? [String(p)] : [String(p), Number(extra)] });
  let argv = [cfg.node, '-e', READER_SOURCE];
  if (!cfg.same_uid) {
    const uid = process.env.SANDGYM_AGENT_UID ?? '';
    if (!/^[0-9]+$/.test(uid) || Number(uid) === 0) throw new WorkspaceError('SANDGYM_AGENT_UID is not set: refusing to read workspace files as the judge');
    argv = ['setpriv', `--ruid=${process.getuid()}`, `--euid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', ...argv];
  }
  const timeout = Math.max(client.callTimeoutS(), 30) * 1000;
  const env = { PATH: cfg.path, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', NODE_OPTIONS: '', OPENSSL_CONF: '/dev/null' };
  const r = spawnSync(argv[0], argv.slice(1), { input: req, cwd: '/', env, timeout, maxBuffer: MAX_READER_OUTPUT, stdio: ['pipe', 'pipe', 'ignore'], killSignal: 'SIGKILL' });
  if (r.error && r.error.code === 'ETIMEDOUT') throw new WorkspaceTimeout(`reading ${p} took longer than ${timeout / 1000} s`);
  if (r.error || r.status !== 0) throw new WorkspaceError(`the file reader failed (${r.error ? r.error.message : `status ${r.status}`}) reading ${p}`);
  let msg;
  try {
    msg = JSON.parse(r.stdout.toString('utf8'));
  } catch {
    throw new WorkspaceError('the file reader sent a malformed answer');
  }
  if (msg.e !== undefined) throw new WorkspaceFileError(String(msg.e).slice(0, 40), String(msg.m).slice(0, 500));
  return fn === 'readFile' ? new Uint8Array(Buffer.from(msg.v.b, 'base64')) : msg.v;
}

/** Which view answers (docs/TASKS.md): the capture for paths inside the workspace, unless `current`; else a fresh reader. */
function readView(fn, p, extra, current) {
  const rel = current ? null : workspaceRel(p);
  if (rel !== null) {
    const cap = loadCapture();
    if (cap) return cap.call(fn, rel, extra);
  }
  return freshRead(fn, p, extra);
}

function fileApi(current) {
  const readFile = (p, maxBytes = 1 << 20) => {
    const data = readView('readFile', p, maxBytes, current);
    if (data.length > maxBytes) throw new WorkspaceError(`${p} is larger than ${maxBytes} bytes`);
    return data;
  };
  return {
    readFile,
    readText: (p, maxBytes = 1 << 20) => Buffer.from(readFile(p, maxBytes)).toString('utf8'),
    exists: (p) => readView('exists', p, undefined, current),
    isFile: (p) => readView('isFile', p, undefined, current),
    isDir: (p) => readView('isDir', p, undefined, current),
    listdir: (p = '.') => readView('listdir', p, undefined, current),
    tree: (p = '.') => readView('tree', p, undefined, current),
    stat: (p) => readView('stat', p, undefined, current),
  };
}


// ---- the API tests use ----------------------------------------------------------------------------------------------
function checkModulePath(p) {
  if (typeof p !== 'string' || !MODULE_PATH.test(p) || p.startsWith('/') || p.split('/').some((s) => s === '..' || s === '.' || s === '')) {
    throw new TypeError(`invalid workspace module path ${JSON.stringify(p)} (relative, inside the workspace, e.g. "cart/cart.mjs")`);
  }
}

function moduleHandle(p, mode) {
  checkModulePath(p);
  return makeHandle({ c: client, id: null, gen: -1, kind: 'obj', tname: 'module', path: [p] }, mode);
}

function target(h, what) {
  const s = PROXY_STATE.get(h);
  if (s) return { obj: client.hid(s) };
  const r = REF_STATE.get(h);
  if (r) return { obj: client.hid(r.state), path: r.path };
  throw new TypeError(`${what} needs a workspace handle`);
}

function callMany(mode, fn, argsList, opts = {}) {
  const t = target(fn, 'callMany');
  const lists = [...argsList].map((a) => {
    if (!Array.isArray(a)) throw new TypeError('callMany: each entry is an array of arguments');
    return client.enc(a);
  });
  const msg = { op: 'call_many', obj: t.obj, args_list: lists, return_exceptions: Boolean(opts.returnExceptions) };
  if (t.path) msg.path = t.path;
  const reply = client.request(msg, mode);
  if (reply.op !== 'return') return client.result(reply, mode);
  const v = reply.value;
  if (v === null || typeof v !== 'object' || Object.keys(v).length !== 1 || !Array.isArray(v.many) || v.many.length !== lists.length) client.bad('a malformed callMany result');
  const st = { n: 0, refs: [] };
  return v.many.map((item) => {
    if (item !== null && typeof item === 'object' && !Array.isArray(item) && Object.keys(item).length === 1 && 'exc' in item) {
      if (!opts.returnExceptions) client.bad('an exception result that was not asked for');
      return client.exception(item.exc, mode);
    }
    return client.dec(item, mode, undefined, st, 1);
  });
}

function valueOp(mode, op, fields, check, what) {
  const v = client.result(client.request({ op, ...fields }, mode), mode);
  if (!check(v)) client.bad(`a malformed ${what} answer`);
  return v;
}

function makeApi(mode) {
  const wrap = mode === 'async' ? (fn) => (...a) => settle(() => fn(...a)) : (fn) => fn;
  return {
    /** A workspace module (relative path, ESM or CommonJS) as a handle; lazy: nothing runs until it is used. */
    module: wrap((p) => moduleHandle(p, mode)),
    /** fn(...args) for each args array in ONE round trip; the first exception is thrown unless returnExceptions. */
    callMany: wrap((fn, argsList, opts) => callMany(mode, fn, argsList, opts)),
    /** Drains a workspace iterable in one round trip (RangeError in the worker past `limit` items). */
    list: wrap((h, limit = 100_000) => valueOp(mode, 'list', { value: client.enc(h), limit: Number(limit) }, (v) => Array.isArray(v) && v.length <= limit, 'list')),
    /** The workspace value's constructor name (typeof for primitives), evaluated in the worker. */
    typeName: wrap((h) => valueOp(mode, 'type_name', { value: client.enc(h) }, (v) => typeof v === 'string', 'typeName')),
    /** `value instanceof cls`, evaluated in the worker. */
    isinstance: wrap((h, cls) => valueOp(mode, 'isinstance', { value: client.enc(h), cls: client.enc(cls) }, (v) => typeof v === 'boolean', 'isinstance')),
    /** String(h) in the worker, by value. */
    str: wrap((h) => valueOp(mode, 'str', { ...target(h, 'str') }, (v) => typeof v === 'string', 'str')),
    /** Object.keys(h) in the worker, by value. */
    keys: wrap((h) => valueOp(mode, 'keys', { value: client.enc(h) }, (v) => Array.isArray(v) && v.every((k) => typeof k === 'string'), 'keys')),
    /** One empty round trip (benchmarks). */
    ping: wrap(() => valueOp(mode, 'ping', {}, (v) => v === null, 'ping')),
    // File reads (docs/TASKS.md "Reading files: two views"): the submission as captured for workspace paths, a fresh
    // reader for others; `current`: the state now, always by a fresh reader. Never answered by the worker.
    ...Object.fromEntries(Object.entries(fileApi(false)).map(([k, f]) => [k, wrap(f)])),
    current: Object.fromEntries(Object.entries(fileApi(true)).map(([k, f]) => [k, wrap(f)])),
  };
}

export const workspace = {
  ...makeApi('async'),
  /** The same API without promises: every call returns its result (or throws) synchronously. */
  sync: makeApi('sync'),
  /** Runs fn with a per-round-trip deadline of `seconds` (default: the task's call_timeout_s). */
  withTimeout(seconds, fn) {
    const prev = client.timeoutOverride;
    client.timeoutOverride = Number(seconds);
    try {
      const r = fn();
      if (r && typeof r.then === 'function') return Promise.resolve(r).finally(() => (client.timeoutOverride = prev));
      client.timeoutOverride = prev;
      return r;
    } catch (e) {
      client.timeoutOverride = prev;
      throw e;
    }
  },
  /** Kills the worker now; the next use starts a fresh one (fresh module state). */
  restart() {
    client.stop();
  },
};

export default workspace;
