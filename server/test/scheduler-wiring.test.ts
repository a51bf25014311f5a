// The admission scheduler wired into the server (PROTOCOL.md §6a, docs/SCHEDULING.md), over a real
// server, a real socket and real Docker sandboxes: priority order, fair share between two tokens,
// queue deadline and cap, preemption, retries of a creation that really failed in Docker, groups, the
// events a waiting client receives, grants a client cannot raise, hostile values. Capacities are 1-2
// sandboxes so the order is fully determined; every wait is on an event or a reply, never a sleep.
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { EnvDefinition } from '../../envs/src/api.js';
import type { Sandbox } from '../../envs/src/sandbox-api.js';
import { EnvRegistry } from '../../envs/src/registry.js';
import { resolveScheduling, type SchedulingConfig } from '../src/config.js';
import { PooledSandboxService } from '../src/env-host/sandbox-adapter.js';
import { DockerDriver } from '../src/sandbox/docker/docker-driver.js';
import { PoolSet } from '../src/sandbox/pool.js';
import type { SandboxSpec } from '../src/sandbox/types.js';
import { SchedulerDriver } from '../src/admission/scheduler-driver.js';
import { connect, rerunOnInfraFailure, SandgymError, type QueueProgress, type SandgymClient } from '../../clients/ts/src/index.js';
import { RawClient, type Frame } from './helpers/raw-client.js';
import { startServer, until, type TestServer } from './helpers/server.js';
import { TEST_IMAGE, dockerFacility, gate } from './sandbox/facilities.js';

const dockerOk = gate('docker', await dockerFacility());

/** A fresh sandbox per episode, like shell-v0 (the previous one goes back first); wiped in place, so cheap. */
const boxEnv: EnvDefinition = {
  id: 'x/box-v0',
  description: 'one sandbox per episode',
  observation_space: { type: 'text', max_length: 256 },
  action_space: { type: 'text', max_length: 64 },
  max_episode_steps: null,
  sandbox: { image: TEST_IMAGE, limits: { timeout_s: 30 }, reuse: 'wipe' },
  create: (ctx) => {
    let sb: Sandbox | null = null;
    return {
      async reset() {
        if (sb) {
          const old = sb;
          sb = null;
          await ctx.sandboxes!.release(old);
        }
        sb = await ctx.sandboxes!.acquire({ image: TEST_IMAGE, limits: { timeout_s: 30 }, reuse: 'wipe' });
        return { observation: sb.id };
      },
      async step(action) {
        const r = await sb!.exec({ argv: ['echo', String(action)] });
        return { observation: r.stdout.trim(), reward: 0, terminated: false };
      },
      async close() {},
    };
  },
};

const TOKENS = { eval: 'tok-eval-0123', train: 'tok-train-4567', hold: 'tok-hold-89ab' };
const sha = (t: string) => createHash('sha256').update(t).digest('hex');

/** A Docker driver whose first `failures` creations really go to Docker with an image that does not exist. */
class FlakyDocker extends DockerDriver {
  failures = 0;
  failed = 0;
  override async create(spec: SandboxSpec) {
    if (this.failures > 0) {
      this.failures--;
      this.failed++;
      return super.create({ ...spec, image: 'sandgym/no-such-image:0' });
    }
    return super.create(spec);
  }
}

/** One driver per server: stopping the server closes its sandbox service, driver included. */
let driver: FlakyDocker;
let server: TestServer | null = null;
const clients: RawClient[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await server?.stop();
  server = null;
});

async function serve(capacity: number, scheduling: SchedulingConfig = {}, tokens = true): Promise<{ s: TestServer; sched: SchedulerDriver; pools: PoolSet }> {
  driver = new FlakyDocker({ instanceId: `sched-${Date.now().toString(36)}`, createConcurrency: 2 });
  const pools = new PoolSet(driver, { minIdle: 0, maxTotal: capacity, refillConcurrency: 2, statsLogIntervalMs: 0 });
  const sched = new SchedulerDriver(
    resolveScheduling({
      preempt_grace_ms: 0,
      grants: [
        { token_sha256: sha(TOKENS.eval), classes: ['eval', 'train-batch-closing', 'train', 'background'], weight: 3 },
        { token_sha256: sha(TOKENS.train), classes: ['train', 'background'], weight: 1 },
      ],
      ...scheduling,
    }),
    capacity,
  );
  const service = new PooledSandboxService(driver, pools, undefined, undefined, sched);
  const registry = new EnvRegistry();
  registry.register(boxEnv);
  const s = await startServer(
    { tokens: tokens ? Object.values(TOKENS) : [], scheduling: { enabled: true } },
    { sandbox: service, registry, logger: pino({ level: process.env.SANDGYM_TEST_LOG ?? 'silent' }) },
  );
  server = s;
  return { s, sched, pools };
}

async function client(s: TestServer, token?: string, group?: string): Promise<{ c: RawClient; hello: Frame }> {
  const c = await RawClient.open(s.url());
  clients.push(c);
  const r = await call(c, 'hello', {
    versions: [2],
    client: { name: 'test', version: '0' },
    ...(token ? { token } : {}),
    ...(group ? { client_group: group } : {}),
  });
  if (r.type !== 'result') throw new Error(`hello failed: ${JSON.stringify(r)}`);
  return { c, hello: r.result as Frame };
}

/** Replies may take long on a loaded 2-core machine (a reset creates a container): generous deadlines. */
const REPLY_MS = 120_000;
let nextId = 1_000_000;
async function call(c: RawClient, type: string, params: Frame = {}): Promise<Frame> {
  const id = nextId++;
  const reply = c.waitFor(id, REPLY_MS);
  c.sendFrame({ id, type, ...params });
  return reply;
}
async function ok(c: RawClient, type: string, params: Frame = {}): Promise<Frame> {
  const r = await call(c, type, params);
  if (r.type !== 'result') throw new Error(`${type} failed: ${JSON.stringify(r.error)}`);
  return r.result as Frame;
}
async function fails(c: RawClient, type: string, params: Frame = {}): Promise<Frame> {
  const r = await call(c, type, params);
  if (r.type !== 'error') throw new Error(`${type} unexpectedly succeeded: ${JSON.stringify(r.result)}`);
  return r.error as Frame;
}
async function make(c: RawClient, envId: string): Promise<string> {
  return (await ok(c, 'make', { env_id: envId })).session as string;
}

/** Sends a reset without awaiting it; returns its id and the reply promise. */
function resetAsync(c: RawClient, session: string, fields: Frame = {}): { id: number; reply: Promise<Frame> } {
  const id = Math.floor(Math.random() * 1e9);
  const reply = c.waitFor(id, REPLY_MS);
  c.sendFrame({ id, type: 'reset', session, ...fields });
  return { id, reply };
}

const events = (c: RawClient, name: string) => c.all.filter((f) => f.type === 'event' && f.event === name);
const queuedFor = (c: RawClient, id: number) => events(c, 'queued').filter((e) => e.details.request === id);
const admittedFor = (c: RawClient, id: number) => events(c, 'admitted').some((e) => e.details.request === id);
const waitQueued = (c: RawClient, id: number) => until(() => queuedFor(c, id).length > 0, REPLY_MS, `queued event for ${id}`);

describe.skipIf(!dockerOk)('scheduler wiring (docker)', { timeout: 300_000 }, () => {
  it('hello advertises scheduling with the classes the token was granted', async () => {
    const { s } = await serve(1);
    const { hello: h1 } = await client(s, TOKENS.eval);
    expect(h1.capabilities.scheduling).toBe(true);
    expect(h1.limits.priority_classes).toEqual(['eval', 'train-batch-closing', 'train', 'background']);
    expect(h1.limits.default_priority).toBe('train');
    expect(h1.limits.max_queue_timeout_ms).toBe(600_000);
    expect(h1.limits.max_group_size).toBe(1);
    const { hello: h2 } = await client(s, TOKENS.train);
    expect(h2.limits.priority_classes).toEqual(['train', 'background']);
    // A token with no grant gets the default grant: the default class and those below it.
    const { hello: h3 } = await client(s, TOKENS.hold);
    expect(h3.limits.priority_classes).toEqual(['train', 'background']);
  });

  it('a higher class is admitted first; the waiting client gets queued then admitted events', async () => {
    const { s } = await serve(1);
    const { c: hold } = await client(s, TOKENS.hold);
    const { c: train } = await client(s, TOKENS.train);
    const { c: ev } = await client(s, TOKENS.eval);
    const h = await make(hold, 'x/box-v0');
    await ok(hold, 'reset', { session: h });
    const t = await make(train, 'x/box-v0');
    const e = await make(ev, 'x/box-v0');
    const rt = resetAsync(train, t);
    await waitQueued(train, rt.id);
    const re = resetAsync(ev, e, { priority: 'eval' });
    await waitQueued(ev, re.id);
    // The eval request is ahead of the train one that was queued first.
    expect(queuedFor(ev, re.id)[0]!.details).toMatchObject({ position: 0, units_ahead: 0, priority: 'eval' });
    expect(queuedFor(ev, re.id)[0]!.session).toBe(e);
    expect(queuedFor(train, rt.id).at(-1)!.details.priority).toBe('train');
    await ok(hold, 'close', { session: h });
    const r1 = await re.reply;
    expect(r1.type).toBe('result');
    expect(admittedFor(ev, re.id)).toBe(true);
    expect(admittedFor(train, rt.id)).toBe(false);
    // The train request moved to the head of the queue and heard it (a refresh within a second).
    await until(() => queuedFor(train, rt.id).some((q) => q.details.position === 0), REPLY_MS, 'train at position 0');
    await ok(ev, 'close', { session: e });
    expect((await rt.reply).type).toBe('result');
    expect(admittedFor(train, rt.id)).toBe(true);
    const waited = events(train, 'admitted').find((a) => a.details.request === rt.id)!;
    expect(waited.details.waited_ms).toBeGreaterThan(0);
  });

  it('fair share: two backlogged tokens with weights 3:1 are admitted 3:1', async () => {
    const { s } = await serve(1);
    const { c: hold } = await client(s, TOKENS.hold);
    const { c: heavy } = await client(s, TOKENS.eval);
    const { c: light } = await client(s, TOKENS.train);
    const h = await make(hold, 'x/box-v0');
    await ok(hold, 'reset', { session: h });
    const hs = await Promise.all([0, 1, 2, 3].map(() => make(heavy, 'x/box-v0')));
    const ls = await Promise.all([0, 1, 2, 3].map(() => make(light, 'x/box-v0')));
    const who = new Map<string, string>();
    const pending: { c: RawClient; session: string; id: number; reply: Promise<Frame> }[] = [];
    for (const sess of hs) {
      const r = resetAsync(heavy, sess, { priority: 'train' });
      await waitQueued(heavy, r.id);
      pending.push({ c: heavy, session: sess, ...r });
      who.set(sess, 'heavy');
    }
    for (const sess of ls) {
      const r = resetAsync(light, sess);
      await waitQueued(light, r.id);
      pending.push({ c: light, session: sess, ...r });
      who.set(sess, 'light');
    }
    await ok(hold, 'close', { session: h });
    // One unit: whoever is admitted holds it until the test closes its session.
    const order: string[] = [];
    for (let k = 0; k < 5; k++) {
      const done = await Promise.race(pending.map((p) => p.reply.then(() => p)));
      pending.splice(pending.indexOf(done), 1);
      order.push(who.get(done.session)!);
      await ok(done.c, 'close', { session: done.session });
    }
    // Start-time fair queuing, heavy queued first: H(0) L(0) H(1/3) H(2/3) H(1) ...
    expect(order).toEqual(['heavy', 'light', 'heavy', 'heavy', 'heavy']);
  });

  it('a client cannot raise its own priority; unknown classes and hostile values are refused, typed', async () => {
    const { s } = await serve(1, { max_queue_timeout_ms: 5_000 });
    const { c: train } = await client(s, TOKENS.train);
    const up = await fails(train, 'make', { env_id: 'x/box-v0', priority: 'eval' });
    expect(up.code).toBe('INVALID_ARGUMENT');
    expect(up.details).toMatchObject({ path: '/priority', allowed: ['train', 'background'] });
    const sess = await make(train, 'x/box-v0');
    const up2 = await fails(train, 'reset', { session: sess, priority: 'train-batch-closing' });
    expect(up2.code).toBe('INVALID_ARGUMENT');
    expect(up2.details.allowed).toEqual(['train', 'background']);
    const unknown = await fails(train, 'reset', { session: sess, priority: 'vip' });
    expect(unknown.code).toBe('INVALID_ARGUMENT');
    for (const [field, value] of [
      ['queue_timeout_ms', -1],
      ['queue_timeout_ms', 1e300],
      ['queue_timeout_ms', 1.5],
      ['priority', ''],
      ['priority', 'x'.repeat(10_000)],
      ['preemptible', 'yes'],
    ] as const) {
      const bad = await fails(train, 'reset', { session: sess, [field]: value });
      expect(bad.code, `${field}=${String(value).slice(0, 20)}`).toBe('INVALID_MESSAGE');
    }
    for (const size of [0, -1, 1_000_000, 2.5]) expect((await fails(train, 'group', { env_id: 'x/box-v0', size })).code).toBe('INVALID_MESSAGE');
    const tooBig = await fails(train, 'group', { env_id: 'x/box-v0', size: 2 });
    expect(tooBig).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: '/size' } });
    // The largest legal timeout is capped at the server's maximum, and the session still works.
    const capped = await ok(train, 'reset', { session: sess, queue_timeout_ms: 9007199254740991 });
    expect(typeof capped.observation).toBe('string');
    expect((await ok(train, 'step', { session: sess, action: 'hi' })).observation).toBe('hi');
  });

  it('queue deadline: CAPACITY queue_timeout, and the session can reset again; a full queue answers queue_full at once', async () => {
    const { s, sched } = await serve(1, { max_queued: 1 });
    const { c: hold } = await client(s, TOKENS.hold);
    const { c: a } = await client(s, TOKENS.train);
    const h = await make(hold, 'x/box-v0');
    await ok(hold, 'reset', { session: h });
    const sa = await make(a, 'x/box-v0');
    const expired = await fails(a, 'reset', { session: sa, queue_timeout_ms: 200 });
    expect(expired.code).toBe('CAPACITY');
    expect(expired.retryable).toBe(true);
    expect(expired.details).toMatchObject({ reason: 'queue_timeout', limit: 'queue_timeout_ms' });
    expect(expired.details.waited_ms).toBeGreaterThanOrEqual(200);
    // 0: only if a sandbox is free now.
    expect((await fails(a, 'reset', { session: sa, queue_timeout_ms: 0 })).details.reason).toBe('queue_timeout');
    // The queue holds one request: the next one is refused at once.
    const sb = await make(a, 'x/box-v0');
    const waiting = resetAsync(a, sa);
    await waitQueued(a, waiting.id);
    const full = await fails(a, 'reset', { session: sb });
    expect(full).toMatchObject({ code: 'CAPACITY', details: { reason: 'queue_full', limit: 'max_queued' } });
    expect(sched.stats().queued).toBe(1);
    await ok(hold, 'close', { session: h });
    expect((await waiting.reply).type).toBe('result');
    expect((await ok(a, 'step', { session: sa, action: 'again' })).observation).toBe('again');
  });

  it('preemption: a preemptible holder is closed with PREEMPTED, the higher-class waiter is admitted', async () => {
    const { s } = await serve(1);
    const { c: low } = await client(s, TOKENS.train);
    const { c: ev } = await client(s, TOKENS.eval);
    const victim = await ok(low, 'make', { env_id: 'x/box-v0', preemptible: true });
    await ok(low, 'reset', { session: victim.session });
    const e = await make(ev, 'x/box-v0');
    const re = resetAsync(ev, e, { priority: 'eval' });
    expect((await re.reply).type).toBe('result');
    await until(() => events(low, 'session_closed').length > 0, REPLY_MS, 'session_closed');
    const closed = events(low, 'session_closed')[0]!;
    expect(closed.session).toBe(victim.session);
    expect(closed.details.code).toBe('PREEMPTED');
    const after = await fails(low, 'step', { session: victim.session, action: 'x' });
    expect(after.code).toBe('UNKNOWN_SESSION');
    // A holder that is not preemptible (and not of a preemptible class) is never reclaimed.
    const second = await make(low, 'x/box-v0');
    await ok(ev, 'close', { session: e });
    await ok(low, 'reset', { session: second });
    const e2 = await make(ev, 'x/box-v0');
    const wait = resetAsync(ev, e2, { priority: 'eval', queue_timeout_ms: 500 });
    const refused = await wait.reply;
    expect(refused.error.code).toBe('CAPACITY');
    expect(events(low, 'session_closed')).toHaveLength(1);
    // The metrics say the same (scheduler-metrics.ts on the server's registry).
    const text = await (await fetch(s.httpUrl('/metrics'), { headers: { authorization: `Bearer ${TOKENS.eval}` } })).text();
    expect(text).toMatch(/^sandgym_scheduler_preempted_total\{class="train"\} 1$/m);
    expect(text).toMatch(/^sandgym_scheduler_admitted_total\{class="eval"\} 1$/m);
    expect(text).toMatch(/^sandgym_scheduler_expired_total\{class="eval",reason="deadline"\} 1$/m);
    expect(text).toMatch(/^sandgym_scheduler_wait_seconds_count\{class="eval"\} 1$/m);
    expect(text).toMatch(/^sandgym_scheduler_queued\{class="eval"\} 0$/m);
  });

  it('a holder of a preemptible class (background) is preempted without having asked to be', async () => {
    const { s } = await serve(1);
    const { c: low } = await client(s, TOKENS.train);
    const { c: hold } = await client(s, TOKENS.hold);
    const { c: ev } = await client(s, TOKENS.eval);
    const h = await make(hold, 'x/box-v0');
    await ok(hold, 'reset', { session: h });
    // The background reset waits in the queue (background is a preemptible class) ...
    const v = await make(low, 'x/box-v0');
    const rv = resetAsync(low, v, { priority: 'background' });
    await waitQueued(low, rv.id);
    await ok(hold, 'close', { session: h });
    expect((await rv.reply).type).toBe('result');
    // ... then holds the sandbox when eval arrives.
    const e = await make(ev, 'x/box-v0');
    const re = resetAsync(ev, e, { priority: 'eval' });
    expect((await re.reply).type).toBe('result');
    await until(() => events(low, 'session_closed').length > 0, REPLY_MS, 'session_closed');
    expect(events(low, 'session_closed')[0]!.details.code).toBe('PREEMPTED');
  });

  it('a creation that fails in Docker is retried within the deadline; the client sees only success', async () => {
    const { s, pools } = await serve(1, { retry_budget: 2 });
    const { c } = await client(s, TOKENS.train);
    const sess = await make(c, 'x/box-v0');
    driver.failures = 3; // the pool gives a waiter up after 3 consecutive failures: one scheduler retry
    driver.failed = 0;
    const r = await call(c, 'reset', { session: sess });
    expect(r.type, JSON.stringify(r.error)).toBe('result');
    expect(driver.failed).toBe(3);
    expect(pools.stats()[0]!.create_failures).toBe(3);
    expect((await ok(c, 'step', { session: sess, action: 'ok' })).observation).toBe('ok');
  });

  it('past the retry budget the reset fails with SANDBOX_ERROR, its unit is free, and the session can reset again', async () => {
    const { s, sched } = await serve(1, { retry_budget: 0 });
    const { c } = await client(s, TOKENS.train);
    const sess = await make(c, 'x/box-v0');
    driver.failures = 3;
    driver.failed = 0;
    const e = await fails(c, 'reset', { session: sess });
    expect(e).toMatchObject({ code: 'SANDBOX_ERROR', retryable: true });
    expect(e.details.reason).toMatch(/retries were spent/);
    expect(driver.failed).toBe(3);
    expect(sched.stats()).toMatchObject({ held: 0, queued: 0 });
    expect(typeof (await ok(c, 'reset', { session: sess })).observation).toBe('string');
  });

  it('a group is admitted all or nothing, ahead of later singles, and completes with group_complete', async () => {
    const { s } = await serve(2);
    const { c: hold } = await client(s, TOKENS.hold);
    const { c: g } = await client(s, TOKENS.train);
    const h = await make(hold, 'x/box-v0');
    await ok(hold, 'reset', { session: h });
    const gid = 777;
    const reply = g.waitFor(gid, 120_000);
    g.sendFrame({ id: gid, type: 'group', env_id: 'x/box-v0', size: 2 });
    await waitQueued(g, gid);
    expect(queuedFor(g, gid)[0]!.session).toBeUndefined();
    // One sandbox is free, but a group of 2 never takes part of its units; a later single waits behind it.
    const { c: single } = await client(s, TOKENS.hold);
    const ss = await make(single, 'x/box-v0');
    const rs = resetAsync(single, ss);
    await waitQueued(single, rs.id);
    expect(s.core.sessionCount).toBeGreaterThan(0);
    await ok(hold, 'close', { session: h });
    const res = await reply;
    expect(res.type, JSON.stringify(res.error)).toBe('result');
    expect(res.result.sessions).toHaveLength(2);
    expect(admittedFor(g, gid)).toBe(true);
    expect(admittedFor(single, rs.id)).toBe(false);
    const [m1, m2] = res.result.sessions as string[];
    await ok(g, 'reset', { session: m1 });
    await ok(g, 'reset', { session: m2 });
    expect((await ok(g, 'step', { session: m2, action: 'member' })).observation).toBe('member');
    await ok(g, 'close', { session: m1 });
    expect(events(g, 'group_complete')).toHaveLength(0);
    await ok(g, 'close', { session: m2 });
    await until(() => events(g, 'group_complete').length > 0, REPLY_MS, 'group_complete');
    expect(events(g, 'group_complete')[0]!.details).toEqual({ group: res.result.group, sessions: [m1, m2] });
    expect((await rs.reply).type).toBe('result');
  });

  it('a group member whose creation retries are spent gives back only its unit; the group still completes', async () => {
    const { s, sched } = await serve(2, { retry_budget: 0 });
    const { c: g } = await client(s, TOKENS.train);
    const res = await ok(g, 'group', { env_id: 'x/box-v0', size: 2 });
    const [m1, m2] = res.sessions as string[];
    driver.failures = 3; // the pool gives its waiter up after 3 failures; budget 0: the member gives up
    driver.failed = 0;
    const e = await fails(g, 'reset', { session: m1! });
    expect(e).toMatchObject({ code: 'SANDBOX_ERROR', retryable: true });
    expect(e.details.reason).toMatch(/retries were spent/);
    // The other member keeps its unit and runs; the scheduler counts exactly the one sandbox it holds.
    await ok(g, 'reset', { session: m2! });
    expect((await ok(g, 'step', { session: m2!, action: 'still' })).observation).toBe('still');
    expect(sched.stats()).toMatchObject({ held: 1, queued: 0 });
    // The member that gave up is admitted one by one from now on, into the unit it gave back.
    expect(typeof (await ok(g, 'reset', { session: m1! })).observation).toBe('string');
    expect(sched.stats()).toMatchObject({ held: 2 });
    await ok(g, 'close', { session: m1! });
    expect(events(g, 'group_complete')).toHaveLength(0);
    await ok(g, 'close', { session: m2! });
    await until(() => events(g, 'group_complete').length > 0, REPLY_MS, 'group_complete');
    expect(events(g, 'group_complete')[0]!.details).toEqual({ group: res.group, sessions: [m1, m2] });
    await until(() => sched.stats().held === 0, REPLY_MS, 'every unit back');
  });

  it('a group whose last member gives up completes then', async () => {
    const { s, sched } = await serve(2, { retry_budget: 0 });
    const { c: g } = await client(s, TOKENS.train);
    const res = await ok(g, 'group', { env_id: 'x/box-v0', size: 2 });
    const [m1, m2] = res.sessions as string[];
    await ok(g, 'close', { session: m2! });
    driver.failures = 3;
    expect((await fails(g, 'reset', { session: m1! })).code).toBe('SANDBOX_ERROR');
    await until(() => events(g, 'group_complete').length > 0, REPLY_MS, 'group_complete');
    expect(events(g, 'group_complete')).toHaveLength(1);
    expect(sched.stats()).toMatchObject({ held: 0 });
    // Its close gives nothing back twice (the unit is already free) and sends no second group_complete.
    await ok(g, 'close', { session: m1! });
    expect(sched.stats()).toMatchObject({ held: 0 });
    expect(events(g, 'group_complete')).toHaveLength(1);
  });

  it('a connection that drops while its reset waits leaves the queue', async () => {
    const { s, sched } = await serve(1);
    const { c: hold } = await client(s, TOKENS.hold);
    const { c: gone } = await client(s, TOKENS.train);
    const h = await make(hold, 'x/box-v0');
    await ok(hold, 'reset', { session: h });
    const sg = await make(gone, 'x/box-v0');
    const r = resetAsync(gone, sg);
    await waitQueued(gone, r.id);
    expect(sched.stats().queued).toBe(1);
    await gone.close();
    await until(() => sched.stats().queued === 0, REPLY_MS, 'queue empty');
    await ok(hold, 'close', { session: h });
    await until(() => sched.stats().held === 0, REPLY_MS, 'nothing held');
  });

  it('without tokens, client_group is the fairness key (and hello says scheduling)', async () => {
    const { s } = await serve(1, {}, false);
    const { c, hello } = await client(s, undefined, 'trainer-1');
    expect(hello.capabilities.scheduling).toBe(true);
    const sess = await make(c, 'x/box-v0');
    expect((await ok(c, 'reset', { session: sess })).observation).toMatch(/\S/);
    const bad = await RawClient.open(s.url());
    clients.push(bad);
    const r = await call(bad, 'hello', { versions: [2], client: { name: 't', version: '0' }, client_group: 'has space' });
    expect(r.error.code).toBe('INVALID_MESSAGE');
  });
});

describe.skipIf(!dockerOk)('TS client scheduling API (docker)', { timeout: 300_000 }, () => {
  const tsClients: SandgymClient[] = [];
  afterEach(async () => {
    await Promise.all(tsClients.splice(0).map((c) => c.close()));
  });
  const tsConnect = async (s: TestServer, token: string) => {
    const c = await connect(s.url(), { token, requestTimeoutMs: REPLY_MS, logger: { info: () => {}, warn: () => {} } });
    tsClients.push(c);
    return c;
  };

  it('onProgress hears queued then admitted; group() resolves all-or-nothing and completed on group_complete', async () => {
    const { s } = await serve(2);
    const hold = await tsConnect(s, TOKENS.hold);
    const c = await tsConnect(s, TOKENS.train);
    expect(c.capabilities.scheduling).toBe(true);
    const h1 = await hold.make('x/box-v0');
    const h2 = await hold.make('x/box-v0');
    await h1.reset();
    await h2.reset();
    const seen: QueueProgress[] = [];
    const env = await c.make('x/box-v0', undefined, { priority: 'background', queue_timeout_ms: REPLY_MS });
    const waiting = env.reset({ queue_timeout_ms: REPLY_MS }, { onProgress: (p) => seen.push(p) });
    await until(() => seen.length > 0, REPLY_MS, 'a queued progress');
    expect(seen[0]).toMatchObject({ event: 'queued', session: env.session, position: 0, units_ahead: 0, priority: 'background' });
    await h1.close();
    await waiting;
    expect(seen.at(-1)).toMatchObject({ event: 'admitted', session: env.session });
    await env.close();
    // A group of 2 waits for both units (h2 still holds one), then comes whole.
    const groupSeen: QueueProgress[] = [];
    const pending = c.group('x/box-v0', 2, undefined, { onProgress: (p) => groupSeen.push(p) });
    await until(() => groupSeen.length > 0, REPLY_MS, 'group queued');
    await h2.close();
    const group = await pending;
    expect(group.members).toHaveLength(2);
    for (const m of group.members) await m.reset();
    let done = false;
    void group.completed.then(() => (done = true));
    await group.members[0]!.close();
    expect(done).toBe(false);
    await group.members[1]!.close();
    await group.completed;
  });

  it('rerunOnInfraFailure reruns an episode that was PREEMPTED, never one the policy failed', async () => {
    const { s } = await serve(1);
    const low = await tsConnect(s, TOKENS.train);
    const ev = await tsConnect(s, TOKENS.eval);
    const reruns: string[] = [];
    const closed: string[] = [];
    low.on('event', (e) => {
      if (e.event === 'session_closed' && (e.details as { code?: string }).code === 'PREEMPTED' && e.session) closed.push(e.session);
    });
    const result = await rerunOnInfraFailure(
      async (attempt) => {
        const env = await low.make('x/box-v0', undefined, { preemptible: true });
        await env.reset();
        if (attempt === 1) {
          // Eval work arrives while this episode runs: the scheduler reclaims the sandbox.
          const evalHandle = await ev.make('x/box-v0');
          await evalHandle.reset({ priority: 'eval' });
          // The server says so on this connection: session_closed with code PREEMPTED.
          await until(() => closed.includes(env.session), REPLY_MS, 'session_closed PREEMPTED');
          await evalHandle.close();
        }
        // On the first attempt the session is gone: the client turns the event into the handle's error.
        const r = await env.step('work');
        await env.close();
        return { attempt, observation: r.observation };
      },
      { onRerun: (err) => reruns.push(err.code) },
    );
    expect(reruns).toEqual(['PREEMPTED']);
    expect(result).toEqual({ attempt: 2, observation: 'work' });
    // Not infrastructure: propagated at once, no rerun.
    let runs = 0;
    await expect(
      rerunOnInfraFailure(async () => {
        runs++;
        throw new SandgymError('ENV_ERROR', 'env bug');
      }),
    ).rejects.toMatchObject({ code: 'ENV_ERROR' });
    expect(runs).toBe(1);
  });
});
