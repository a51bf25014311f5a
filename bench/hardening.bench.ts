// What a hostile client costs the server (issue 13), measured against a real `sandgym serve` process:
//   1. N unauthenticated connections each sending an unfinished fragmented message of FRAG_MB MB:
//      the server's RSS growth while they are open, how long they stay open, and an authenticated
//      client's ping latency meanwhile;
//   2. K deeply nested frames of DEEP_MB MB sent by an authenticated client: server CPU seconds, RSS
//      growth, and ping latency meanwhile (pre-auth the budget refuses them after 64 KiB anyway);
//   3. Q steps of STEP_MB MB pipelined behind a slow step: RSS growth;
//   4. close while a step runs: how long the close reply takes.
// Usage: npx tsx bench/hardening.bench.ts [repo dir, default: this checkout]
//   Env: N (50), FRAG_MB (15), K (6), DEEP_MB (15), Q (100), STEP_MB (4), C (200), ONLY (scenario names).
// The repo dir lets the same script measure an older checkout (e.g. a `git worktree` of the commit
// before the hardening) for the before/after figures in BENCHMARKS.md.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import WebSocket from 'ws';

const repo = resolve(process.argv[2] ?? '.');
const N = Number(process.env.N ?? 50);
const FRAG_MB = Number(process.env.FRAG_MB ?? 15);
const K = Number(process.env.K ?? 6);
const DEEP_MB = Number(process.env.DEEP_MB ?? 15);
const Q = Number(process.env.Q ?? 100);
const STEP_MB = Number(process.env.STEP_MB ?? 4);
const TOKEN = 'bench-token';
const MB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** utime + stime of a process, seconds. */
function cpuS(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

async function startServer(): Promise<{ pid: number; url: string; stop: () => void }> {
  const child = spawn(
    process.execPath,
    [`${repo}/bin/sandgym.js`, 'serve', '--driver', 'none', '--fixtures', '--port', '0', '--token', TOKEN, '--log-level', 'warn'],
    {
      cwd: repo,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  child.stdout!.resume();
  let out = '';
  const url = await new Promise<string>((res, rej) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (ws:\/\/\S+)/.exec(out);
      if (m) res(m[1]!);
      if (out.length > 4096) out = out.slice(-1024);
    });
    child.on('exit', (c) => rej(new Error(`server exited ${c}`)));
  });
  return { pid: child.pid!, url, stop: () => child.kill('SIGKILL') };
}

let nextId = 1;
function request(ws: WebSocket, frame: Record<string, unknown>, timeoutMs = 120_000): Promise<Record<string, any>> {
  const id = nextId++;
  return new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`no reply to ${String(frame.type)} within ${timeoutMs} ms`)), timeoutMs);
    const on = (raw: Buffer) => {
      const m = JSON.parse(raw.toString()) as Record<string, any>;
      if (m.id !== id) return;
      clearTimeout(timer);
      ws.off('message', on);
      res(m);
    };
    ws.on('message', on);
    ws.send(JSON.stringify({ id, ...frame }));
  });
}

async function openWs(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { maxPayload: 1 << 30 });
  await new Promise<void>((res, rej) => {
    ws.once('open', () => res());
    ws.once('error', rej);
  });
  return ws;
}

async function authed(url: string): Promise<WebSocket> {
  const ws = await openWs(url);
  const r = await request(ws, { type: 'hello', versions: [2], client: { name: 'bench', version: '0' }, token: TOKEN });
  if (r.type !== 'result') throw new Error(`hello: ${JSON.stringify(r)}`);
  return ws;
}

/** Pings every 50 ms until stopped; returns the latencies (ms). */
function pinger(ws: WebSocket): { stop: () => Promise<number[]> } {
  const lat: number[] = [];
  let on = true;
  const loop = (async () => {
    while (on) {
      const t0 = performance.now();
      await request(ws, { type: 'ping' });
      lat.push(performance.now() - t0);
      await sleep(50);
    }
  })();
  return {
    stop: async () => {
      on = false;
      await loop;
      return lat;
    },
  };
}

function summary(lat: number[]): string {
  const s = [...lat].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!.toFixed(1);
  return `ping p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${s[s.length - 1]!.toFixed(1)} ms (n=${s.length})`;
}

async function preAuthFragments(url: string, pid: number): Promise<void> {
  const control = await authed(url);
  const rss0 = rssMb(pid);
  const p = pinger(control);
  const conns = await Promise.all(Array.from({ length: N }, () => openWs(url)));
  let open = N;
  const closedAt: number[] = [];
  const t0 = Date.now();
  for (const ws of conns) ws.on('close', () => (open--, closedAt.push(Date.now() - t0)));
  const chunk = Buffer.alloc(MB, 0x61);
  await Promise.all(
    conns.map(async (ws) => {
      for (let i = 0; i < FRAG_MB && ws.readyState === WebSocket.OPEN; i++) {
        await new Promise<void>((res) => ws.send(chunk, { fin: false, binary: false }, () => res()));
      }
    }),
  );
  await sleep(3000);
  const rss1 = rssMb(pid);
  const lat = await p.stop();
  console.log(
    `pre-auth: ${N} connections x unfinished ${FRAG_MB} MB fragmented message: server RSS +${(rss1 - rss0).toFixed(0)} MB after 3 s; ` +
      `${open} still open${closedAt.length ? `, last closed after ${Math.max(...closedAt)} ms` : ''}; ${summary(lat)}`,
  );
  for (const ws of conns) ws.terminate();
  control.terminate();
  await sleep(500);
}

async function deepFrames(url: string, pid: number): Promise<void> {
  const attacker = await authed(url);
  const control = await authed(url);
  const half = Math.floor((DEEP_MB * MB) / 2) - 20;
  const frame = `{"id":9,"type":"ping","t":${'['.repeat(half)}${']'.repeat(half)}}`;
  const rss0 = rssMb(pid);
  const cpu0 = cpuS(pid);
  const p = pinger(control);
  const t0 = performance.now();
  let replies = 0;
  let peakRss = rss0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(pid))), 50);
  const done = new Promise<void>((res) => {
    attacker.on('message', () => {
      if (++replies === K) res();
    });
  });
  for (let i = 0; i < K; i++) attacker.send(frame);
  await done;
  const wall = performance.now() - t0;
  clearInterval(sampler);
  const cpu = cpuS(pid) - cpu0;
  const lat = await p.stop();
  console.log(
    `deep frames: ${K} x ${DEEP_MB} MB nested arrays (authenticated): server CPU ${cpu.toFixed(2)} s, all answered in ${wall.toFixed(0)} ms, peak RSS +${(peakRss - rss0).toFixed(0)} MB; ${summary(lat)}`,
  );
  attacker.terminate();
  control.terminate();
  await sleep(500);
}

async function queuedSteps(url: string, pid: number): Promise<void> {
  const ws = await authed(url);
  const made = await request(ws, { type: 'make', env_id: 'test/slow-v0', kwargs: { delay_ms: 20_000 } });
  const session = made.result.session as string;
  await request(ws, { type: 'reset', session });
  const rss0 = rssMb(pid);
  // The running step, then Q steps padded to STEP_MB through an invalid-for-the-space action: each
  // frame is held whole while it waits (its action is checked only when it runs).
  ws.send(JSON.stringify({ id: 500_000, type: 'step', session, action: 0 }));
  const pad = 'x'.repeat(STEP_MB * MB);
  let capacity = 0;
  ws.on('message', (raw: Buffer) => {
    if (raw.toString().includes('"CAPACITY"')) capacity++;
  });
  for (let i = 0; i < Q; i++) ws.send(JSON.stringify({ id: 600_000 + i, type: 'step', session, action: pad }));
  await sleep(10_000);
  const rss1 = rssMb(pid);
  console.log(
    `queue: ${Q} x ${STEP_MB} MB steps behind a 20 s step: server RSS +${(rss1 - rss0).toFixed(0)} MB after 10 s, ${capacity} answered CAPACITY at once`,
  );
  const t0 = performance.now();
  const closed = await request(ws, { type: 'close', session }, 60_000).catch((e: Error) => ({ error: e.message }));
  console.log(`close behind the queue: answered in ${(performance.now() - t0).toFixed(0)} ms (${JSON.stringify(closed).slice(0, 80)})`);
  ws.terminate();
  await sleep(500);
}

async function closeRunning(url: string, _pid: number): Promise<void> {
  const ws = await authed(url);
  const made = await request(ws, { type: 'make', env_id: 'test/slow-v0', kwargs: { delay_ms: 20_000 } });
  const session = made.result.session as string;
  await request(ws, { type: 'reset', session });
  ws.send(JSON.stringify({ id: 700_000, type: 'step', session, action: 0 }));
  await sleep(200);
  const t0 = performance.now();
  await request(ws, { type: 'close', session }, 60_000);
  console.log(`close while a 20 s step runs (nothing queued): answered in ${(performance.now() - t0).toFixed(0)} ms`);
  ws.terminate();
}

/** Pre-auth cost per connection (idle, no hello) and per frame (a deep 60 KB frame, the most one
 *  unauthenticated connection can send within the 64 KiB budget). */
async function preAuthUnitCost(url: string, pid: number): Promise<void> {
  const C = Number(process.env.C ?? 200);
  const rss0 = rssMb(pid);
  const conns = await Promise.all(Array.from({ length: C }, () => openWs(url)));
  await sleep(2000);
  const rss1 = rssMb(pid);
  const half = 30 * 1024;
  const frame = `{"id":1,"type":"ping","t":${'['.repeat(half)}${']'.repeat(half)}}`;
  const cpu0 = cpuS(pid);
  let answered = 0;
  const done = new Promise<void>((res) =>
    conns.forEach((ws) =>
      ws.once('message', () => {
        if (++answered === C) res();
      }),
    ),
  );
  for (const ws of conns) ws.send(frame);
  await Promise.race([done, sleep(30_000)]);
  const cpu = cpuS(pid) - cpu0;
  console.log(
    `pre-auth unit cost: ${C} idle unauthenticated connections: +${(((rss1 - rss0) * 1024) / C).toFixed(0)} KB RSS each; ` +
      `one 60 KB nested frame each (${answered} answered): ${((cpu * 1e6) / C).toFixed(0)} µs server CPU per frame`,
  );
  for (const ws of conns) ws.terminate();
}

// A fresh server per scenario, so one scenario's garbage does not show in the next one's RSS.
const SCENARIOS = [preAuthUnitCost, preAuthFragments, deepFrames, queuedSteps, closeRunning];
// ONLY=name1,name2 runs a subset (function names).
const only = process.env.ONLY?.split(',');
for (const scenario of SCENARIOS.filter((f) => !only || only.includes(f.name))) {
  const server = await startServer();
  try {
    await sleep(500);
    console.log(`[${scenario.name}] server ${repo} pid ${server.pid}, RSS ${rssMb(server.pid).toFixed(0)} MB at start`);
    await scenario(server.url, server.pid);
  } finally {
    server.stop();
  }
}
