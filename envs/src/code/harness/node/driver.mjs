// Judge-side driver thread of the node harness (a node:worker_threads Worker started by harness.mjs). It owns the
// workspace worker process (agent uid) and its pipes, so the test's main thread can wait for a reply with
// Atomics.wait (the synchronous API) while this thread's event loop does the I/O. It only moves bytes: it cuts the
// worker's output into length-prefixed frames (bounded), enforces the round trip's deadline, and reports the
// worker's death. It never parses a frame; the main thread does (harness.mjs), with bounded decoding.
//
// Rules enforced here, against a hostile worker:
//  - the worker may send exactly one frame per frame the judge sent (a reply, or a callback request): any byte
//    while nothing is pending is a protocol breach and the worker is killed;
//  - a frame announced larger than MAX_FRAME kills the worker;
//  - no frame before the deadline kills the worker (timeout);
//  - its whole process group dies with it.
import { spawn } from 'node:child_process';
import { workerData } from 'node:worker_threads';

const MAX_FRAME = 8 * 1024 * 1024;
const { port, sab } = workerData;
const signal = new Int32Array(sab);

let child = null;
let pending = false;
let dead = true;
let timer = null;
let chunks = [];
let buffered = 0;

function post(msg, transfer) {
  port.postMessage(msg, transfer);
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
}

function killGroup(c) {
  if (!c || c.pid === undefined) return;
  try {
    process.kill(-c.pid, 'SIGKILL');
  } catch {
    // already gone
  }
  try {
    c.kill('SIGKILL');
  } catch {
    // already gone
  }
}

function die(kind, message) {
  if (dead) return;
  dead = true;
  pending = false;
  clearTimeout(timer);
  timer = null;
  const c = child;
  child = null;
  killGroup(c);
  chunks = [];
  buffered = 0;
  post({ t: 'dead', kind, message });
}

function arm(deadline) {
  clearTimeout(timer);
  const ms = Math.max(0, deadline - Date.now());
  timer = setTimeout(() => die('timeout', 'timeout'), ms);
}

function onData(data) {
  if (dead) return;
  if (!pending) {
    die('protocol', 'workspace worker sent data while no call was pending');
    return;
  }
  chunks.push(data);
  buffered += data.length;
  if (buffered < 4) return;
  const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  chunks = [all];
  const n = all.readUInt32BE(0);
  if (n > MAX_FRAME) {
    die('protocol', `workspace worker announced a frame of ${n} bytes (limit ${MAX_FRAME})`);
    return;
  }
  if (all.length < 4 + n) return;
  if (all.length > 4 + n) {
    die('protocol', 'workspace worker sent more than one frame for one pending call');
    return;
  }
  chunks = [];
  buffered = 0;
  pending = false;
  clearTimeout(timer);
  timer = null;
  const frame = new Uint8Array(all.buffer.slice(all.byteOffset + 4, all.byteOffset + 4 + n));
  post({ t: 'frame', data: frame }, [frame.buffer]);
}

function start(m) {
  if (child) killGroup(child);
  dead = false;
  pending = true;
  chunks = [];
  buffered = 0;
  let c;
  try {
    c = spawn(m.argv[0], m.argv.slice(1), { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'], detached: true, env: m.env, cwd: m.cwd });
  } catch (e) {
    child = null;
    die('crashed', `cannot start the workspace worker: ${String(e && e.message)}`);
    return;
  }
  child = c;
  c.on('error', (e) => {
    if (child === c) die('crashed', `cannot start the workspace worker: ${String(e && e.message)}`);
  });
  c.on('exit', (code, sig) => {
    if (child === c) die('crashed', sig ? `workspace worker died: killed by signal ${sig}` : `workspace worker died: exited with status ${code}`);
  });
  c.stdio[3].on('error', () => {});
  c.stdio[4].on('error', () => {});
  c.stdio[4].on('data', (d) => {
    if (child === c) onData(d);
  });
  if (c.pid !== undefined) post({ t: 'pid', pid: c.pid });
  arm(m.deadline);
}

port.on('message', (m) => {
  if (m.t === 'start') start(m);
  else if (m.t === 'send') {
    if (dead || !child) return; // the death was already reported
    if (pending) {
      die('protocol', 'judge sent while a reply was pending');
      return;
    }
    pending = true;
    arm(m.deadline);
    const head = Buffer.alloc(4);
    head.writeUInt32BE(m.data.byteLength, 0);
    child.stdio[3].write(Buffer.concat([head, Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength)]));
  } else if (m.t === 'kill') {
    const c = child;
    child = null;
    dead = true;
    pending = false;
    clearTimeout(timer);
    killGroup(c);
  }
});
