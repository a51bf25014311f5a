// Attacks on session resume (PROTOCOL.md §5a), each against a real server over real sockets, written
// as an attacker who has read the source would try them: take over or observe another client's
// sessions (forged tokens, tokens in logs/metrics/errors, tokens after a restart or before hello),
// make a step run twice or a reply reach the wrong connection, exhaust server memory through what
// resume keeps (replay windows of many connections, huge replies held for detached ones), wedge the
// server with malformed or out-of-order resume frames, make a grace expiry look like a reward, and (as
// a hostile server answering resume weirdly) hang the TS client.
// A drop is followed by polling the server's own books, never by a sleep standing in for it.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { connect, SandgymError } from '../../clients/ts/src/index.js';
import type { EnvDefinition } from '../../envs/src/api.js';
import { PROTOCOL_VERSIONS } from '../../protocol/src/index.js';
import { testRegistry } from './helpers/extra-envs.js';
import { RawClient, type Frame } from './helpers/raw-client.js';
import { startServer, until, type TestServer } from './helpers/server.js';

const HELLO = { versions: [...PROTOCOL_VERSIONS], client: { name: 'resume-attacks', version: '0' } };

async function open(server: TestServer, token?: string, group?: string): Promise<{ c: RawClient; resumeToken: string }> {
  const c = await RawClient.open(server.url());
  const r = await c.request('hello', { ...HELLO, ...(token ? { token } : {}), ...(group ? { client_group: group } : {}) });
  if (r.type !== 'result') throw new Error(`hello failed: ${JSON.stringify(r)}`);
  return { c, resumeToken: r.result.resume_token as string };
}

/** Ids of a new connection start high so they never meet the old connection's. */
function highIds(c: RawClient, from = 100_000): void {
  (c as unknown as { nextId: number }).nextId = from;
}

/** A network failure from the client side: no close frame, the server sees 1006. */
async function cut(c: RawClient): Promise<void> {
  c.ws.terminate();
  await c.closed;
}

function sendWithId(c: RawClient, id: number, type: string, params: Frame, timeoutMs = 60_000): Promise<Frame> {
  const p = c.waitFor(id, timeoutMs);
  c.sendFrame({ id, type, ...params });
  return p;
}

/** A two-state env whose create and/or close wait on promises the test controls (held across drops and shutdowns). */
function heldEnv(id: string, description: string, held: { create?: Promise<void>; close?: () => Promise<void> }): EnvDefinition {
  return {
    id,
    description,
    observation_space: { type: 'discrete', n: 2 },
    action_space: { type: 'discrete', n: 2 },
    max_episode_steps: null,
    create: async () => {
      await held.create;
      return {
        reset: async () => ({ observation: 0 }),
        step: async () => ({ observation: 0, reward: 0, terminated: false }),
        close: held.close ?? (async () => {}),
      };
    },
  };
}

/** What a connection's replay log keeps (private fields, read to check the pool's books). */
interface ReplayBooks {
  windowBytes: number;
  heldBytes: number;
  inflight: Set<number>;
}
/** The replay log of a connection (server.core.connections) or of a resume link (server.core.resume.detached). */
function booksOf(conn: unknown): ReplayBooks {
  const c = conn as { replay?: ReplayBooks; link?: { replay: ReplayBooks } };
  return c.replay ?? (c.link as { replay: ReplayBooks }).replay;
}

describe('resume attacks: tokens', () => {
  let server: TestServer;
  const logLines: string[] = [];
  beforeAll(async () => {
    // Every log line the server writes, at the most verbose level, is kept to be searched for tokens.
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(chunk.toString('utf8'));
        done();
      },
    });
    server = await startServer({ resume_grace_ms: 60_000 }, { logger: pino({ level: 'trace' }, sink) });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('forged tokens (random, a live one with a character changed, cut short, extended, case-flipped) never take the sessions and never spend the real one', async () => {
    const { c: victim, resumeToken } = await open(server);
    const s = await victim.make('test/counter-v0');
    await victim.ok('reset', { session: s });
    await cut(victim);
    await until(() => server.core.resume.detached.size === 1, 10_000, 'detach');
    const { c: attacker } = await open(server);
    const flip = (ch: string) => (ch === 'A' ? 'B' : 'A');
    const forged = [
      `r_${randomBytes(24).toString('base64url')}`,
      resumeToken.slice(0, -1) + flip(resumeToken.slice(-1)),
      resumeToken.slice(0, -1),
      `${resumeToken}A`,
      resumeToken.toUpperCase() === resumeToken ? resumeToken.toLowerCase() : resumeToken.toUpperCase(),
      resumeToken.slice(2),
      ' '.repeat(resumeToken.length),
    ];
    for (const token of forged) {
      const e = await attacker.fails('resume', { token });
      expect(e.code, token).toBe('RESUME_EXPIRED');
      // The answer is the same for every forgery: it names nothing about the real token.
      expect(JSON.stringify(e)).not.toContain(resumeToken);
    }
    expect(server.core.resume.detached.size).toBe(1);
    // The owner still gets everything back, and the episode goes on.
    const { c: owner } = await open(server);
    expect((await owner.ok('resume', { token: resumeToken })).sessions).toEqual([s]);
    expect((await owner.ok('step', { session: s, action: 1 })).observation).toBe(1);
    await Promise.all([attacker.close(), owner.close()]);
  });

  it('a resume before hello is HANDSHAKE_REQUIRED and does not spend the token', async () => {
    const { c: victim, resumeToken } = await open(server);
    const s = await victim.make('test/counter-v0');
    await cut(victim);
    await until(() => server.core.resume.detached.size === 1, 10_000, 'detach');
    const pre = await RawClient.open(server.url());
    expect((await pre.fails('resume', { token: resumeToken })).code).toBe('HANDSHAKE_REQUIRED');
    expect(server.core.resume.detached.size).toBe(1);
    const { c: owner } = await open(server);
    expect((await owner.ok('resume', { token: resumeToken })).sessions).toEqual([s]);
    await Promise.all([pre.close(), owner.close()]);
  });

  it('tokens appear in no log line (trace level), no /metrics line, and no error frame', async () => {
    const { c: c1, resumeToken } = await open(server);
    const s = await c1.make('test/slow-v0', { delay_ms: 200 });
    await c1.ok('reset', { session: s });
    void sendWithId(c1, 40, 'step', { session: s, action: 0 }).catch(() => undefined);
    await c1.ok('ping');
    await cut(c1);
    await until(() => server.core.resume.detached.size === 1, 10_000, 'detach');
    const { c: c2, resumeToken: helloToken2 } = await open(server);
    highIds(c2);
    const reply = c2.waitFor(40, 30_000);
    const res = await c2.ok('resume', { token: resumeToken, pending: [40] });
    await reply;
    // Spent, own, refused, expired: every error path, each with a real token in the request.
    const { c: c3 } = await open(server);
    const errors = [
      await c3.fails('resume', { token: resumeToken }),
      await c2.fails('resume', { token: res.resume_token }),
      await c2.fails('resume', { token: helloToken2 }),
    ];
    for (const e of errors) {
      for (const t of [resumeToken, res.resume_token, helloToken2]) expect(JSON.stringify(e)).not.toContain(t);
    }
    const metrics = await (await fetch(server.httpUrl('/metrics'))).text();
    await Promise.all([c2.close(), c3.close()]);
    await until(() => server.sessionCount() === 0, 10_000, 'sessions closed');
    expect(logLines.length).toBeGreaterThan(10);
    const tokens = [resumeToken, res.resume_token as string, helloToken2];
    // The random part alone too: a log that reformats the token (prefix dropped) still leaks it.
    for (const t of tokens) {
      for (const needle of [t, t.slice(2)]) {
        expect(logLines.filter((l) => l.includes(needle))).toEqual([]);
        expect(metrics.includes(needle)).toBe(false);
      }
    }
  });

  it('a token does not survive a server restart: the new process answers RESUME_EXPIRED', async () => {
    const first = await startServer({ resume_grace_ms: 60_000 });
    const { c, resumeToken } = await open(first);
    await c.make('test/counter-v0');
    await cut(c);
    await until(() => first.core.resume.detached.size === 1, 10_000, 'detach');
    await first.stop();
    const second = await startServer({ resume_grace_ms: 60_000 });
    try {
      const { c: c2 } = await open(second);
      expect(await c2.fails('resume', { token: resumeToken })).toMatchObject({ code: 'RESUME_EXPIRED' });
      await c2.close();
    } finally {
      await second.stop();
    }
  });
});

describe('resume attacks: replies', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ resume_grace_ms: 60_000 });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('a step whose reply arrived, claimed as pending anyway (many times over), is replayed once and never runs again', async () => {
    const { c: c1, resumeToken } = await open(server);
    const s = await c1.make('test/counter-v0');
    await c1.ok('reset', { session: s });
    expect((await sendWithId(c1, 10, 'step', { session: s, action: 1 })).result.observation).toBe(1);
    await cut(c1);
    await until(() => server.core.resume.detached.size === 1, 10_000, 'detach');
    const { c: c2 } = await open(server);
    highIds(c2);
    const res = await c2.ok('resume', { token: resumeToken, pending: [10, 10, 10, 10] });
    expect(res).toMatchObject({ sessions: [s], unseen: [], lost: [] });
    // Any further frames with id 10 would be a second delivery: a ping round trip flushes them.
    await c2.ok('ping');
    expect(c2.all.filter((f) => f.id === 10)).toHaveLength(1);
    // The counter stepped once, not twice.
    expect((await c2.ok('step', { session: s, action: 1 })).observation).toBe(2);
    await c2.close();
  });

  it('a reply follows its sessions through two resumes in a row (A -> B -> C) and arrives once, on C only', async () => {
    const { c: a, resumeToken: ta } = await open(server);
    const s = await a.make('test/slow-v0', { delay_ms: 1500 });
    await a.ok('reset', { session: s });
    void sendWithId(a, 77, 'step', { session: s, action: 0 }).catch(() => undefined);
    await a.ok('ping');
    await cut(a);
    await until(() => server.core.resume.detached.size === 1, 10_000, 'A detached');
    const { c: b } = await open(server);
    highIds(b, 200_000);
    const rb = await b.ok('resume', { token: ta, pending: [77] });
    expect(rb.sessions).toEqual([s]);
    // B drops too, before the step is done (its reply is owed to B now, then to whoever resumes B).
    await cut(b);
    const { c: c } = await open(server);
    highIds(c, 300_000);
    const reply = c.waitFor(77, 30_000);
    // B may not be detached yet when C asks (the server has not seen B's drop): either way C gets it.
    await until(() => server.core.resume.detached.size === 1, 10_000, 'B detached');
    const rc = await c.ok('resume', { token: rb.resume_token, pending: [77] });
    expect(rc).toMatchObject({ sessions: [s], unseen: [], lost: [] });
    expect(await reply).toMatchObject({ id: 77, type: 'result', result: { reward: 0 } });
    await c.ok('ping');
    expect(c.all.filter((f) => f.id === 77)).toHaveLength(1);
    expect(b.all.filter((f) => f.id === 77)).toHaveLength(0);
    await c.close();
  });

  it("one connection cannot collect a second connection's sessions: resume twice, with its own new token, or after a make is RESUME_REFUSED and spends nothing", async () => {
    const victims = await Promise.all([open(server), open(server)]);
    const sessions = await Promise.all(victims.map(({ c }) => c.make('test/counter-v0')));
    await Promise.all(victims.map(({ c }) => cut(c)));
    await until(() => server.core.resume.detached.size === 2, 10_000, 'both detached');
    const { c } = await open(server);
    const first = await c.ok('resume', { token: victims[0].resumeToken });
    expect(first.sessions).toEqual([sessions[0]]);
    expect(await c.fails('resume', { token: victims[1].resumeToken })).toMatchObject({
      code: 'RESUME_REFUSED',
      details: { reason: expect.stringContaining('already holds sessions') },
    });
    expect(await c.fails('resume', { token: first.resume_token })).toMatchObject({ code: 'RESUME_REFUSED' });
    expect(server.core.resume.detached.size).toBe(1);
    // After a make on a fresh connection: refused as well.
    const { c: d } = await open(server);
    await d.make('test/noop-v0');
    expect((await d.fails('resume', { token: victims[1].resumeToken })).code).toBe('RESUME_REFUSED');
    // The second victim's token still works for a connection that holds nothing.
    const { c: e } = await open(server);
    expect((await e.ok('resume', { token: victims[1].resumeToken })).sessions).toEqual([sessions[1]]);
    await Promise.all([c.close(), d.close(), e.close()]);
  });

  it('resume inside a batch is INVALID_MESSAGE with the batch id; the token is untouched', async () => {
    const { c: v, resumeToken } = await open(server);
    const s = await v.make('test/counter-v0');
    await cut(v);
    await until(() => server.core.resume.detached.size === 1, 10_000, 'detach');
    const { c } = await open(server);
    const r = await c.request('batch', { requests: [{ type: 'resume', token: resumeToken }] });
    expect(r).toMatchObject({ type: 'error', error: { code: 'INVALID_MESSAGE' } });
    expect(r.id).toBe(2);
    expect((await c.ok('resume', { token: resumeToken })).sessions).toEqual([s]);
    await c.close();
  });

  it('hostile pending arrays: 65536 ids with duplicates is answered and cheap; non-integers, negatives, 2^32, 65537 items are INVALID_MESSAGE; none spends the token', async () => {
    const { c: v, resumeToken } = await open(server);
    const s = await v.make('test/counter-v0');
    await v.ok('reset', { session: s });
    await cut(v);
    await until(() => server.core.resume.detached.size === 1, 10_000, 'detach');
    const { c } = await open(server);
    for (const pending of [[1.5], ['7'], [-1], [2 ** 32], [null], Array.from({ length: 65_537 }, (_, i) => i)]) {
      const e = await c.fails('resume', { token: resumeToken, pending });
      expect(e.code).toBe('INVALID_MESSAGE');
      expect(e.details.path).toMatch(/^\/pending/);
    }
    expect(server.core.resume.detached.size).toBe(1);
    // The largest pending the schema allows, half of it duplicates, on a real resume.
    const pending = Array.from({ length: 65_536 }, (_, i) => 500_000 + (i % 32_768));
    const t0 = performance.now();
    const res = await c.ok('resume', { token: resumeToken, pending });
    const ms = performance.now() - t0;
    expect(res.sessions).toEqual([s]);
    // Never received: each reported unseen exactly once, whatever the duplicates.
    expect(res.unseen).toHaveLength(32_768);
    expect(new Set(res.unseen).size).toBe(32_768);
    console.log(`resume with 65536 pending ids (32768 distinct) answered in ${ms.toFixed(0)} ms, round trip included`);
    expect((await c.ok('step', { session: s, action: 1 })).observation).toBe(1);
    await c.close();
  });
});

describe('resume attacks: memory', () => {
  // The smallest output budget the config allows: what every connection's replay log keeps together
  // must stay within it.
  const LIMIT = 1024 * 1024;

  it('replay windows of many session-less connections stay within max_buffered_output_bytes server-wide', async () => {
    const server = await startServer({ resume_grace_ms: 60_000, max_buffered_output_bytes: LIMIT });
    try {
      const conns = await Promise.all(Array.from({ length: 6 }, () => open(server).then((o) => o.c)));
      const frameBytes = JSON.stringify(await (conns[0] as RawClient).request('list_envs')).length;
      const perConn = 64;
      // Without a server-wide bound each connection would keep all of these (up to 8 MiB each).
      expect(conns.length * perConn * frameBytes).toBeGreaterThan(2 * LIMIT);
      await Promise.all(conns.map((c) => Promise.all(Array.from({ length: perConn }, () => c.request('list_envs')))));
      const pool = server.core.resume.pool;
      const books = [...server.core.connections].map(booksOf);
      expect(books.reduce((n, b) => n + b.windowBytes + b.heldBytes, 0)).toBe(pool.total);
      // Each connection keeps its newest reply whatever the budget; windows take at most half the
      // limit (the rest stays free for replies held for detached connections).
      expect(pool.total).toBeLessThanOrEqual(LIMIT / 2 + conns.length * frameBytes);
      await Promise.all(conns.map((c) => c.close()));
      await until(() => server.core.connections.size === 0, 10_000, 'connections closed');
      expect(pool.total).toBe(0);
    } finally {
      await server.stop();
    }
  });

  it('huge replies held for detached connections stay within max_buffered_output_bytes: the ones past it expire (said on resume), the others resume with their reply intact', async () => {
    const server = await startServer({ resume_grace_ms: 60_000, max_buffered_output_bytes: LIMIT });
    try {
      const n = 4;
      const text = 'x'.repeat(400 * 1024);
      const victims: Array<{ c: RawClient; resumeToken: string; sessions: string[] }> = [];
      for (let i = 0; i < n; i++) {
        const { c, resumeToken } = await open(server);
        const slow = await c.make('test/slow-v0', { delay_ms: 3000 });
        const tools = await c.make('test/tools-v0');
        await c.ok('reset', { session: slow });
        await c.ok('reset', { session: tools });
        // One reply of ~400 KB, produced only when the slow step is done: after the drop.
        const batch = [
          { type: 'step', session: slow, action: 0 },
          { type: 'step', session: tools, action: { name: 'echo', arguments: { text } } },
        ];
        void sendWithId(c, 900, 'batch', { requests: batch }).catch(() => undefined);
        await c.ok('ping');
        victims.push({ c, resumeToken, sessions: [slow, tools] });
      }
      await Promise.all(victims.map(({ c }) => cut(c)));
      // Every drop seen, and every batch reply produced: held, or its connection expired for want of room.
      const settled = () => {
        const detached = [...server.core.resume.detached];
        return server.core.connections.size === 0 && server.sessionCount() === 2 * detached.length && detached.every((d) => booksOf(d).inflight.size === 0);
      };
      await until(settled, 30_000, 'batch replies produced');
      const pool = server.core.resume.pool;
      expect(pool.total).toBeLessThanOrEqual(LIMIT);
      const survivors = server.core.resume.detached.size;
      // 4 x 400 KB does not fit in 1 MiB: at most two are held.
      expect(survivors).toBeGreaterThanOrEqual(1);
      expect(survivors).toBeLessThanOrEqual(2);
      let resumed = 0;
      let expired = 0;
      for (const v of victims) {
        const { c } = await open(server);
        highIds(c);
        const reply = c.waitFor(900, 10_000);
        const r = await c.request('resume', { token: v.resumeToken, pending: [900] });
        if (r.type === 'result') {
          resumed++;
          const got = await reply;
          expect(got.result.results[1].result.observation).toBe(text);
        } else {
          expired++;
          void reply.catch(() => undefined);
          expect(r.error.code).toBe('RESUME_EXPIRED');
          expect(r.error.details.reason).toContain('max_buffered_output_bytes');
          expect(new Set(r.error.details.sessions)).toEqual(new Set(v.sessions));
        }
        await c.close();
      }
      expect(resumed).toBe(survivors);
      expect(expired).toBe(n - survivors);
      await until(() => server.sessionCount() === 0 && server.core.connections.size === 0, 10_000, 'all closed');
      expect(pool.total).toBe(0);
    } finally {
      await server.stop();
    }
  });
});

describe('resume attacks: memory across tenants', () => {
  const LIMIT = 1024 * 1024;

  /**
   * A connection of tenant `group` (client_group) that drops with one reply of `kb` KB owed: produced 4 s
   * after the drop (a slow step batched with an echo), so it is held for the resume, or expired for want of room.
   */
  async function drop(server: TestServer, group: string, kb: number): Promise<{ resumeToken: string; text: string; sessions: string[] }> {
    const { c, resumeToken } = await open(server, undefined, group);
    const slow = await c.make('test/slow-v0', { delay_ms: 4000 });
    const tools = await c.make('test/tools-v0');
    await c.ok('reset', { session: slow });
    await c.ok('reset', { session: tools });
    const text = group.slice(-1).repeat(kb * 1024);
    const batch = [
      { type: 'step', session: slow, action: 0 },
      { type: 'step', session: tools, action: { name: 'echo', arguments: { text } } },
    ];
    void sendWithId(c, 900, 'batch', { requests: batch }).catch(() => undefined);
    await c.ok('ping');
    await cut(c);
    return { resumeToken, text, sessions: [slow, tools] };
  }

  it("a tenant that fills the server-wide room for held replies loses its own resumes, never another tenant's", async () => {
    // Tenants by client_group (a server without tokens; with tokens the token is the tenant). Tenant a has
    // two detached connections holding ~400 KB each; then tenant b's one reply of ~300 KB needs room.
    // Before tenants were counted, b's connection expired (first come, first kept).
    const server = await startServer({ resume_grace_ms: 60_000, max_buffered_output_bytes: LIMIT });
    try {
      const heldBy = (tenant: string) =>
        [...server.core.resume.detached].filter((d) => booksOf(d).heldBytes > 0 && (d as unknown as { replay: { tenant: string } }).replay.tenant === tenant)
          .length;
      const a = await Promise.all([drop(server, 'tenant-a', 400), drop(server, 'tenant-a', 400)]);
      await until(() => heldBy('conn:tenant-a') === 2, 30_000, "tenant a's two replies held");
      const pool = server.core.resume.pool;
      expect(pool.of('conn:tenant-a')).toBe(pool.total);
      const b = await drop(server, 'tenant-b', 300);
      await until(() => heldBy('conn:tenant-b') === 1, 30_000, "tenant b's reply held");
      expect(heldBy('conn:tenant-a')).toBe(1);
      expect(pool.total).toBeLessThanOrEqual(LIMIT);
      // b resumes with its reply; of a's two, one resumes and one was expired for b, saying why.
      const outcomes: string[] = [];
      for (const v of [b, ...a]) {
        const { c } = await open(server);
        highIds(c);
        const reply = c.waitFor(900, 10_000);
        const r = await c.request('resume', { token: v.resumeToken, pending: [900] });
        if (r.type === 'result') {
          expect((await reply).result.results[1].result.observation).toBe(v.text);
          outcomes.push('resumed');
        } else {
          void reply.catch(() => undefined);
          expect(r.error.code).toBe('RESUME_EXPIRED');
          expect(r.error.details.reason).toContain('max_buffered_output_bytes');
          expect(r.error.details.reason).toContain("this client's tenant held the most");
          expect(new Set(r.error.details.sessions)).toEqual(new Set(v.sessions));
          outcomes.push('expired');
        }
        await c.close();
      }
      expect(outcomes[0]).toBe('resumed');
      expect(outcomes.slice(1).sort()).toEqual(['expired', 'resumed']);
      await until(() => server.sessionCount() === 0 && server.core.connections.size === 0, 10_000, 'all closed');
      expect(pool.total).toBe(0);
      expect(pool.tenants.size).toBe(0);
    } finally {
      await server.stop();
    }
  });

  it('on a server with tokens the token is the tenant: client_group does not split it, and another token is another tenant', async () => {
    const server = await startServer({ resume_grace_ms: 60_000, tokens: ['alice-token', 'bob-token'] });
    try {
      const a1 = (await open(server, 'alice-token', 'group-1')).c;
      const a2 = (await open(server, 'alice-token', 'group-2')).c;
      const b = (await open(server, 'bob-token', 'group-1')).c;
      for (const c of [a1, a2, b]) await c.request('list_envs');
      const pool = server.core.resume.pool;
      const keys = [...pool.tenants.keys()].sort();
      expect(keys).toHaveLength(2);
      for (const k of keys) expect(k).toMatch(/^token:[0-9a-f]{16}$/);
      const [ka, kb] = keys as [string, string];
      const held = (k: string) =>
        [...server.core.connections].filter((c) => (c as unknown as { link: { replay: { tenant: string } } }).link.replay.tenant === k).length;
      expect([held(ka), held(kb)].sort()).toEqual([1, 2]);
      expect(pool.of(ka) + pool.of(kb)).toBe(pool.total);
      for (const c of [a1, a2, b]) await c.close();
      await until(() => server.core.connections.size === 0, 10_000, 'connections closed');
      expect(pool.tenants.size).toBe(0);
    } finally {
      await server.stop();
    }
  });

  it('a tenant holding the most that needs more room expires its own connection, taking nothing from others', async () => {
    const server = await startServer({ resume_grace_ms: 60_000, max_buffered_output_bytes: LIMIT });
    try {
      const held = () => [...server.core.resume.detached].filter((d) => booksOf(d).heldBytes > 0).length;
      await drop(server, 'tenant-b', 300);
      await drop(server, 'tenant-a', 400);
      await until(() => held() === 2, 30_000, 'two replies held');
      // a (400 KB, the most) needs 400 KB more: it may not take b's room; its new connection expires.
      const { resumeToken: third } = await drop(server, 'tenant-a', 400);
      await until(() => server.core.resume.detached.size === 2 && server.sessionCount() === 4, 30_000, "a's third connection expired");
      expect(server.core.resume.pool.of('conn:tenant-b')).toBeGreaterThan(300 * 1024);
      const { c } = await open(server);
      const r = await c.request('resume', { token: third, pending: [900] });
      expect(r.type).toBe('error');
      expect(r.error.code).toBe('RESUME_EXPIRED');
      expect(r.error.details.reason).not.toContain('held the most');
      await c.close();
    } finally {
      await server.stop();
    }
  });
});

describe('resume attacks: shutdown', () => {
  it("a resume while the server shuts down is SHUTTING_DOWN: it cannot pull a detached connection's sessions out of the shutdown's reach", async () => {
    // An env whose close waits until the test lets it go: the shutdown is held open, deterministically,
    // on a connection that has no session left on its books (they are forgotten before being closed).
    let release = () => {};
    const closing = new Promise<void>((r) => {
      release = r;
    });
    const slowClose = heldEnv('x/held-close-v0', 'close waits for the test', { close: () => closing });
    const registry = testRegistry();
    registry.registerAll([slowClose]);
    const server = await startServer({ resume_grace_ms: 600_000 }, { registry });
    const { c: victim, resumeToken } = await open(server);
    await victim.make('test/counter-v0');
    await cut(victim);
    await until(() => server.core.resume.detached.size === 1, 10_000, 'detach');
    const { c: x } = await open(server);
    await x.make('x/held-close-v0');
    const stopped = server.stop();
    // The shutdown has begun on x: its event arrives, its session is being closed (held by the env).
    const shutdownEvent = await x.nextUnclaimed(10_000);
    expect(shutdownEvent).toMatchObject({ type: 'event', event: 'shutdown' });
    const r = await x.request('resume', { token: resumeToken });
    expect(r).toMatchObject({ type: 'error', error: { code: 'SHUTTING_DOWN' } });
    release();
    await stopped;
    // The shutdown closed the detached connection's session itself (expireAll), before returning.
    expect(server.sessionCount()).toBe(0);
    expect(server.core.resume.detached.size).toBe(0);
  });
});

describe('resume attacks: limits follow the sessions', () => {
  it("makes still running when the connection drops count against the resuming connection's max_sessions_per_connection", async () => {
    // An env whose create waits until the test lets it go: the makes are pending across the drop and resume.
    let release = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const heldMake = heldEnv('x/held-make-v0', 'create waits for the test', { create: gate });
    const registry = testRegistry();
    registry.registerAll([heldMake]);
    const server = await startServer({ resume_grace_ms: 60_000, max_sessions_per_connection: 2 }, { registry });
    try {
      const { c: a, resumeToken } = await open(server);
      const pending = [
        sendWithId(a, 11, 'make', { env_id: 'x/held-make-v0' }).catch(() => undefined),
        sendWithId(a, 12, 'make', { env_id: 'x/held-make-v0' }).catch(() => undefined),
      ];
      await a.ok('ping'); // both makes were read (frames of one connection are handled in order)
      await cut(a);
      await until(() => server.core.resume.detached.size === 1, 10_000, 'A detached');
      const { c: b } = await open(server);
      highIds(b, 200_000);
      const replies = [b.waitFor(11, 30_000), b.waitFor(12, 30_000)];
      expect(await b.ok('resume', { token: resumeToken, pending: [11, 12] })).toMatchObject({ sessions: [], unseen: [], lost: [] });
      // The two makes B took over fill its cap: a third session is refused while they run.
      expect(await b.fails('make', { env_id: 'test/counter-v0' })).toMatchObject({ code: 'CAPACITY', details: { limit: 'max_sessions_per_connection' } });
      release();
      for (const r of await Promise.all(replies)) expect(r).toMatchObject({ type: 'result' });
      expect(server.sessionCount()).toBe(2);
      expect(await b.fails('make', { env_id: 'test/counter-v0' })).toMatchObject({ code: 'CAPACITY' });
      void pending;
      await b.close();
    } finally {
      release();
      await server.stop();
    }
  });
});

describe('resume attacks: a close the server initiates is a goodbye', () => {
  it('a client that sent a frame past max_message_bytes and then dropped without answering the close frame is not detached: its sessions close, its token is gone', async () => {
    const server = await startServer({ resume_grace_ms: 600_000, max_message_bytes: 1024 });
    try {
      const { c, resumeToken } = await open(server);
      const s = await c.make('test/counter-v0');
      await c.ok('reset', { session: s });
      // Cut the TCP connection the moment the TOO_LARGE error arrives, synchronously, before ws can
      // answer the server's close frame: the server sees 1006 although it ended the connection itself.
      c.ws.prependListener('message', () => c.ws.terminate());
      c.sendFrame({ id: 9, type: 'step', session: s, action: 'x'.repeat(4096) });
      await c.closed;
      await until(() => server.core.connections.size === 0, 10_000, 'the server to see the drop');
      await until(() => server.sessionCount() === 0, 10_000, 'the sessions to close');
      expect(server.core.resume.detached.size).toBe(0);
      const { c: c2 } = await open(server);
      expect((await c2.fails('resume', { token: resumeToken })).code).toBe('RESUME_EXPIRED');
      await c2.close();
    } finally {
      await server.stop();
    }
  });

  it('while the server waits for the close frame of a connection it ended, a resume with its token takes nothing', async () => {
    const server = await startServer({ resume_grace_ms: 600_000, max_message_bytes: 1024 });
    try {
      const { c, resumeToken } = await open(server);
      const s = await c.make('test/counter-v0');
      // The client stops reading: the server's TOO_LARGE and close frame sit unread, the close unanswered.
      (c.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      c.sendFrame({ id: 9, type: 'step', session: s, action: 'x'.repeat(4096) });
      const { c: c2 } = await open(server);
      // The oversized frame was handled before c2's hello (one event loop, frames in arrival order is
      // not guaranteed across sockets): wait until the server has ended c's connection.
      await until(
        () => [...server.core.connections].some((k) => (k as unknown as { link: { ended: boolean } }).link.ended),
        10_000,
        'the server to end the connection',
      );
      expect(await c2.fails('resume', { token: resumeToken })).toMatchObject({
        code: 'RESUME_EXPIRED',
        details: { reason: expect.stringContaining('server closed') },
      });
      expect(server.sessionCount()).toBe(1);
      c.ws.terminate();
      await until(() => server.sessionCount() === 0, 10_000, 'the sessions to close');
      expect(server.core.resume.detached.size).toBe(0);
      await c2.close();
    } finally {
      await server.stop();
    }
  });
});

describe('resume attacks: outcomes', () => {
  it('a grace expiry mid-step is an abandoned episode (not scored), never a reward', async () => {
    const server = await startServer({ resume_grace_ms: 300 });
    try {
      const { c, resumeToken } = await open(server);
      const s = await c.make('test/slow-v0', { delay_ms: 60_000 });
      await c.ok('reset', { session: s });
      void sendWithId(c, 5, 'step', { session: s, action: 0 }).catch(() => undefined);
      await c.ok('ping');
      await cut(c);
      await until(() => server.sessionCount() === 0, 30_000, 'grace expiry to close the session');
      const { c: c2 } = await open(server);
      expect(await c2.fails('resume', { token: resumeToken, pending: [5] })).toMatchObject({ code: 'RESUME_EXPIRED', details: { sessions: [s] } });
      await c2.close();
      const metrics = await (await fetch(server.httpUrl('/metrics'))).text();
      const finished = metrics.split('\n').filter((l) => l.startsWith('sandgym_episodes_finished_total{') && l.includes('env="test/slow-v0"'));
      expect(finished.some((l) => l.includes('outcome="abandoned"') && l.endsWith(' 1'))).toBe(true);
      expect(finished.filter((l) => /outcome="(success|failure)"/.test(l) && !l.endsWith(' 0'))).toEqual([]);
      expect(metrics.split('\n').filter((l) => l.startsWith('sandgym_episode_reward_count') && l.includes('test/slow-v0') && !l.endsWith(' 0'))).toEqual([]);
    } finally {
      await server.stop();
    }
  });
});

describe('resume attacks: a drop-and-resume loop is no activity', () => {
  it('a client that only drops and resumes cannot hold a session (and its sandbox) past idle_timeout_ms of attached time', async () => {
    const idleMs = 2000;
    const server = await startServer({ resume_grace_ms: 60_000, idle_timeout_ms: idleMs });
    try {
      let { c, resumeToken } = await open(server);
      const s = await c.make('test/counter-v0');
      await c.ok('reset', { session: s });
      let attachedMs = 0;
      let gone = false;
      // Each round: attached for 200 ms without a request, then cut, then resumed. Before the fix every
      // resume restarted the idle clock, so this loop kept the session forever.
      for (let round = 0; round < 60 && !gone; round++) {
        const t0 = Date.now();
        await new Promise((r) => setTimeout(r, 200));
        attachedMs += Date.now() - t0;
        if (server.sessionCount() === 0) break;
        await cut(c);
        if (
          !(await until(() => server.core.resume.detached.size === 1 || server.sessionCount() === 0, 10_000, 'detach').then(
            () => server.core.resume.detached.size === 1,
          ))
        )
          break;
        const next = await open(server);
        highIds(next.c, 100_000 + round * 1000);
        const r = await sendWithId(next.c, 100_000 + round * 1000 + 999, 'resume', { token: resumeToken });
        c = next.c;
        if (r.type !== 'result' || !(r.result.sessions as string[]).includes(s)) gone = true;
        else resumeToken = r.result.resume_token as string;
      }
      // Gone inside the loop (60 rounds: ~12 s attached, six idle periods), not by a wait after it.
      expect(gone || server.sessionCount() === 0).toBe(true);
      // ...and for idleness, after at least idle_timeout_ms of attached time, never before.
      expect(attachedMs).toBeGreaterThanOrEqual(idleMs);
      await c.close().catch(() => undefined);
    } finally {
      await server.stop();
    }
  });
});

describe('resume attacks: a resume of a connection still open is no activity either', () => {
  it('its sessions are still reaped after idle_timeout_ms (the idle clock used to jump by the epoch)', async () => {
    const idleMs = 1500;
    const server = await startServer({ resume_grace_ms: 60_000, idle_timeout_ms: idleMs });
    try {
      const { c: c1, resumeToken } = await open(server);
      const s = await c1.make('test/counter-v0');
      await c1.ok('reset', { session: s });
      // The client saw the drop first: the old connection is still open when the new one resumes it.
      const { c: c2 } = await open(server);
      highIds(c2);
      expect((await c2.ok('resume', { token: resumeToken })).sessions).toEqual([s]);
      await until(() => server.sessionCount() === 0, 30_000, 'the idle session to be reaped');
      await c2.close();
    } finally {
      await server.stop();
    }
  });
});

describe('resume attacks: a server that answers resume weirdly does not hang the TS client', () => {
  const GRACE_MS = 1000;
  const HELLO_RESULT = {
    version: 2,
    server: { name: 'hostile', version: '0' },
    capabilities: { batch: true, msgpack: true, pipelining: true, tool_call: true, resume: true },
    limits: { max_message_bytes: 1 << 20, max_sessions: 8, max_batch: 8, step_timeout_ms: 30_000, idle_timeout_ms: 0, resume_grace_ms: GRACE_MS },
  };
  // How the hostile server answers the resume (null: never answers).
  const answers: Record<string, Frame | null> = {
    'an error resume never gets (INTERNAL)': {
      type: 'error',
      error: { code: 'INTERNAL', message: 'internal error: boom', retryable: false, scope: 'request' },
    },
    'a result that is not an object': { type: 'result', result: ['no'] },
    'lost that is not a list': { type: 'result', result: { resume_token: 'r_x', sessions: [], unseen: [], lost: 7 } },
    silence: null,
  };

  /** A real WebSocket server: hello, make, reset as expected; the first connection's first step cuts the socket. */
  async function hostile(answer: Frame | null): Promise<{ url: string; close: () => Promise<void> }> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((r) => wss.once('listening', () => r()));
    let n = 0;
    wss.on('connection', (ws) => {
      const first = ++n === 1;
      ws.on('message', (raw) => {
        const m = JSON.parse(String(raw)) as Frame;
        const reply = (f: Frame) => ws.send(JSON.stringify({ id: m.id, ...f }));
        if (m.type === 'hello') reply({ type: 'result', result: { ...HELLO_RESULT, resume_token: `r_${n}` } });
        else if (m.type === 'make') reply({ type: 'result', result: { session: 's_1', env_spec: { id: 'x' } } });
        else if (m.type === 'reset') reply({ type: 'result', result: { observation: 0, info: {} } });
        else if (m.type === 'step' && first) ws.terminate();
        else if (m.type === 'resume') {
          if (answer !== null) reply(answer);
        } else reply({ type: 'result', result: {} });
      });
    });
    const port = (wss.address() as { port: number }).port;
    return {
      url: `ws://127.0.0.1:${port}/v2/ws`,
      close: () =>
        new Promise<void>((r) => {
          for (const c of wss.clients) c.terminate();
          wss.close(() => r());
        }),
    };
  }

  for (const [name, answer] of Object.entries(answers)) {
    it(`${name}: the step fails with a typed error within the grace period`, async () => {
      const srv = await hostile(answer);
      const quiet = { info: () => undefined, warn: () => undefined };
      const client = await connect(srv.url, { logger: quiet, connectTimeoutMs: 1000 });
      try {
        const env = await client.make('x');
        await env.reset();
        const guard = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the step hung')), GRACE_MS + 15_000).unref());
        const e = await Promise.race([
          env.step(0).then(
            () => null,
            (err: unknown) => err,
          ),
          guard,
        ]);
        expect(e).toBeInstanceOf(SandgymError);
      } finally {
        await client.close();
        await srv.close();
      }
    });
  }
});
