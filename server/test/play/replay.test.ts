// The replay semantics (server/src/trajectory/replay.ts), once, against a real server over a real socket:
// same env and kwargs or a new session, reset with the saved seed and options, every field compared,
// stop at a failed step and at an episode that ends early. The front ends are tested on top of it in
// session.test.ts / play-terminal.test.ts (play) and inspector.browser.test.ts (/inspect).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type EnvHandle, type SandgymClient } from '../../../clients/ts/src/index.js';
import { buildApp, type SandgymApp } from '../../src/app.js';
import { replaySummary, replayTrajectory, type ReplayDriver } from '../../src/trajectory/replay.js';
import { formatNumber, type StepRecord, type Trajectory } from '../../src/trajectory/trajectory.js';

let sg: SandgymApp;
let client: SandgymClient;

beforeAll(async () => {
  sg = await buildApp({ fixtures: true, log_level: 'error', host: '127.0.0.1', port: 0 });
  await sg.app.listen({ host: '127.0.0.1', port: 0 });
  client = await connect(sg.url());
});

afterAll(async () => {
  await client?.close();
  await sg?.app.close();
});

/** A driver over the TS client that logs what the replay asked for. */
function driver(current?: { handle: EnvHandle; kwargs?: Record<string, unknown> }) {
  const calls: string[] = [];
  let handle = current?.handle ?? null;
  let kwargs = current?.kwargs;
  const d: ReplayDriver = {
    isCurrent: (envId, kw) => handle?.spec.id === envId && JSON.stringify(kwargs ?? null) === JSON.stringify(kw ?? null),
    async make(envId, kw) {
      calls.push(`make ${envId} ${JSON.stringify(kw ?? null)}`);
      await handle?.close();
      handle = await client.make(envId, kw);
      kwargs = kw;
    },
    async reset({ seed, options }) {
      calls.push(`reset ${String(seed)} ${JSON.stringify(options)}`);
      return (handle as EnvHandle).reset({ ...(seed !== undefined ? { seed } : {}), options });
    },
    async step(action) {
      calls.push(`step ${JSON.stringify(action)}`);
      return (handle as EnvHandle).step(action);
    },
  };
  return { d, calls, close: () => handle?.close() };
}

const step = (n: number, action: unknown, observation: unknown, reward: number, terminated = false): StepRecord => ({
  type: 'step',
  step: n,
  action,
  observation,
  reward,
  terminated,
  truncated: false,
  info: {},
});

/** test/counter-v0 with actions 1, 0, 1, 1: rewards 1, 0, 1, 1; terminated at step 4 (count 3). */
const counter = (): Trajectory => ({
  reset: { type: 'reset', env_id: 'test/counter-v0', seed: 5, options: {}, observation: 0, info: {} },
  steps: [step(1, 1, 1, 1), step(2, 0, 1, 0), step(3, 1, 2, 1), step(4, 1, 3, 1, true)],
});

describe('replayTrajectory', () => {
  it('an unchanged episode is the same, on a new session with the saved seed and options', async () => {
    const { d, calls, close } = driver();
    const seen: number[] = [];
    const r = await replayTrajectory(counter(), d, { onStep: (s) => seen.push(s.step) });
    expect(r).toMatchObject({
      verdict: 'same',
      switched: true,
      seedMissing: false,
      resetObservationDiffers: false,
      savedSteps: 4,
      differing: 0,
      rewardsDiffering: 0,
      stop: null,
      replayedReturn: 3,
      savedReturn: 3,
    });
    expect(calls).toEqual(['make test/counter-v0 null', 'reset 5 {}', 'step 1', 'step 0', 'step 1', 'step 1']);
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(replaySummary(r, formatNumber)).toBe('replayed 4 steps: every step matches (return 3)');
    await close();
  });

  it('reuses the current session only for the same env id and kwargs', async () => {
    const handle = await client.make('test/counter-v0');
    const same = driver({ handle });
    expect((await replayTrajectory(counter(), same.d)).switched).toBe(false);
    expect(same.calls[0]).toBe('reset 5 {}');
    const t = counter();
    // Explicit empty kwargs differ from none (counter-v0 has no kwargs_schema, so it takes no other kwargs).
    t.reset.kwargs = {};
    const other = driver({ handle });
    const r = await replayTrajectory(t, other.d);
    expect(other.calls[0]).toBe('make test/counter-v0 {}');
    expect(r).toMatchObject({ switched: true, verdict: 'same' });
    await other.close();
  });

  it('stops before the first step when the env cannot be made', async () => {
    const t = counter();
    t.reset.env_id = 'gone-v9';
    const { d, calls, close } = driver();
    const r = await replayTrajectory(t, d);
    expect(r.stop).toMatchObject({ step: 0, reason: 'error', error: { code: 'UNKNOWN_ENV' } });
    expect(calls).toEqual(['make gone-v9 null']);
    expect(r.verdict).toBe('stopped');
    expect(replaySummary(r, formatNumber)).toBe('replay stopped before the first step: make or reset failed');
    await close();
  });

  it('compares reward, observation, terminated and truncated; info is not compared', async () => {
    const t = counter();
    t.steps[1] = { ...(t.steps[1] as StepRecord), reward: 0.5, info: { anything: true } };
    t.steps[2] = { ...(t.steps[2] as StepRecord), observation: 7 };
    t.steps[3] = { ...(t.steps[3] as StepRecord), terminated: false };
    const { d, close } = driver();
    const r = await replayTrajectory(t, d);
    expect(r.steps.map((s) => s.diffs.map((x) => x.field))).toEqual([[], ['reward'], ['observation'], ['terminated']]);
    expect(r).toMatchObject({ verdict: 'differs', differing: 3, rewardsDiffering: 1, replayedReturn: 3, savedReturn: 3.5 });
    expect(replaySummary(r, formatNumber)).toBe('replayed 4 steps: 3 steps differ (1 in reward) (return 3, saved 3.5)');
    await close();
  });

  it('rewards within REWARD_EPSILON are equal', async () => {
    const t = counter();
    t.steps[0] = { ...(t.steps[0] as StepRecord), reward: 1 + 1e-12 };
    const { d, close } = driver();
    expect((await replayTrajectory(t, d)).verdict).toBe('same');
    await close();
  });

  it('a different reset observation makes the replay differ', async () => {
    const t = counter();
    t.reset.observation = 2;
    const { d, close } = driver();
    let reported: boolean | undefined;
    const r = await replayTrajectory(t, d, { onReset: (differs) => (reported = differs) });
    expect(reported).toBe(true);
    expect(r).toMatchObject({ verdict: 'differs', resetObservationDiffers: true, differing: 0 });
    expect(replaySummary(r, formatNumber)).toBe('replayed 4 steps: the reset observation differs (return 3, saved 3)');
    await close();
  });

  it('stops at a step the server refuses, and sends nothing after it', async () => {
    const t = counter();
    t.steps[1] = { ...(t.steps[1] as StepRecord), action: 7 };
    const { d, calls, close } = driver();
    const r = await replayTrajectory(t, d);
    expect(r.stop).toMatchObject({ step: 2, reason: 'error', error: { code: 'INVALID_ACTION' } });
    expect(calls.filter((c) => c.startsWith('step'))).toEqual(['step 1', 'step 7']);
    expect(r.steps).toHaveLength(1);
    expect(replaySummary(r, formatNumber)).toBe('replay stopped at step 2 of 4: the step failed');
    await close();
  });

  it('stops when the replayed episode ends before the saved steps run out', async () => {
    const t = counter();
    // Saved with a different history: here the third 1 ends the episode at step 3.
    t.steps = [step(1, 1, 1, 1), step(2, 1, 2, 1), step(3, 1, 3, 1), step(4, 0, 3, 0)];
    const { d, calls, close } = driver();
    const r = await replayTrajectory(t, d);
    expect(r.stop).toEqual({ step: 3, reason: 'ended_early' });
    expect(r.steps.map((s) => s.diffs.map((x) => x.field))).toEqual([[], [], ['terminated']]);
    expect(calls.filter((c) => c.startsWith('step'))).toHaveLength(3);
    expect(replaySummary(r, formatNumber)).toBe('replay stopped: the episode ended at step 3, before the 4 saved steps');
    await close();
  });

  it("a file without a seed is replayed from the front end's seed and says so", async () => {
    const t = counter();
    t.reset.seed = null;
    const { d, calls, close } = driver();
    const r = await replayTrajectory(t, d);
    expect(calls[1]).toBe('reset undefined {}');
    expect(r.seedMissing).toBe(true);
    await close();
  });
});
