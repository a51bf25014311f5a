// Replaying a saved episode: the one definition of what `:replay` (sandgym play) and "Load & replay"
// (the /inspect page) do and what counts as "the same". Documented in docs/DEBUGGING.md ("Replay").
// Browser-safe (the inspector bundles it): no node imports; the front end supplies the session
// operations and renders the report its own way.
//
// Semantics:
//  1. Env: the saved env id with the saved make kwargs. The current session is reused only when it is
//     exactly that (same id, same kwargs); otherwise the front end makes a new one.
//  2. Reset with the saved seed and options. A file without a seed is replayed from whatever seed the
//     front end picks, and the report says so (seedMissing): it cannot be a determinism check.
//  3. The reset observation is compared with the saved one.
//  4. Every saved action is sent again, in order. A step matches when its reward (within
//     trajectory.ts REWARD_EPSILON), observation (JSON-equal), terminated and truncated all equal the saved ones;
//     info is not compared (it may carry timings).
//  5. The replay stops at the first step that fails (a protocol error: the step is not retried), and
//     when the replayed episode ends (terminated or truncated) before the saved steps run out: the
//     remaining actions are not sent. A saved episode that ended where the replay goes on shows as a
//     terminated/truncated difference on its last step.
//  6. Verdict: `same` (everything replayed, nothing differs), `differs` (everything replayed, some
//     difference), `stopped` (make, reset or a step failed, or the episode ended early).
import { diffStep, type StepDiff, type StepRecord, type Trajectory } from './trajectory.js';

export interface ReplayReply {
  observation: unknown;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info?: Record<string, unknown>;
}

/** The session operations a front end lends to the replay (each also records/renders as it likes). */
export interface ReplayDriver {
  /** Is the current session exactly this env made with these kwargs? */
  isCurrent(envId: string, kwargs: Record<string, unknown> | undefined): boolean;
  /** Make a new session (closing the current one). */
  make(envId: string, kwargs: Record<string, unknown> | undefined): Promise<void>;
  /** Reset; `seed` undefined means the file has none and the front end picks one. Resolves with the reset observation. */
  reset(args: { seed: number | undefined; options: Record<string, unknown> }): Promise<{ observation: unknown }>;
  step(action: unknown): Promise<ReplayReply>;
}

export interface ReplayedStep {
  step: number;
  saved: StepRecord;
  replayed: StepRecord;
  diffs: StepDiff[];
}

export type ReplayStop =
  | { step: number; reason: 'error'; error: unknown }
  /** The replayed episode ended at `step`, before the saved steps ran out. */
  | { step: number; reason: 'ended_early' };

export interface ReplayReport {
  envId: string;
  /** A new session was made for the replay. */
  switched: boolean;
  seedMissing: boolean;
  resetObservationDiffers: boolean;
  savedSteps: number;
  steps: ReplayedStep[];
  /** Steps with any difference. */
  differing: number;
  /** Steps whose reward differs (a subset of `differing`). */
  rewardsDiffering: number;
  /** Step 0 is make or reset. */
  stop: ReplayStop | null;
  verdict: 'same' | 'differs' | 'stopped';
  replayedReturn: number;
  savedReturn: number;
}

export interface ReplayObserver {
  /** After the reset: whether its observation differs from the saved one. */
  onReset?(observationDiffers: boolean): void;
  /** After each replayed step, in order (for live rendering). */
  onStep?(step: ReplayedStep): void;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export async function replayTrajectory(saved: Trajectory, driver: ReplayDriver, observer: ReplayObserver = {}): Promise<ReplayReport> {
  const { reset } = saved;
  const report: ReplayReport = {
    envId: reset.env_id,
    switched: false,
    seedMissing: reset.seed === null,
    resetObservationDiffers: false,
    savedSteps: saved.steps.length,
    steps: [],
    differing: 0,
    rewardsDiffering: 0,
    stop: null,
    verdict: 'same',
    replayedReturn: 0,
    savedReturn: saved.steps.reduce((sum, s) => sum + s.reward, 0),
  };
  const finish = (): ReplayReport => {
    report.replayedReturn = report.steps.reduce((sum, s) => sum + s.replayed.reward, 0);
    report.verdict = report.stop !== null ? 'stopped' : report.differing > 0 || report.resetObservationDiffers ? 'differs' : 'same';
    return report;
  };
  try {
    if (!driver.isCurrent(reset.env_id, reset.kwargs)) {
      await driver.make(reset.env_id, reset.kwargs);
      report.switched = true;
    }
    const r = await driver.reset({ seed: reset.seed ?? undefined, options: { ...reset.options } });
    report.resetObservationDiffers = !sameJson(r.observation, reset.observation);
  } catch (error) {
    report.stop = { step: 0, reason: 'error', error };
    return finish();
  }
  observer.onReset?.(report.resetObservationDiffers);
  for (const [i, rec] of saved.steps.entries()) {
    let reply: ReplayReply;
    try {
      reply = await driver.step(rec.action);
    } catch (error) {
      report.stop = { step: rec.step, reason: 'error', error };
      return finish();
    }
    const replayed: StepRecord = {
      type: 'step',
      step: rec.step,
      action: rec.action,
      observation: reply.observation,
      reward: reply.reward,
      terminated: reply.terminated,
      truncated: reply.truncated,
      info: reply.info ?? {},
    };
    const diffs = diffStep(rec, replayed);
    const done: ReplayedStep = { step: rec.step, saved: rec, replayed, diffs };
    report.steps.push(done);
    if (diffs.length > 0) report.differing++;
    if (diffs.some((d) => d.field === 'reward')) report.rewardsDiffering++;
    observer.onStep?.(done);
    if ((replayed.terminated || replayed.truncated) && i < saved.steps.length - 1) {
      report.stop = { step: rec.step, reason: 'ended_early' };
      return finish();
    }
  }
  return finish();
}

/** The one-line outcome both front ends print. `fmt` formats rewards. */
export function replaySummary(r: ReplayReport, fmt: (n: number) => string): string {
  const steps = plural(r.steps.length, 'step');
  if (r.stop?.reason === 'error')
    return r.stop.step === 0
      ? 'replay stopped before the first step: make or reset failed'
      : `replay stopped at step ${r.stop.step} of ${r.savedSteps}: the step failed`;
  if (r.stop?.reason === 'ended_early') return `replay stopped: the episode ended at step ${r.stop.step}, before the ${r.savedSteps} saved steps`;
  if (r.verdict === 'same') return `replayed ${steps}: every step matches (return ${fmt(r.replayedReturn)})`;
  const parts = [];
  if (r.resetObservationDiffers) parts.push('the reset observation differs');
  if (r.differing > 0) parts.push(`${plural(r.differing, 'step')} differ${r.differing === 1 ? 's' : ''} (${r.rewardsDiffering} in reward)`);
  return `replayed ${steps}: ${parts.join(', ')} (return ${fmt(r.replayedReturn)}, saved ${fmt(r.savedReturn)})`;
}

/** `reward, observation` for a step's differences. */
export function diffFields(diffs: readonly StepDiff[]): string {
  return diffs.map((d) => d.field).join(', ');
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
