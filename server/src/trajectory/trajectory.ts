// Trajectory files (JSONL) shared by `sandgym play` (:save / :replay) and the web inspector
// (download / load). Line 1 is the reset (everything needed to re-run the episode: env, seed, options),
// then one line per step. Pure: no fs, so the browser bundle can import it.
import type { StepResult } from '#protocol/index.js';

export interface ResetRecord {
  type: 'reset';
  env_id: string;
  kwargs?: Record<string, unknown>;
  seed: number | null;
  options: Record<string, unknown>;
  observation: unknown;
  info: Record<string, unknown>;
}

/** One step line: the protocol's step result (declared once, protocol/schema) with its index and action. */
export interface StepRecord extends StepResult {
  type: 'step';
  step: number;
  action: unknown;
}

export interface Trajectory {
  reset: ResetRecord;
  steps: StepRecord[];
}

export function toJsonl(t: Trajectory): string {
  return [t.reset, ...t.steps].map((r) => JSON.stringify(r)).join('\n') + '\n';
}

export class TrajectoryFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TrajectoryFormatError';
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parses a JSONL trajectory; throws TrajectoryFormatError naming the bad line. */
export function fromJsonl(text: string): Trajectory {
  const lines = text.split('\n').map((l) => l.trim());
  let reset: ResetRecord | undefined;
  const steps: StepRecord[] = [];
  lines.forEach((line, i) => {
    if (line === '') return;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch (err) {
      throw new TrajectoryFormatError(`line ${i + 1}: not JSON (${(err as Error).message})`);
    }
    if (!isObject(rec)) throw new TrajectoryFormatError(`line ${i + 1}: expected a JSON object`);
    if (rec.type === 'reset') {
      if (reset) throw new TrajectoryFormatError(`line ${i + 1}: a second reset record (one episode per file)`);
      if (typeof rec.env_id !== 'string') throw new TrajectoryFormatError(`line ${i + 1}: reset record needs env_id`);
      reset = {
        type: 'reset',
        env_id: rec.env_id,
        ...(isObject(rec.kwargs) ? { kwargs: rec.kwargs } : {}),
        seed: typeof rec.seed === 'number' ? rec.seed : null,
        options: isObject(rec.options) ? rec.options : {},
        observation: rec.observation,
        info: isObject(rec.info) ? rec.info : {},
      };
    } else if (rec.type === 'step' || (rec.type === undefined && 'action' in rec)) {
      if (!('action' in rec)) throw new TrajectoryFormatError(`line ${i + 1}: step record needs an action`);
      steps.push({
        type: 'step',
        step: typeof rec.step === 'number' ? rec.step : steps.length + 1,
        action: rec.action,
        observation: rec.observation,
        reward: typeof rec.reward === 'number' ? rec.reward : 0,
        terminated: rec.terminated === true,
        truncated: rec.truncated === true,
        info: isObject(rec.info) ? rec.info : {},
      });
    } else {
      throw new TrajectoryFormatError(`line ${i + 1}: unknown record type ${JSON.stringify(rec.type)}`);
    }
  });
  if (!reset) throw new TrajectoryFormatError('no reset record: the first line must be {"type":"reset", "env_id": ...}');
  return { reset, steps };
}

/** A reward (or any number) as both debugging tools print it: integers as is, else at most 4 decimals. */
export function formatNumber(n: number): string {
  if (Number.isInteger(n)) return String(n);
  return n.toFixed(4).replace(/0+$/, '');
}

/** A seed as the protocol allows it: an integer in 0..2^53-1; null when `text` is not one. */
export function parseSeed(text: string): number | null {
  const t = text.trim();
  if (!/^\d+$/.test(t)) return null;
  const n = Number(t);
  return Number.isSafeInteger(n) ? n : null;
}

/** Rewards within this tolerance count as equal (floating-point sums in envs). */
export const REWARD_EPSILON = 1e-9;

export interface StepDiff {
  step: number;
  field: 'reward' | 'observation' | 'terminated' | 'truncated';
  saved: unknown;
  replayed: unknown;
}

/** Differences between a saved step and its replay. */
export function diffStep(saved: StepRecord, replayed: Omit<StepRecord, 'type' | 'step' | 'action'>): StepDiff[] {
  const out: StepDiff[] = [];
  if (Math.abs(saved.reward - replayed.reward) > REWARD_EPSILON)
    out.push({ step: saved.step, field: 'reward', saved: saved.reward, replayed: replayed.reward });
  if (JSON.stringify(saved.observation) !== JSON.stringify(replayed.observation)) {
    out.push({ step: saved.step, field: 'observation', saved: saved.observation, replayed: replayed.observation });
  }
  if (saved.terminated !== replayed.terminated) out.push({ step: saved.step, field: 'terminated', saved: saved.terminated, replayed: replayed.terminated });
  if (saved.truncated !== replayed.truncated) out.push({ step: saved.step, field: 'truncated', saved: saved.truncated, replayed: replayed.truncated });
  return out;
}
