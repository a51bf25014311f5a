// The TypeScript client's automatic resume (PROTOCOL.md §5a) against a real server through a TCP proxy
// the test cuts: the client reconnects on its own, resumes, and its pending calls settle with the
// replies the server held (once each); requests made while it reconnects go out after the resume; when
// the grace period passes it fails the pending calls and the handles with RESUME_EXPIRED and says so.
// No sleeps stand in for "the server noticed": the test polls the server's own books.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, SandgymError, type ClientLogger, type ResumeInfo, type SandgymClient } from '../../clients/ts/src/index.js';
import { startServer, until, type TestServer } from './helpers/server.js';
import { TcpProxy } from './helpers/tcp-proxy.js';

class Log implements ClientLogger {
  readonly lines: string[] = [];
  info(m: string): void {
    this.lines.push(`info ${m}`);
  }
  warn(m: string): void {
    this.lines.push(`warn ${m}`);
  }
}

async function rejection(p: Promise<unknown>): Promise<SandgymError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof SandgymError) return e;
    throw e;
  }
  throw new Error('expected a SandgymError');
}

describe('TS client: automatic resume', () => {
  let server: TestServer;
  let proxy: TcpProxy;
  const clients: SandgymClient[] = [];
  beforeAll(async () => {
    server = await startServer({ resume_grace_ms: 60_000 });
    proxy = await TcpProxy.start(Number(new URL(server.url()).port));
  });
  afterEach(async () => {
    proxy.blocked = false;
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
  });

  async function client(log = new Log()): Promise<SandgymClient> {
    const c = await connect(proxy.url(server.url()), { logger: log });
    clients.push(c);
    return c;
  }

  it('a cut mid-step: the step resolves with its reply (once), the episode goes on, requests made meanwhile follow', async () => {
    const log = new Log();
    const c = await client(log);
    const resumed: ResumeInfo[] = [];
    c.on('resumed', (i) => resumed.push(i));
    const slow = await c.make('test/slow-v0', { delay_ms: 1500 });
    const counter = await c.make<number, number>('test/counter-v0');
    await slow.reset();
    await counter.reset();
    expect((await counter.step(1)).observation).toBe(1);
    const running = slow.step(0);
    await c.ping(); // the step was received before the ping was answered
    proxy.cut();
    await until(() => server.core.resume.detached.size === 1 || resumed.length > 0, 10_000, 'the server to notice the drop');
    // Made while the client reconnects: waits, then goes out after the resume.
    const meanwhile = counter.step(1);
    const r = await running;
    expect(r).toMatchObject({ reward: 0, terminated: false });
    expect((await meanwhile).observation).toBe(2);
    expect((await counter.step(1)).observation).toBe(3);
    expect(resumed).toHaveLength(1);
    expect(new Set(resumed[0]?.sessions)).toEqual(new Set([slow.session, counter.session]));
    expect(resumed[0]?.lost).toEqual([]);
    expect(c.closed).toBe(false);
    expect(log.lines.some((l) => l.startsWith('warn') && l.includes('reconnecting to resume'))).toBe(true);
    expect(log.lines.some((l) => l.startsWith('info') && l.includes('resumed 2 session(s)'))).toBe(true);
  });

  it('a request the server never received is re-sent, and runs exactly once', async () => {
    const c = await client();
    const counter = await c.make<number, number>('test/counter-v0');
    await counter.reset();
    // Block the proxy first, so the next step dies with the socket before reaching the server.
    proxy.cut();
    proxy.blocked = true;
    const step = counter.step(1);
    await until(() => c.resuming, 10_000, 'the client to start reconnecting');
    proxy.blocked = false;
    expect((await step).observation).toBe(1);
    // Exactly once: the next step counts from 1, not from 2.
    expect((await counter.step(1)).observation).toBe(2);
  });

  it('the server closed the sessions while the client was away: pending calls and handles fail with RESUME_EXPIRED; the client works on', async () => {
    // The server closes them before the grace period ends, deterministically: the replies held for the
    // resume pass max_queued_requests (1) when the second slow step finishes.
    const small = await startServer({ resume_grace_ms: 60_000, max_queued_requests: 1 });
    const p2 = await TcpProxy.start(Number(new URL(small.url()).port));
    try {
      const log = new Log();
      const c = await connect(p2.url(small.url()), { logger: log });
      const failed: SandgymError[] = [];
      c.on('resume_failed', (e) => failed.push(e));
      const a = await c.make('test/slow-v0', { delay_ms: 3000 });
      const b = await c.make('test/slow-v0', { delay_ms: 3000 });
      await a.reset();
      await b.reset();
      const pa = a.step(0);
      const pb = b.step(0);
      await c.ping();
      p2.blocked = true;
      p2.cut();
      await until(() => small.sessionCount() === 0, 30_000, 'the held replies to overflow and close the sessions');
      p2.blocked = false;
      for (const pending of [pa, pb]) {
        const e = await rejection(pending);
        expect(e).toMatchObject({ code: 'RESUME_EXPIRED', retryable: false });
        expect(new Set(e.details?.sessions as string[])).toEqual(new Set([a.session, b.session]));
      }
      expect((await rejection(a.step(0))).code).toBe('RESUME_EXPIRED');
      expect(failed).toHaveLength(1);
      expect(log.lines.some((l) => l.startsWith('warn') && l.includes('cannot resume'))).toBe(true);
      // The new connection is fine for new sessions.
      expect(c.closed).toBe(false);
      const again = await c.make('test/counter-v0');
      await again.reset();
      await c.close();
    } finally {
      await p2.close();
      await small.stop();
    }
  });

  it('unreachable for the whole grace period: the client gives up, pending calls fail with RESUME_EXPIRED, it is closed', async () => {
    const short = await startServer({ resume_grace_ms: 400 });
    const p2 = await TcpProxy.start(Number(new URL(short.url()).port));
    try {
      const log = new Log();
      const c = await connect(p2.url(short.url()), { logger: log });
      const s = await c.make('test/counter-v0');
      await s.reset();
      p2.blocked = true;
      p2.cut();
      const e = await rejection(s.step(1));
      expect(e).toMatchObject({ code: 'RESUME_EXPIRED' });
      expect(e.message).toContain('grace period of 400 ms');
      await c.whenClosed();
      expect(c.closed).toBe(true);
      expect((await rejection(s.step(1))).code).toBe('RESUME_EXPIRED');
      expect(log.lines.some((l) => l.startsWith('warn') && l.includes('session(s) lost'))).toBe(true);
      await until(() => short.sessionCount() === 0, 10_000, 'the server to close the session');
    } finally {
      await p2.close();
      await short.stop();
    }
  });

  it('reconnect: false: a drop fails the pending calls at once with CONNECTION_CLOSED', async () => {
    const c = await connect(proxy.url(server.url()), { reconnect: false, logger: new Log() });
    clients.push(c);
    const s = await c.make('test/slow-v0', { delay_ms: 5000 });
    await s.reset();
    const pending = s.step(0);
    await c.ping();
    proxy.cut();
    expect((await rejection(pending)).code).toBe('CONNECTION_CLOSED');
    expect(c.closed).toBe(true);
  });

  it('close() during a reconnect stops it and fails what waits', async () => {
    const c = await client();
    const s = await c.make('test/counter-v0');
    await s.reset();
    proxy.blocked = true;
    proxy.cut();
    await until(() => c.resuming, 10_000, 'reconnecting');
    const waiting = s.step(1);
    await c.close();
    expect((await rejection(waiting)).code).toBe('CONNECTION_CLOSED');
  });
});
