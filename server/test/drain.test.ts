// Graceful drain on SIGTERM (`serve --drain-grace-ms`, config drain_grace_ms; docs/DEPLOY.md): a real
// server process over a real socket. While draining the server is not ready, refuses new connections
// (503 SHUTTING_DOWN), makes and resets (CAPACITY, details.limit 'draining'), tells its clients
// (`shutdown` event with grace_ms), lets the running episode go on, and exits 0 once it ends or the
// grace is over, closing what is left with SHUTTING_DOWN / 1001.
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { spawnServer, type SpawnedServer } from '../../test/helpers/server.js';
import { RawSocket } from '../../test/helpers/raw-socket.js';

const servers: SpawnedServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close('SIGKILL');
});

async function start(args: string[]): Promise<SpawnedServer> {
  // A loaded machine can take a while to compile the sources at start (tsx): wait for the listening line.
  const s = await spawnServer(['--fixtures', '--log-level', 'info', '--log-format', 'json', ...args], { startTimeoutMs: 180_000 });
  servers.push(s);
  return s;
}

/** An upgrade the server refuses over HTTP: its status and JSON body. */
function refusedUpgrade(url: string): Promise<{ status: number; body: { error: { code: string } } }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => {
      ws.terminate();
      reject(new Error('upgrade was accepted'));
    });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    ws.once('error', () => undefined);
  });
}

const httpOf = (s: SpawnedServer) => `http://127.0.0.1:${s.port}`;

/** Messages until one matches (events and replies interleave); fails on close. */
async function until(sock: RawSocket, pred: (m: any) => boolean, timeoutMs = 30_000): Promise<any> {
  for (;;) {
    const m = await sock.nextMessage(timeoutMs);
    if (pred(m)) return m;
  }
}

let nextId = 10;
async function call(sock: RawSocket, type: string, fields: Record<string, unknown>): Promise<any> {
  const id = nextId++;
  sock.send({ id, type, ...fields }, 'json');
  return until(sock, (m) => m.id === id);
}

async function open(s: SpawnedServer): Promise<RawSocket> {
  const sock = await RawSocket.open(s.url);
  await sock.hello('json');
  return sock;
}

async function counterSession(sock: RawSocket): Promise<string> {
  const made = await call(sock, 'make', { env_id: 'test/counter-v0' });
  expect(made.type, JSON.stringify(made)).toBe('result');
  const session = made.result.session as string;
  expect((await call(sock, 'reset', { session })).type).toBe('result');
  return session;
}

describe('SIGTERM with --drain-grace-ms', () => {
  it('stops taking work, lets the running episode finish, then closes the rest and exits 0', async () => {
    const s = await start(['--drain-grace-ms', '600000']);
    const sock = await open(s);
    const running = await counterSession(sock);
    expect((await call(sock, 'step', { session: running, action: 1 })).result.observation).toBe(1);
    // A session between episodes: it holds no running episode, so the drain does not wait for it.
    const between = await counterSession(sock);
    for (let i = 0; i < 3; i++) await call(sock, 'step', { session: between, action: 1 });
    expect((await fetch(`${httpOf(s)}/readyz`)).status).toBe(200);

    s.proc.kill('SIGTERM');
    const ev = await until(sock, (m) => m.type === 'event' && m.event === 'shutdown');
    expect(ev.details).toMatchObject({ code: 'SHUTTING_DOWN', grace_ms: 600000 });

    // Not ready (the Service stops routing here), still alive.
    const ready = await fetch(`${httpOf(s)}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'not_ready', reason: 'draining' });
    expect((await fetch(`${httpOf(s)}/healthz`)).status).toBe(200);
    // No new connection: refused before the upgrade with the typed error.
    const refused = await refusedUpgrade(s.url);
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('SHUTTING_DOWN');
    // No new session, no new episode: CAPACITY (retryable, the session survives).
    const make = await call(sock, 'make', { env_id: 'test/counter-v0' });
    expect(make.error).toMatchObject({ code: 'CAPACITY', details: { limit: 'draining' } });
    for (const session of [between, running]) {
      const reset = await call(sock, 'reset', { session });
      expect(reset.error).toMatchObject({ code: 'CAPACITY', details: { limit: 'draining' } });
    }

    // The running episode goes on (the refused reset did not end it)...
    expect((await call(sock, 'step', { session: running, action: 1 })).result.observation).toBe(2);
    expect(s.proc.exitCode).toBeNull();
    // ...to its end, and then the server closes the connection and exits.
    const last = await call(sock, 'step', { session: running, action: 1 });
    expect(last.result).toMatchObject({ observation: 3, terminated: true });
    const closed = await until(sock, () => false).catch(() => sock.closeInfo);
    expect(closed?.code).toBe(1001);
    expect(await s.exited).toBe(0);
    expect(s.output()).toContain('drained: every running episode finished');
  }, 400_000);

  it('closes the episodes still running when the grace is over (SHUTTING_DOWN, 1001), exit 0', async () => {
    const s = await start(['--drain-grace-ms', '300']);
    const sock = await open(s);
    const running = await counterSession(sock);
    await call(sock, 'step', { session: running, action: 1 });
    s.proc.kill('SIGTERM');
    await until(sock, (m) => m.type === 'event' && m.event === 'shutdown');
    // The client never finishes its episode: the grace (0.3 s) ends it.
    const gone = await until(sock, (m) => m.type === 'error' || (m.type === 'event' && m.event === 'session_closed'));
    expect(gone.error?.code ?? gone.details?.code).toBe('SHUTTING_DOWN');
    await until(sock, () => false).catch(() => undefined);
    expect(sock.closeInfo?.code).toBe(1001);
    expect(await s.exited).toBe(0);
    expect(s.output()).toContain('drain grace over');
  }, 400_000);

  it('a second SIGTERM during the drain closes at once', async () => {
    const s = await start(['--drain-grace-ms', '600000']);
    const sock = await open(s);
    const running = await counterSession(sock);
    await call(sock, 'step', { session: running, action: 1 });
    s.proc.kill('SIGTERM');
    await until(sock, (m) => m.type === 'event' && m.event === 'shutdown');
    s.proc.kill('SIGTERM');
    await until(sock, () => false).catch(() => undefined);
    expect(sock.closeInfo?.code).toBe(1001);
    expect(await s.exited).toBe(0);
  }, 400_000);

  it('without a grace SIGTERM closes at once, as before', async () => {
    const s = await start([]);
    const sock = await open(s);
    await counterSession(sock);
    s.proc.kill('SIGTERM');
    const ev = await until(sock, (m) => m.type === 'event' && m.event === 'shutdown');
    expect(ev.details.grace_ms).toBeUndefined();
    await until(sock, () => false).catch(() => undefined);
    expect(sock.closeInfo?.code).toBe(1001);
    expect(await s.exited).toBe(0);
  }, 400_000);

  it('refuses a malformed grace with a usage error naming it', async () => {
    for (const bad of ['-1', 'soon', '1e3', String(24 * 3600_000 + 1)]) {
      const r = await spawnServer(['--drain-grace-ms', bad], { startTimeoutMs: 180_000 }).then(
        (srv) => {
          servers.push(srv);
          return 'started';
        },
        (e: Error) => e.message,
      );
      expect(r, bad).toMatch(/drain-grace-ms/);
    }
  }, 400_000);
});
