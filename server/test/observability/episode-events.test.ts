// The episode hook over a real server and socket: which events arrive, in which order, with what.
import { afterEach, describe, expect, it } from 'vitest';
import type { CloseEvent, EpisodeObserver, ErrorEvent, OpenEvent, ResetEvent, StepEvent } from '../../src/observability/episode-events.js';
import { RawClient } from '../helpers/raw-client.js';
import { startServer, until, type TestServer } from '../helpers/server.js';

let server: TestServer | null = null;
afterEach(async () => {
  await server?.stop();
  server = null;
});

type Ev = ['open', OpenEvent] | ['reset', ResetEvent] | ['step', StepEvent] | ['error', ErrorEvent] | ['close', CloseEvent];

function recorder(): { events: Ev[]; observer: EpisodeObserver } {
  const events: Ev[] = [];
  return {
    events,
    observer: {
      name: 'recorder',
      onOpen: (e) => events.push(['open', e]),
      onReset: (e) => events.push(['reset', e]),
      onStep: (e) => events.push(['step', e]),
      onError: (e) => events.push(['error', e]),
      onClose: (e) => events.push(['close', e]),
    },
  };
}

describe('episode events', () => {
  it('tells open, reset, each step, errors and close, with references to what the client got', async () => {
    server = await startServer({ metrics: false });
    const { events, observer } = recorder();
    server.core.observers.add(observer);
    const c = await RawClient.connect(server.url());
    const sid = await c.make('test/counter-v0');
    await c.ok('reset', { session: sid, seed: 7 });
    await c.ok('step', { session: sid, action: 1 });
    const bad = await c.fails('step', { session: sid, action: 5 });
    expect(bad.code).toBe('INVALID_ACTION');
    await c.ok('step', { session: sid, action: 1 });
    const last = await c.ok('step', { session: sid, action: 1 });
    expect(last.terminated).toBe(true);
    await c.ok('close', { session: sid });
    expect((await c.fails('make', { env_id: 'no/such-env' })).code).toBe('UNKNOWN_ENV');
    await c.close();

    expect(events.map(([k]) => k)).toEqual(['open', 'reset', 'step', 'error', 'step', 'step', 'close', 'error']);
    const open = events[0]![1] as OpenEvent;
    expect(open).toMatchObject({ session_id: sid, env_id: 'test/counter-v0', kwargs: {} });
    expect(open.connection_id).toMatch(/^c_\d+$/);
    const reset = events[1]![1] as ResetEvent;
    expect(reset).toMatchObject({ session_id: sid, env_id: 'test/counter-v0', seed: 7, options: {}, observation: 0, info: {} });
    expect(reset.episode_id).toMatch(/^e_/);
    expect(reset.duration_ms).toBeGreaterThanOrEqual(0);
    const steps = events.filter(([k]) => k === 'step').map(([, e]) => e as StepEvent);
    expect(steps.map((s) => [s.step_index, s.action, s.reward, s.terminated, s.truncated, s.episode_id])).toEqual([
      [0, 1, 1, false, false, reset.episode_id],
      [1, 1, 1, false, false, reset.episode_id],
      [2, 1, 1, true, false, reset.episode_id],
    ]);
    const invalid = events[3]![1] as ErrorEvent;
    expect(invalid).toMatchObject({ session_id: sid, op: 'step', episode_id: reset.episode_id, step_index: 1 });
    expect(invalid.error.code).toBe('INVALID_ACTION');
    // The episode had ended (terminated) before the close: no episode left open.
    expect(events[6]![1]).toMatchObject({ session_id: sid, episode_id: null, reason: 'closed by client' });
    expect(events[6]![1]).not.toHaveProperty('code');
    const make = events[7]![1] as ErrorEvent;
    expect(make).toMatchObject({ session_id: null, env_id: 'no/such-env', episode_id: null, op: 'make' });
    expect(make.error.code).toBe('UNKNOWN_ENV');
  });

  it('a close mid-episode names the open episode; a new reset starts a new episode id', async () => {
    server = await startServer({ metrics: false });
    const { events, observer } = recorder();
    server.core.observers.add(observer);
    const c = await RawClient.connect(server.url());
    const sid = await c.make('test/counter-v0');
    await c.ok('reset', { session: sid });
    await c.ok('reset', { session: sid });
    await c.ok('step', { session: sid, action: 0 });
    await c.close();
    await until(() => events.some(([k]) => k === 'close'), 10_000, 'close event');
    const resets = events.filter(([k]) => k === 'reset').map(([, e]) => (e as ResetEvent).episode_id);
    expect(resets).toHaveLength(2);
    expect(resets[0]).not.toBe(resets[1]);
    const close = events.find(([k]) => k === 'close')![1] as CloseEvent;
    expect(close).toMatchObject({ session_id: sid, episode_id: resets[1], reason: 'connection closed' });
  });

  it('an env error ends the episode: error event of scope session, then close names no episode', async () => {
    server = await startServer({ metrics: false });
    const { events, observer } = recorder();
    server.core.observers.add(observer);
    const c = await RawClient.connect(server.url());
    const sid = await c.make('test/crash-v0');
    await c.ok('reset', { session: sid });
    const e = await c.fails('step', { session: sid, action: 1 });
    await c.ok('close', { session: sid });
    await c.close();
    const err = events.find(([k]) => k === 'error')![1] as ErrorEvent;
    expect(err.error.code).toBe(e.code);
    expect(err.error.scope).toBe('session');
    expect(events.find(([k]) => k === 'close')![1]).toMatchObject({ episode_id: null });
  });

  it('an observer that throws is logged once and never breaks the session; removal stops the calls', async () => {
    const lines: string[] = [];
    const { default: pino } = await import('pino');
    const logger = pino({ level: 'warn' }, { write: (s: string) => void lines.push(s) });
    server = await startServer({ metrics: false }, { logger });
    let calls = 0;
    const remove = server.core.observers.add({
      name: 'thrower',
      onStep: () => {
        calls++;
        throw new Error('observer bug');
      },
    });
    const { events, observer } = recorder();
    server.core.observers.add(observer);
    const c = await RawClient.connect(server.url());
    const sid = await c.make('test/counter-v0');
    await c.ok('reset', { session: sid });
    expect((await c.ok('step', { session: sid, action: 1 })).observation).toBe(1);
    expect((await c.ok('step', { session: sid, action: 1 })).observation).toBe(2);
    expect(calls).toBe(2);
    // The recorder after the thrower still heard both steps.
    expect(events.filter(([k]) => k === 'step')).toHaveLength(2);
    expect(lines.filter((l) => l.includes('episode observer threw'))).toHaveLength(1);
    expect(lines[0]).toContain('thrower');
    remove();
    await c.ok('step', { session: sid, action: 1 });
    expect(calls).toBe(2);
    expect(server.core.observers.size).toBe(1);
    await c.close();
  });

  it('with no observer, nothing is built: active is false', async () => {
    server = await startServer({ metrics: false });
    expect(server.core.observers.active).toBe(false);
    const remove = server.core.observers.add({});
    expect(server.core.observers.active).toBe(true);
    remove();
    expect(server.core.observers.active).toBe(false);
  });
});
