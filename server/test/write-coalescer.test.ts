// The per-connection write coalescer: one socket write per event-loop turn, order kept, nothing lost
// on close, and a client that does not read cannot make the server buffer without bound.
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { OutputBudget, WriteCoalescer } from '../src/transport/write-coalescer.js';
import { RawClient } from './helpers/raw-client.js';
import { startServer, until, type TestServer } from './helpers/server.js';

interface Pair {
  server: WebSocket;
  /** The socket the server side was upgraded on: what the coalescer corks, and what ws writes to. */
  serverSocket: Socket;
  client: WebSocket;
  wss: WebSocketServer;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A bare ws server + client over loopback; returns the server-side socket. */
async function pair(): Promise<Pair> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const serverSide = new Promise<{ ws: WebSocket; socket: Socket }>((r) => wss.once('connection', (ws, req) => r({ ws, socket: req.socket })));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    client.once('open', () => resolve());
    client.once('error', reject);
  });
  const { ws: server, socket: serverSocket } = await serverSide;
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        client.terminate();
        for (const c of wss.clients) c.terminate();
        wss.close(() => r());
      }),
  );
  return { server, serverSocket, client, wss };
}

/**
 * Counts the writes the upgrade request's socket hands to the kernel (one _write or _writev call each).
 * Counting on that socket, not on ws's private one, also proves that it is the socket ws writes to.
 */
function countWrites(socket: Socket): () => number {
  const sock = socket as unknown as Record<string, (...a: unknown[]) => unknown>;
  let n = 0;
  for (const name of ['_write', '_writev'] as const) {
    const orig = sock[name]!;
    sock[name] = function (this: unknown, ...a: unknown[]) {
      n++;
      return orig.apply(this, a);
    };
  }
  return () => n;
}

function collect(ws: WebSocket): string[] {
  const got: string[] = [];
  ws.on('message', (d: Buffer) => got.push(d.toString()));
  return got;
}

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('write coalescer', () => {
  it('sends replies produced across promise hops of one turn in one write, in order', async () => {
    const { server, serverSocket, client } = await pair();
    const got = collect(client);
    const out = new WriteCoalescer(server, serverSocket);
    const writes = countWrites(serverSocket);
    // Like pipelined replies of one session: each one several awaits after the previous.
    await (async () => {
      for (let i = 0; i < 200; i++) {
        out.send(`r${i}`);
        await Promise.resolve();
        await Promise.resolve();
      }
    })();
    expect(writes()).toBe(0); // still held: the turn is not over
    await until(() => got.length === 200, 5000, 'all replies');
    expect(got).toEqual(Array.from({ length: 200 }, (_, i) => `r${i}`));
    expect(writes()).toBe(1);
    // The next turn is a new write; order is kept across turns.
    out.send('next');
    await until(() => got.length === 201, 5000, 'next reply');
    expect(got[200]).toBe('next');
    expect(writes()).toBe(2);
  });

  it('a lone reply leaves in the same event-loop iteration (no added timer delay)', async () => {
    const { server, serverSocket, client } = await pair();
    const got = collect(client);
    const out = new WriteCoalescer(server, serverSocket);
    const writes = countWrites(serverSocket);
    out.send('one');
    await tick(); // the flush is the next check phase
    expect(writes()).toBe(1);
    await until(() => got.length === 1, 5000, 'reply');
  });

  it('the last frame of a burst (more = false) takes the held ones with it at once, in one write, in order', async () => {
    const { server, serverSocket, client } = await pair();
    const got = collect(client);
    const out = new WriteCoalescer(server, serverSocket);
    const writes = countWrites(serverSocket);
    await (async () => {
      for (let i = 0; i < 50; i++) {
        out.send(`r${i}`, true);
        await Promise.resolve();
      }
    })();
    expect(writes()).toBe(0);
    out.send('last', false);
    // Written synchronously, not at the end of the turn, and the pending end-of-turn flush is gone.
    expect(writes()).toBe(1);
    expect(serverSocket.writableCorked).toBe(0);
    await tick();
    expect(writes()).toBe(1);
    await until(() => got.length === 51, 5000, 'all replies');
    expect(got).toEqual([...Array.from({ length: 50 }, (_, i) => `r${i}`), 'last']);
  });

  it('a lone frame with nothing held (more = false) is written at once: no cork, no end-of-turn wait', async () => {
    const { server, serverSocket, client } = await pair();
    const got = collect(client);
    const out = new WriteCoalescer(server, serverSocket);
    const writes = countWrites(serverSocket);
    out.send('one', false);
    expect(writes()).toBe(1);
    expect(serverSocket.writableCorked).toBe(0);
    out.send('two', false);
    expect(writes()).toBe(2);
    await until(() => got.length === 2, 5000, 'replies');
    expect(got).toEqual(['one', 'two']);
  });

  it('frames sent before close() in the same turn arrive before the close frame', async () => {
    const { server, serverSocket, client } = await pair();
    const got = collect(client);
    const closed = new Promise<number>((r) => client.once('close', (code) => r(code)));
    const out = new WriteCoalescer(server, serverSocket);
    for (let i = 0; i < 50; i++) out.send(`f${i}`);
    server.close(1000, 'bye');
    expect(await closed).toBe(1000);
    expect(got).toEqual(Array.from({ length: 50 }, (_, i) => `f${i}`));
    // After close nothing is written and nothing throws.
    expect(out.send('late')).toBe(false);
  });

  it('terminate while corked drops the held frames without throwing; later sends are no-ops', async () => {
    const { server, serverSocket, client } = await pair();
    const closed = new Promise<void>((r) => client.once('close', () => r()));
    const out = new WriteCoalescer(server, serverSocket);
    out.send('x');
    server.terminate();
    expect(out.send('y')).toBe(false);
    out.flush();
    await closed;
    await tick();
    expect(out.send('z')).toBe(false);
  });

  it('a client that does not read: reading pauses above the high-water mark, resumes on drain', async () => {
    const { server, serverSocket, client } = await pair();
    const out = new WriteCoalescer(server, serverSocket, { highWaterBytes: 256 * 1024, hardLimitBytes: 1 << 30 });
    const clientSock = (client as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    clientSock.pause(); // the client stops reading
    const frame = 'x'.repeat(64 * 1024);
    // Keep producing (a turn at a time) until the server stops reading from this client.
    for (let i = 0; i < 2000 && !out.paused; i++) {
      out.send(frame);
      if (i % 8 === 7) await tick();
    }
    expect(out.paused).toBe(true);
    expect(server.isPaused).toBe(true);
    const got = collect(client);
    clientSock.resume(); // the client reads again: the buffer drains and reading resumes
    await until(() => !out.paused, 10_000, 'resume after drain');
    expect(server.isPaused).toBe(false);
    expect(server.bufferedAmount).toBe(0);
    await until(() => got.length > 0, 5000, 'frames after resume');
  });

  it('one reply larger than the hard limit to a client that keeps up only pauses reads, it does not terminate', async () => {
    const { server, serverSocket, client } = await pair();
    let overflow = 0;
    const out = new WriteCoalescer(server, serverSocket, { highWaterBytes: 64 * 1024, hardLimitBytes: 256 * 1024, onOverflow: (b) => (overflow = b) });
    const got = collect(client);
    out.send('y'.repeat(1024 * 1024));
    expect(out.paused).toBe(true);
    await until(() => got.length === 1, 10_000, 'the large reply');
    await until(() => !out.paused, 5000, 'resume');
    expect(overflow).toBe(0);
    expect(out.send('after')).toBe(true);
    await until(() => got.length === 2, 5000, 'next reply');
  });

  it('a client that never reads: past the hard limit the connection is terminated, memory stays bounded', async () => {
    const { server, serverSocket, client } = await pair();
    const hard = 2 * 1024 * 1024;
    let overflow = 0;
    const out = new WriteCoalescer(server, serverSocket, { highWaterBytes: 256 * 1024, hardLimitBytes: hard, onOverflow: (b) => (overflow = b) });
    (client as unknown as { _socket: { pause(): void } })._socket.pause();
    const frame = 'x'.repeat(64 * 1024);
    let maxBuffered = 0;
    let sent = 0;
    // Up to 256 MiB offered; the server must refuse long before (kernel buffers + hard limit).
    for (; sent < 4096 && server.readyState === WebSocket.OPEN; sent++) {
      out.send(frame);
      maxBuffered = Math.max(maxBuffered, server.bufferedAmount);
      if (sent % 8 === 7) await tick();
    }
    expect(sent).toBeLessThan(4096);
    expect(overflow).toBeGreaterThan(hard);
    expect(maxBuffered).toBeLessThanOrEqual(hard + frame.length + 64);
    await until(() => server.readyState === WebSocket.CLOSED, 5000, 'server side closed');
    expect(out.send(frame)).toBe(false);
  });
});

describe('the server-wide output budget, per tenant', () => {
  /** A paused client fed 16 KiB frames (a turn now and then) until the server holds `atLeast` unsent. */
  async function fill(out: WriteCoalescer, server: WebSocket, atLeast: number, stop: () => boolean = () => false): Promise<void> {
    const frame = 'x'.repeat(16 * 1024);
    for (let i = 0; server.bufferedAmount < atLeast && !stop(); i++) {
      if (!out.send(frame)) return;
      if (i % 4 === 3) await tick();
    }
  }

  it("one tenant holding most of the budget gets its own slow readers cut off, never another tenant's", async () => {
    const hw = 256 * 1024;
    const budget = new OutputBudget(768 * 1024);
    const overflowed: string[] = [];
    const conn = async (tenant: string, name: string) => {
      const p = await pair();
      const out = new WriteCoalescer(p.server, p.serverSocket, {
        highWaterBytes: hw,
        hardLimitBytes: 1 << 30,
        budget,
        tenant: `conn:${name}`,
        onOverflow: () => overflowed.push(name),
      });
      out.setTenant(tenant); // as hello does: what it holds moves with it
      (p.client as unknown as { _socket: { pause(): void } })._socket.pause();
      return { ...p, out };
    };
    // Tenant a: four readers, each holding 200-216 KiB (below the high-water mark, so none is cut off
    // by its own sends): together past the 768 KiB limit.
    const as = await Promise.all([1, 2, 3, 4].map((i) => conn('a', `a${i}`)));
    for (const a of as) await fill(a.out, a.server, 200 * 1024);
    expect(budget.total).toBeGreaterThan(budget.limitBytes);
    expect(budget.of('a')).toBe(budget.total);
    expect([...budget.tenants.keys()]).toEqual(['a']);
    // Tenant b: one reader pushed past the high-water mark while the total is past the limit. It holds
    // less than an even share (half the total): reads pause, the connection stays.
    const b = await conn('b', 'b');
    await fill(b.out, b.server, hw + 32 * 1024, () => b.out.paused);
    expect(b.out.paused).toBe(true);
    expect(b.server.bufferedAmount).toBeGreaterThan(hw);
    expect(budget.total).toBeGreaterThan(budget.limitBytes);
    expect(budget.of('b')).toBeLessThan(budget.total / 2);
    expect(b.out.send('more')).toBe(true);
    expect(overflowed).toEqual([]);
    expect(budget.overflows).toBe(0);
    expect(b.server.readyState).toBe(WebSocket.OPEN);
    // A fifth reader of tenant a past the high-water mark: a holds more than an even share, so it goes.
    const a5 = await conn('a', 'a5');
    await fill(a5.out, a5.server, 4 * hw, () => a5.server.readyState !== WebSocket.OPEN);
    expect(overflowed).toEqual(['a5']);
    expect(budget.overflows).toBe(1);
    await until(() => a5.server.readyState === WebSocket.CLOSED, 5000, 'the fifth reader closed');
    // Its bytes left the budget with it; b is untouched and drains once its client reads.
    expect(budget.of('a')).toBe(as.reduce((n, a) => n + a.server.bufferedAmount, 0));
    const got = collect(b.client);
    (b.client as unknown as { _socket: { resume(): void } })._socket.resume();
    await until(() => !b.out.paused, 10_000, 'b resumes once its client reads');
    await until(() => got.includes('more'), 10_000, "b's last frame");
    expect(budget.of('b')).toBe(0);
  });
});

describe('write coalescer in the server', () => {
  let srv: TestServer;
  afterEach(async () => {
    await srv?.stop();
  });

  it('pipelined replies of many sessions arrive complete and in per-session order', async () => {
    srv = await startServer();
    for (const binary of [false, true]) {
      const c = await RawClient.connect(srv.url(), { binary });
      const sessions = await Promise.all(Array.from({ length: 4 }, () => c.make('test/noop-v0')));
      await Promise.all(sessions.map((s) => c.ok('reset', { session: s })));
      const replies = new Map<number, Promise<Record<string, any>>>();
      let id = 10_000;
      for (let i = 0; i < 100; i++) {
        for (const s of sessions) {
          replies.set(++id, c.waitFor(id));
          c.sendFrame({ id, type: 'step', session: s, action: 0 });
        }
      }
      const frames = await Promise.all(replies.values());
      expect(frames.every((f) => f.type === 'result')).toBe(true);
      // Replies of one session come back in request order.
      const order = new Map<number, number>();
      c.all.forEach((f, i) => order.set(f.id as number, i));
      const ids = [...replies.keys()];
      for (let k = 0; k < sessions.length; k++) {
        const mine = ids.filter((_, i) => i % sessions.length === k).map((x) => order.get(x)!);
        expect([...mine].sort((a, b) => a - b)).toEqual(mine);
      }
      c.ws.close();
    }
  });

  it('pipelined requests read in one chunk are answered in a few writes, not one per reply', async () => {
    srv = await startServer();
    for (const binary of [false, true]) {
      const c = await RawClient.connect(srv.url(), { binary });
      const sessions = await Promise.all(Array.from({ length: 4 }, () => c.make('test/noop-v0')));
      await Promise.all(sessions.map((s) => c.ok('reset', { session: s })));
      await c.ok('ping');
      const serverSocket = (srv.app.websocketServer.clients.values().next().value as unknown as { _socket: Socket })._socket;
      const writes = countWrites(serverSocket);
      // 400 steps and pings in one client write: the server reads them together and answers as a burst.
      const sock = (c.ws as unknown as { _socket: Socket })._socket;
      const waits: Array<Promise<Record<string, any>>> = [];
      sock.cork();
      for (let i = 0; i < 400; i++) {
        const id = 20_000 + i;
        waits.push(c.waitFor(id));
        c.sendFrame(i % 8 === 7 ? { id, type: 'ping' } : { id, type: 'step', session: sessions[i % 4], action: 0 });
      }
      sock.uncork();
      const frames = await Promise.all(waits);
      expect(frames.every((f) => f.type === 'result')).toBe(true);
      // One write per socket read in practice; the bound leaves room for a read split by a busy machine.
      expect(writes()).toBeLessThan(40);
      c.ws.close();
      await until(() => srv.app.websocketServer.clients.size === 0, 5000, 'connection closed');
    }
  });

  it("a reply is not held behind another session's slow request", async () => {
    srv = await startServer();
    const c = await RawClient.connect(srv.url());
    const slow = await c.make('test/slow-v0', { delay_ms: 60_000 });
    const fast = await c.make('test/noop-v0');
    await c.ok('reset', { session: slow });
    await c.ok('reset', { session: fast });
    const stuck = c.waitFor(900, 120_000);
    c.sendFrame({ id: 900, type: 'step', session: slow, action: 0 });
    // The slow step stays outstanding (a minute); the fast session's replies and a ping still arrive.
    for (let i = 0; i < 5; i++) expect((await c.ok('step', { session: fast, action: 0 })).reward).toBe(0);
    await c.ok('ping');
    expect(c.all.some((f) => f.id === 900)).toBe(false);
    await c.ok('close', { session: slow });
    expect((await stuck).type).toBe('error');
    c.ws.close();
  });

  it('a client that stops reading makes the server stop reading from it, and gets every reply once it reads again', async () => {
    srv = await startServer();
    const c = await RawClient.connect(srv.url());
    const one = JSON.stringify(await c.ok('list_envs')).length;
    const sock = (c.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    sock.pause();
    // Enough replies to exceed the kernel buffers and the 4 MiB high-water mark, well under the hard limit.
    const n = Math.ceil((24 * 1024 * 1024) / one);
    const waits: Array<Promise<Record<string, any>>> = [];
    for (let i = 0; i < n; i++) {
      waits.push(c.waitFor(100 + i, 60_000));
      c.sendFrame({ id: 100 + i, type: 'list_envs' });
    }
    const serverWs = () => [...srv.app.websocketServer.clients][0]!;
    await until(() => serverWs().isPaused, 20_000, 'server pauses reading');
    sock.resume();
    const frames = await Promise.all(waits);
    expect(frames.every((f) => f.type === 'result')).toBe(true);
    const ids = c.all.filter((f) => (f.id as number) >= 100).map((f) => f.id as number);
    expect(ids).toEqual(Array.from({ length: n }, (_, i) => 100 + i));
    await until(() => !serverWs().isPaused, 5000, 'server resumes reading');
    c.ws.close();
  }, 90_000);
});
