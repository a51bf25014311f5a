// GET /metrics and GET /v2/tasks/stats over a real server and socket: exact values after a known mix
// of fixture episodes, bounded labels, auth on a token server, typed errors for bad queries.
import { afterEach, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION } from '../../../protocol/src/index.js';
import { RawClient } from '../helpers/raw-client.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { metricValue, parseMetrics } from './prom-text.js';

let server: TestServer | null = null;
afterEach(async () => {
  await server?.stop();
  server = null;
});

async function scrape(s: TestServer, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; text: string }> {
  const r = await fetch(s.httpUrl('/metrics'), { headers });
  return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
}

describe('/metrics', () => {
  it('counts a known mix of episodes exactly', async () => {
    server = await startServer({ step_timeout_ms: 2000 });
    const c = await RawClient.connect(server.url());
    // counter: success (three 1s: return 3, terminated), then an abandoned episode (reset mid-episode).
    const a = await c.make('test/counter-v0');
    await c.ok('reset', { session: a });
    for (let i = 0; i < 3; i++) await c.ok('step', { session: a, action: 1 });
    await c.ok('reset', { session: a });
    await c.ok('step', { session: a, action: 0 });
    // An invalid action (outside discrete(2)) in that episode: refused, the episode goes on.
    expect((await c.fails('step', { session: a, action: 7 })).code).toBe('INVALID_ACTION');
    await c.ok('close', { session: a });
    // truncate fixture: truncated by the server after 3 steps.
    const t = await c.make('test/truncate-v0');
    await c.ok('reset', { session: t });
    let last: Record<string, unknown> = {};
    for (let i = 0; i < 10 && last.truncated !== true && last.terminated !== true; i++) last = await c.ok('step', { session: t, action: 0 });
    expect(last.truncated).toBe(true);
    // slow fixture: the step overruns the server's deadline -> TIMEOUT, episode not scored.
    const s = await c.make('test/slow-v0', { delay_ms: 30_000 });
    await c.ok('reset', { session: s });
    expect((await c.fails('step', { session: s, action: 0 })).code).toBe('TIMEOUT');
    // crash fixture: ENV_ERROR.
    const x = await c.make('test/crash-v0');
    await c.ok('reset', { session: x });
    expect((await c.fails('step', { session: x, action: 1 })).code).toBe('ENV_ERROR');
    // A make of an env that does not exist: its id is the client's text and never becomes a label.
    expect((await c.fails('make', { env_id: 'evil/"label-injection' })).code).toBe('UNKNOWN_ENV');

    const r = await scrape(server);
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^text\/plain/);
    const m = parseMetrics(r.text);
    const v = (name: string, labels: Record<string, string> = {}) => metricValue(m, name, labels);
    expect(v('sandgym_sessions_opened_total', { env: 'test/counter-v0' })).toBe(1);
    expect(v('sandgym_episodes_started_total', { env: 'test/counter-v0', task: '_none' })).toBe(2);
    expect(v('sandgym_episodes_finished_total', { env: 'test/counter-v0', task: '_none', outcome: 'success' })).toBe(1);
    expect(v('sandgym_episodes_finished_total', { env: 'test/counter-v0', task: '_none', outcome: 'abandoned' })).toBe(1);
    expect(v('sandgym_episodes_finished_total', { env: 'test/slow-v0', task: '_none', outcome: 'timeout' })).toBe(1);
    expect(v('sandgym_episodes_finished_total', { env: 'test/crash-v0', task: '_none', outcome: 'env_error' })).toBe(1);
    // truncate-v0 reports no info.score: its return (3 x 0.5 = 1.5) reaches full marks (1).
    expect(v('sandgym_episodes_finished_total', { env: 'test/truncate-v0', task: '_none', outcome: 'success' })).toBe(1);
    expect(v('sandgym_episodes_finished_total', { env: 'test/truncate-v0', task: '_none', outcome: 'failure' })).toBeUndefined();
    expect(v('sandgym_steps_total', { env: 'test/counter-v0' })).toBe(4);
    // counter-v0's steps complete synchronously: timed at most once per ms (the first always); the
    // histogram holds the timed ones (step-timing.ts), its +Inf bucket equal to its count.
    const timed = v('sandgym_step_duration_seconds_count', { env: 'test/counter-v0' });
    expect(timed).toBeGreaterThanOrEqual(1);
    expect(timed).toBeLessThanOrEqual(4);
    expect(v('sandgym_step_duration_seconds_bucket', { env: 'test/counter-v0', le: '+Inf' })).toBe(timed);
    expect(v('sandgym_reset_duration_seconds_count', { env: 'test/counter-v0' })).toBe(2);
    // Scored episodes only: the counter's success (return 3, 3 steps).
    expect(v('sandgym_episode_reward_sum', { env: 'test/counter-v0', task: '_none' })).toBe(3);
    expect(v('sandgym_episode_reward_count', { env: 'test/counter-v0', task: '_none' })).toBe(1);
    expect(v('sandgym_episode_steps_sum', { env: 'test/counter-v0', task: '_none' })).toBe(3);
    expect(v('sandgym_errors_total', { env: 'test/counter-v0', op: 'step', code: 'INVALID_ACTION' })).toBe(1);
    expect(v('sandgym_errors_total', { env: 'test/slow-v0', op: 'step', code: 'TIMEOUT' })).toBe(1);
    expect(v('sandgym_errors_total', { env: 'test/crash-v0', op: 'step', code: 'ENV_ERROR' })).toBe(1);
    expect(v('sandgym_errors_total', { env: '_unknown', op: 'make', code: 'UNKNOWN_ENV' })).toBe(1);
    expect(v('sandgym_failures_total', { env: 'test/counter-v0', cause: 'invalid_action' })).toBe(1);
    expect(v('sandgym_failures_total', { env: 'test/slow-v0', cause: 'timeout' })).toBe(1);
    expect(v('sandgym_failures_total', { env: 'test/crash-v0', cause: 'env_error' })).toBe(1);
    expect(v('sandgym_failures_total', { env: '_unknown', cause: 'client_error' })).toBe(1);
    expect(v('sandgym_connections')).toBe(1);
    // counter closed; truncate, slow, crash still open (the last two failed: no episode running).
    expect(v('sandgym_sessions')).toBe(3);
    expect(v('sandgym_episodes_running')).toBe(0);
    expect(v('sandgym_queued_requests')).toBe(0);
    expect(v('sandgym_received_bytes_total')).toBeGreaterThan(500);
    expect(v('sandgym_sent_bytes_total')).toBeGreaterThan(500);
    // The client's text is nowhere in the exposition.
    expect(r.text).not.toContain('label-injection');
    await c.close();
  });

  it('times every step that waits for the event loop, samples synchronous ones, counts all', async () => {
    server = await startServer();
    const c = await RawClient.connect(server.url());
    // slow-v0 sleeps on a timer: each step waits for the loop, so each is timed.
    const s = await c.make('test/slow-v0', { delay_ms: 2 });
    await c.ok('reset', { session: s });
    for (let i = 0; i < 5; i++) await c.ok('step', { session: s, action: 0 });
    // counter-v0 completes its steps synchronously: 60 steps of one batch frame, 15 sessions x 4.
    const sessions = await Promise.all(Array.from({ length: 15 }, () => c.make('test/counter-v0')));
    await c.ok('batch', { requests: sessions.map((session) => ({ type: 'reset', session })) });
    const t0 = performance.now();
    const r = await c.ok('batch', { requests: sessions.flatMap((session) => Array.from({ length: 4 }, () => ({ type: 'step', session, action: 0 }))) });
    const elapsedMs = performance.now() - t0;
    expect((r.results as { type: string }[]).every((x) => x.type === 'result')).toBe(true);
    const m = parseMetrics((await scrape(server)).text);
    const v = (name: string, labels: Record<string, string>) => metricValue(m, name, labels);
    const slow = { env: 'test/slow-v0' };
    expect(v('sandgym_steps_total', slow)).toBe(5);
    expect(v('sandgym_step_duration_seconds_count', slow)).toBe(5);
    // Each slept at least its 2 ms (timers may fire late, never early by more than the clock's rounding).
    expect(v('sandgym_step_duration_seconds_sum', slow)).toBeGreaterThanOrEqual(5 * 0.0019);
    expect(v('sandgym_step_duration_seconds_bucket', { ...slow, le: '0.0005' })).toBe(0);
    const counter = { env: 'test/counter-v0' };
    expect(v('sandgym_steps_total', counter)).toBe(60);
    // At most one synchronous step per ms of the frame's processing, which the client's clock brackets.
    const timed = v('sandgym_step_duration_seconds_count', counter) as number;
    expect(timed).toBeGreaterThanOrEqual(1);
    expect(timed).toBeLessThanOrEqual(Math.min(60, 1 + Math.ceil(elapsedMs)));
    expect(v('sandgym_step_duration_seconds_bucket', { ...counter, le: '+Inf' })).toBe(timed);
    await c.close();
  });

  it('bytes keep counting after a connection closes (counters never go down)', async () => {
    server = await startServer();
    const c = await RawClient.connect(server.url());
    await c.make('test/counter-v0');
    const before = metricValue(parseMetrics((await scrape(server)).text), 'sandgym_received_bytes_total') ?? 0;
    await c.close();
    await new Promise((r) => setTimeout(r, 50));
    const after = metricValue(parseMetrics((await scrape(server)).text), 'sandgym_received_bytes_total') ?? 0;
    expect(after).toBeGreaterThanOrEqual(before);
  });

  it('asks for the bearer token on a token server; /healthz stays open', async () => {
    server = await startServer({ tokens: ['sekrit'] });
    const no = await scrape(server);
    expect(no.status).toBe(401);
    expect(JSON.parse(no.text)).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
    expect((await scrape(server, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await scrape(server, { authorization: 'Bearer sekrit' })).status).toBe(200);
    expect((await fetch(server.httpUrl(`/v${PROTOCOL_VERSION}/tasks/stats`))).status).toBe(401);
    expect((await fetch(server.httpUrl(`/v${PROTOCOL_VERSION}/tasks/stats`), { headers: { authorization: 'Bearer sekrit' } })).status).toBe(200);
    expect((await fetch(server.httpUrl('/healthz'))).status).toBe(200);
  });

  it('metrics: false -> no observers at all, /metrics and /tasks/stats answer 404 with a typed error', async () => {
    server = await startServer({ metrics: false });
    expect(server.core.observers.active).toBe(false);
    const r = await scrape(server);
    expect(r.status).toBe(404);
    expect(JSON.parse(r.text)).toMatchObject({ error: { code: 'UNSUPPORTED' } });
    expect((await fetch(server.httpUrl(`/v${PROTOCOL_VERSION}/tasks/stats`))).status).toBe(404);
  });
});

describe(`/v${PROTOCOL_VERSION}/tasks/stats`, () => {
  it('refuses unknown or repeated query parameters and unknown envs with typed errors', async () => {
    server = await startServer();
    const get = async (q: string) => {
      const r = await fetch(server!.httpUrl(`/v${PROTOCOL_VERSION}/tasks/stats${q}`));
      return { status: r.status, body: (await r.json()) as { error?: { code: string; details?: Record<string, unknown> } } };
    };
    expect((await get('')).status).toBe(200);
    expect(await get('?bogus=1')).toMatchObject({ status: 400, body: { error: { code: 'INVALID_ARGUMENT', details: { path: '/bogus' } } } });
    expect(await get('?env=a&env=b')).toMatchObject({ status: 400, body: { error: { code: 'INVALID_ARGUMENT', details: { path: '/env' } } } });
    expect(await get(`?env=${'x'.repeat(5000)}`)).toMatchObject({ status: 400, body: { error: { code: 'INVALID_ARGUMENT' } } });
    expect(await get('?env=no%2Fsuch')).toMatchObject({ status: 404, body: { error: { code: 'UNKNOWN_ENV' } } });
    expect((await get('?env=test/counter-v0&split=train')).status).toBe(200);
    // An older major's path: the typed refusal, as for /vN/envs.
    const old = await fetch(server.httpUrl('/v1/tasks/stats'));
    expect(old.status).toBe(404);
    expect(((await old.json()) as { error: { code: string } }).error.code).toBe('UNSUPPORTED_VERSION');
  });
});
