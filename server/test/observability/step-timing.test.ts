// Which steps the episode hook times (step-timing.ts): the per-env sampler of synchronous steps, the
// event-loop iteration check, and the hook's choice between timing every step and sampling.
import { describe, expect, it } from 'vitest';
import { EpisodeObservers } from '../../src/observability/episode-events.js';
import { loopTurn, sameTurn, SYNC_SAMPLE_MS, SyncSampler } from '../../src/observability/step-timing.js';

describe('step timing', () => {
  it('a sampler times the first synchronous step, then at most one per SYNC_SAMPLE_MS of start times', () => {
    const s = new SyncSampler();
    const starts = [100, 100.2, 100.9, 100.999, 101, 101.5, 102.5, 102.6, 250];
    expect(starts.map((t) => s.take(t))).toEqual([true, false, false, false, true, false, true, false, true]);
    expect(SYNC_SAMPLE_MS).toBe(1);
    // Steps each SYNC_SAMPLE_MS or more apart (synchronous steps that slow block the loop) are all timed.
    const slow = new SyncSampler();
    expect([0, 1, 2.5, 3.5, 10].map((t) => slow.take(t))).toEqual([true, true, true, true, true]);
  });

  it('the loop iteration stays the same through microtasks and changes once the loop turns', async () => {
    const t = loopTurn();
    expect(sameTurn(t)).toBe(true);
    await Promise.resolve();
    await new Promise<void>((r) => queueMicrotask(r));
    expect(sameTurn(t)).toBe(true);
    expect(loopTurn()).toBe(t);
    await new Promise((r) => setImmediate(r));
    expect(sameTurn(t)).toBe(false);
    // A timer: it may fire in the next iteration's timers phase, before that iteration's check phase moves
    // the number on (u is taken here in a check phase: CI once saw it still current); by the check phase
    // after the timer's, the number has moved.
    const u = loopTurn();
    await new Promise((r) => setTimeout(r, 1));
    await new Promise((r) => setImmediate(r));
    expect(sameTurn(u)).toBe(false);
  });

  it('every step is timed while one step observer needs it; sampled once all accept it', () => {
    const obs = new EpisodeObservers({ warn: () => undefined });
    expect(obs.timeEveryStep).toBe(false);
    const removeSampled = obs.add({ stepTiming: 'sampled', onStep: () => undefined });
    expect(obs.timeEveryStep).toBe(false);
    // An observer without onStep does not care how steps are timed.
    obs.add({ onClose: () => undefined });
    expect(obs.timeEveryStep).toBe(false);
    const removeEvery = obs.add({ onStep: () => undefined });
    expect(obs.timeEveryStep).toBe(true);
    removeEvery();
    expect(obs.timeEveryStep).toBe(false);
    removeSampled();
    expect(obs.active).toBe(true);
    // One sampler per env id, shared by its sessions.
    expect(obs.sampling.samplerFor('a')).toBe(obs.sampling.samplerFor('a'));
    expect(obs.sampling.samplerFor('a')).not.toBe(obs.sampling.samplerFor('b'));
  });
});
