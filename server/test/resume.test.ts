// Session resume (PROTOCOL.md §5a) against a real server over real sockets: a client-side cut of the
// TCP connection (ws.terminate(): no close frame, the server sees 1006) mid-step, a resume from a new
// connection with the old token, the reply delivered once with its id, the episode continuing in the
// same session; the grace period closing the sessions; the typed refusals. No assertion depends on
// how fast this machine is: a drop is followed by polling the server's own books, never by a sleep.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSIONS } from '../../protocol/src/index.js';
import { RawClient, type Frame } from './helpers/raw-client.js';
import { startServer, until, type TestServer } from './helpers/server.js';

const HELLO = { versions: [...PROTOCOL_VERSIONS], client: { name: 'resume-test', version: '0' } };

/** Open + hello; returns the client and its resume token. */
async function open(server: TestServer, token?: string): Promise<{ c: RawClient; resumeToken: string }> {
  const c = await RawClient.open(server.url());
  const r = await c.request('hello', token ? { ...HELLO, token } : HELLO);
  if (r.type !== 'result') throw new Error(`hello failed: ${JSON.stringify(r)}`);
  return { c, resumeToken: r.result.resume_token as string };
}

/** Ids of the new connection start high so they never meet the old connection's (which the client owns). */
function highIds(c: RawClient, from = 100_000): void {
  (c as unknown as { nextId: number }).nextId = from;
}

/** Cuts the TCP connection from the client side, as a network failure would (no close frame). */
async function cut(c: RawClient): Promise<void> {
  c.ws.terminate();
  await c.closed;
}

/** The server has noticed the drop: the connection is detached with its sessions held. */
function detachedCount(server: TestServer): number {
  return server.core.resume.detached.size;
}

/** Sends a request with an explicit id (the caller keeps it to name it in `pending`). */
function sendWithId(c: RawClient, id: number, type: string, params: Frame): Promise<Frame> {
  const p = c.waitFor(id, 60_000);
  c.sendFrame({ id, type, ...params });
  return p;
}

describe('session resume: pure envs', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ resume_grace_ms: 60_000 });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('hello offers resume: a token, the grace period and the capability', async () => {
    const c = await RawClient.open(server.url());
    const r = await c.ok('hello', HELLO);
    expect(r.capabilities.resume).toBe(true);
    expect(r.limits.resume_grace_ms).toBe(60_000);
    expect(r.resume_token).toMatch(/^r_[A-Za-z0-9_-]{32}$/);
    const other = await RawClient.open(server.url());
    expect((await other.ok('hello', HELLO)).resume_token).not.toBe(r.resume_token);
    await c.close();
    await other.close();
  });

  it('a cut mid-step: the resumed connection gets the step reply once, with its id, and the episode continues', async () => {
    const { c: c1, resumeToken } = await open(server);
    const slow = await c1.make('test/slow-v0', { delay_ms: 1500 });
    const counter = await c1.make('test/counter-v0');
    await c1.ok('reset', { session: slow });
    await c1.ok('reset', { session: counter });
    expect((await c1.ok('step', { session: counter, action: 1 })).observation).toBe(1);
    // The step is received when the ping sent after it is answered (frames are handled in order).
    void sendWithId(c1, 50, 'step', { session: slow, action: 0 }).catch(() => undefined);
    await c1.ok('ping');
    await cut(c1);
    await until(() => detachedCount(server) === 1, 10_000, 'the server to detach the connection');
    expect(server.sessionCount()).toBe(2);

    const { c: c2 } = await open(server);
    highIds(c2);
    const all: Frame[] = c2.all;
    const reply = c2.waitFor(50, 30_000);
    const resumed = await c2.ok('resume', { token: resumeToken, pending: [50, 51] });
    expect(new Set(resumed.sessions)).toEqual(new Set([slow, counter]));
    // 51 was never sent: the client must send it again. 50 was received: its reply follows.
    expect(resumed.unseen).toEqual([51]);
    expect(resumed.lost).toEqual([]);
    expect(resumed.resume_token).toMatch(/^r_/);
    expect(resumed.resume_token).not.toBe(resumeToken);
    const r = await reply;
    expect(r).toMatchObject({ id: 50, type: 'result', result: { reward: 0, terminated: false } });
    // The counter's episode goes on where it was: 1 + 1.
    expect((await c2.ok('step', { session: counter, action: 1 })).observation).toBe(2);
    await c2.ok('ping');
    expect(all.filter((f) => f.id === 50)).toHaveLength(1);
    expect(detachedCount(server)).toBe(0);
    await c2.close();
    await until(() => server.sessionCount() === 0, 10_000, 'sessions closed after a normal close');
  });

  it('replies produced while detached are delivered in order after the resume result', async () => {
    const { c: c1, resumeToken } = await open(server);
    const s = await c1.make('test/slow-v0', { delay_ms: 300 });
    await c1.ok('reset', { session: s });
    const ids = [60, 61, 62, 63];
    for (const id of ids) void sendWithId(c1, id, 'step', { session: s, action: 0 }).catch(() => undefined);
    await c1.ok('ping');
    await cut(c1);
    await until(() => detachedCount(server) === 1, 10_000, 'detach');
    // Wait until every step has run, so all four replies are held (none can be in flight).
    await until(
      () => !(server.core.resume.detached.values().next().value as unknown as { replay: { inflight: Set<number> } }).replay.inflight.size,
      30_000,
      'steps done',
    );
    const { c: c2 } = await open(server);
    highIds(c2);
    // Awaited before the resume: the replies may arrive in the same read as its result.
    const replies = ids.map((id) => c2.waitFor(id, 10_000));
    const res = await c2.ok('resume', { token: resumeToken, pending: ids });
    expect(res).toMatchObject({ sessions: [s], unseen: [], lost: [] });
    const got = await Promise.all(replies);
    expect(got.map((f) => f.type)).toEqual(['result', 'result', 'result', 'result']);
    // Order on the wire is the order produced (the session's FIFO).
    const order = c2.all.filter((f) => typeof f.id === 'number' && ids.includes(f.id)).map((f) => f.id);
    expect(order).toEqual(ids);
    await c2.close();
  });

  it('a reply sent just before the drop and not received is replayed; one older than the window is lost, never re-run', async () => {
    const { c: c1, resumeToken } = await open(server);
    const s = await c1.make('test/counter-v0');
    // 300 answered requests: the first falls out of the replay window (256 replies).
    const first = 1000;
    const n = 300;
    const replies: Promise<Frame>[] = [];
    for (let i = 0; i < n; i++) replies.push(sendWithId(c1, first + i, 'close', { session: 'nope' }));
    await Promise.all(replies);
    await cut(c1);
    await until(() => detachedCount(server) === 1, 10_000, 'detach');
    const { c: c2 } = await open(server);
    highIds(c2);
    const last = first + n - 1;
    const replay = c2.waitFor(last, 10_000);
    const res = await c2.ok('resume', { token: resumeToken, pending: [first, last] });
    expect(res).toMatchObject({ sessions: [s], unseen: [], lost: [first] });
    expect(await replay).toMatchObject({ id: last, type: 'error', error: { code: 'UNKNOWN_SESSION' } });
    await c2.close();
  });

  it('a token is spent by the resume that takes it: a second one is RESUME_REFUSED, and the new token works', async () => {
    const { c: c1, resumeToken } = await open(server);
    const s = await c1.make('test/counter-v0');
    await cut(c1);
    await until(() => detachedCount(server) === 1, 10_000, 'detach');
    // Two resumes with the same token at once: exactly one gets the sessions.
    const [a, b] = await Promise.all([open(server), open(server)]);
    const [ra, rb] = await Promise.all([a.c.request('resume', { token: resumeToken }), b.c.request('resume', { token: resumeToken })]);
    const winner = ra.type === 'result' ? a : b;
    const [won, lost] = ra.type === 'result' ? [ra, rb] : [rb, ra];
    expect(won).toMatchObject({ type: 'result', result: { sessions: [s] } });
    expect(lost).toMatchObject({ type: 'error', error: { code: 'RESUME_REFUSED', retryable: false, scope: 'request' } });
    // Later still refused, and the loser's connection remains usable.
    const loser = winner === a ? b : a;
    expect((await loser.c.fails('resume', { token: resumeToken })).code).toBe('RESUME_REFUSED');
    await loser.c.ok('ping');
    // The winner's new token resumes it after another drop.
    await winner.c.ok('reset', { session: s });
    await cut(winner.c);
    await until(() => detachedCount(server) === 1, 10_000, 'detach');
    const { c: c3 } = await open(server);
    expect((await c3.ok('resume', { token: won.result.resume_token })).sessions).toEqual([s]);
    expect((await c3.ok('step', { session: s, action: 1 })).observation).toBe(1);
    await c3.close();
    await loser.c.close();
  });

  it('a resume while the old connection is still open takes the sessions and closes the old one (1000)', async () => {
    const { c: c1, resumeToken } = await open(server);
    const s = await c1.make('test/counter-v0');
    await c1.ok('reset', { session: s });
    const { c: c2 } = await open(server);
    expect((await c2.ok('resume', { token: resumeToken })).sessions).toEqual([s]);
    expect((await c1.closed).code).toBe(1000);
    expect((await c2.ok('step', { session: s, action: 1 })).observation).toBe(1);
    await c2.close();
  });

  it('refusals: own token, a connection that already holds sessions, unknown tokens; none spends the token', async () => {
    const { c: c1, resumeToken } = await open(server);
    expect(await c1.fails('resume', { token: resumeToken })).toMatchObject({ code: 'RESUME_REFUSED' });
    await c1.make('test/counter-v0');
    const { c: c2, resumeToken: t2 } = await open(server);
    await c2.make('test/counter-v0');
    expect(await c2.fails('resume', { token: resumeToken })).toMatchObject({
      code: 'RESUME_REFUSED',
      details: { reason: expect.stringContaining('already holds sessions') },
    });
    const { c: fresh } = await open(server);
    expect(await fresh.fails('resume', { token: `r_${randomBytes(24).toString('base64url')}` })).toMatchObject({
      code: 'RESUME_EXPIRED',
      retryable: false,
      scope: 'request',
    });
    // A token that was never issued, with the shape of one that was: same answer.
    expect(await fresh.fails('resume', { token: `${t2}x` })).toMatchObject({ code: 'RESUME_EXPIRED' });
    // c1's token still works after all that (and c1, still open, is closed by the resume).
    expect((await fresh.ok('resume', { token: resumeToken })).sessions).toHaveLength(1);
    expect((await c1.closed).code).toBe(1000);
    await Promise.all([c2.close(), fresh.close()]);
  });

  it('resume before hello is HANDSHAKE_REQUIRED, and a malformed resume is INVALID_MESSAGE with its id', async () => {
    const c = await RawClient.open(server.url());
    expect((await c.fails('resume', { token: 'r_x' })).code).toBe('HANDSHAKE_REQUIRED');
    await c.ok('hello', HELLO);
    expect(await c.fails('resume', { token: 7 })).toMatchObject({ code: 'INVALID_MESSAGE', details: { path: '/token' } });
    expect(await c.fails('resume', { token: 'r_x', pending: [-1] })).toMatchObject({ code: 'INVALID_MESSAGE' });
    expect(await c.fails('resume', { token: 'x'.repeat(10_000) })).toMatchObject({ code: 'INVALID_MESSAGE', details: { path: '/token' } });
    await c.close();
  });

  it('a flood of resumes with bad tokens is cheap and typed, and the connection keeps working', async () => {
    const { c } = await open(server);
    highIds(c, 10);
    const n = 5000;
    const t0 = performance.now();
    const replies = await Promise.all(Array.from({ length: n }, () => c.request('resume', { token: `r_${randomBytes(24).toString('base64url')}` })));
    const ms = performance.now() - t0;
    expect(replies.every((r) => r.type === 'error' && r.error.code === 'RESUME_EXPIRED')).toBe(true);
    await c.ok('ping');
    // The figure goes to the log of the run (BENCHMARKS.md quotes the bench, not this).
    console.log(`resume flood: ${n} bad-token resumes answered in ${ms.toFixed(0)} ms (${((ms * 1000) / n).toFixed(1)} µs each, round trips included)`);
    await c.close();
  });

  it('before hello, resume frames count against the pre-auth byte budget like any other', async () => {
    const budgetServer = await startServer({ resume_grace_ms: 60_000, handshake_max_bytes: 4096 });
    try {
      const c = await RawClient.open(budgetServer.url());
      for (let i = 0; i < 200 && c.ws.readyState === 1; i++) c.sendFrame({ id: i, type: 'resume', token: `r_${'a'.repeat(100)}` });
      expect((await c.closed).code).toBe(1009);
    } finally {
      await budgetServer.stop();
    }
  });

  it('a normal close (1000) is a goodbye: the sessions close at once, nothing is held', async () => {
    const { c, resumeToken } = await open(server);
    await c.make('test/counter-v0');
    await c.close();
    await until(() => server.sessionCount() === 0, 10_000, 'sessions closed');
    expect(detachedCount(server)).toBe(0);
    const { c: c2 } = await open(server);
    expect((await c2.fails('resume', { token: resumeToken })).code).toBe('RESUME_EXPIRED');
    await c2.close();
  });
});

describe('session resume: grace, limits, principals', () => {
  it('when the grace period passes the sessions are closed; a later resume is RESUME_EXPIRED naming them', async () => {
    const server = await startServer({ resume_grace_ms: 200 });
    try {
      const { c: c1, resumeToken } = await open(server);
      const s = await c1.make('test/counter-v0');
      await cut(c1);
      await until(() => server.sessionCount() === 0, 10_000, 'the grace period to close the session');
      expect(detachedCount(server)).toBe(0);
      const { c: c2 } = await open(server);
      const e = await c2.fails('resume', { token: resumeToken });
      expect(e).toMatchObject({ code: 'RESUME_EXPIRED', retryable: false, scope: 'request', details: { sessions: [s] } });
      expect(e.details.reason).toContain('grace period of 200 ms');
      await c2.ok('ping');
      await c2.close();
    } finally {
      await server.stop();
    }
  });

  it('replies held while detached past the queue limits close the sessions, and the resume says so', async () => {
    const server = await startServer({ resume_grace_ms: 60_000, max_queued_requests: 2 });
    try {
      const { c: c1, resumeToken } = await open(server);
      const sessions: string[] = [];
      for (let i = 0; i < 3; i++) sessions.push(await c1.make('test/slow-v0', { delay_ms: 3000 }));
      for (const s of sessions) await c1.ok('reset', { session: s });
      sessions.forEach((s, i) => void sendWithId(c1, 500 + i, 'step', { session: s, action: 0 }).catch(() => undefined));
      await c1.ok('ping');
      await cut(c1);
      // Three replies, room for two: the third closes everything.
      await until(() => server.sessionCount() === 0, 30_000, 'overflow to close the sessions');
      const { c: c2 } = await open(server);
      const e = await c2.fails('resume', { token: resumeToken, pending: [500, 501, 502] });
      expect(e).toMatchObject({ code: 'RESUME_EXPIRED' });
      expect(e.details.reason).toContain('max_queued_requests 2');
      expect(new Set(e.details.sessions)).toEqual(new Set(sessions));
      await c2.close();
    } finally {
      await server.stop();
    }
  });

  it('a token is bound to its principal: another auth token is RESUME_REFUSED and does not spend it', async () => {
    const server = await startServer({ resume_grace_ms: 60_000, tokens: ['alice-token', 'bob-token'] });
    try {
      const { c: c1, resumeToken } = await open(server, 'alice-token');
      const s = await c1.make('test/counter-v0');
      await cut(c1);
      await until(() => detachedCount(server) === 1, 10_000, 'detach');
      const { c: bob } = await open(server, 'bob-token');
      expect(await bob.fails('resume', { token: resumeToken })).toMatchObject({
        code: 'RESUME_REFUSED',
        details: { reason: expect.stringContaining('another principal') },
      });
      // Alice over the Authorization header instead of hello: same principal.
      const alice = await RawClient.open(server.url(), { headers: { authorization: 'Bearer alice-token' } });
      await alice.ok('hello', HELLO);
      expect((await alice.ok('resume', { token: resumeToken })).sessions).toEqual([s]);
      await Promise.all([bob.close(), alice.close()]);
    } finally {
      await server.stop();
    }
  });

  it('resume disabled (resume_grace_ms 0, the default): no token in hello, a drop closes the sessions, resume is RESUME_EXPIRED', async () => {
    const server = await startServer({});
    try {
      const c1 = await RawClient.open(server.url());
      const hello = await c1.ok('hello', HELLO);
      expect(hello.resume_token).toBeUndefined();
      expect(hello.capabilities.resume).toBe(false);
      await c1.make('test/counter-v0');
      await cut(c1);
      await until(() => server.sessionCount() === 0, 10_000, 'sessions closed on drop');
      const { c: c2 } = await open(server);
      expect(await c2.fails('resume', { token: 'r_x' })).toMatchObject({
        code: 'RESUME_EXPIRED',
        details: { reason: expect.stringContaining('does not offer resume') },
      });
      await c2.close();
    } finally {
      await server.stop();
    }
  });

  it('shutdown closes the sessions of detached connections', async () => {
    const server = await startServer({ resume_grace_ms: 600_000 });
    const { c } = await open(server);
    await c.make('test/counter-v0');
    await cut(c);
    await until(() => detachedCount(server) === 1, 10_000, 'detach');
    await server.stop();
    expect(server.sessionCount()).toBe(0);
    expect(detachedCount(server)).toBe(0);
  });
});
