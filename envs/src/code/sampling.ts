// How code-v0 picks the next task when reset names none (make kwargs `sampling`, docs/OBSERVABILITY.md):
//   uniform  - a seeded uniform pick from the split (the default; the same seed gives the same task);
//   frontier - tasks whose pass rate lies within a band (default 0.2-0.8) are the ones that give a
//              gradient: picked from them, with exploration of tasks that have too few attempts to know;
//   epoch    - every task once per epoch across W rollout workers: worker w takes its shard of each
//              epoch's permutation, in order, from a cursor it can resume from (no duplicates across
//              workers, none within an epoch).
// Pure functions over a sorted task list and a read-only stats view: deterministic given the seed.
import type { TaskStatsProvider } from '../api.js';
import { Rng } from '../rng.js';

export type SamplingMode = 'uniform' | 'frontier' | 'epoch';

export interface FrontierOptions {
  /** Pass-rate band [low, high] (inclusive) of the tasks at the frontier. */
  low: number;
  high: number;
  /** Below this many scored attempts a task's pass rate is not known yet: it is explored. */
  min_attempts: number;
  /** Probability of exploring (an under-attempted task) when there are frontier tasks too. */
  explore: number;
}

export const DEFAULT_FRONTIER: FrontierOptions = { low: 0.2, high: 0.8, min_attempts: 4, explore: 0.2 };

export interface EpochOptions {
  /** This worker's index, 0..workers-1. */
  worker: number;
  workers: number;
  /** Shared by all workers: the permutation of each epoch derives from it. */
  seed: number;
}

/** Why a frontier pick chose what it chose (reset info.sampling). */
export type FrontierReason = 'frontier' | 'explore' | 'fallback';

export interface Picked<T> {
  task: T;
  reason?: FrontierReason;
  /** Epoch mode: the epoch, the position in its permutation, and the cursor of the next pick. */
  epoch?: number;
  position?: number;
  next_cursor?: number;
}

/**
 * Frontier pick among `tasks` (one split, sorted by id). Tasks with >= min_attempts whose pass rate is
 * in the band are the frontier; tasks with fewer attempts are explored (with probability `explore`, or
 * always when there is no frontier yet); when both are empty (every task known and outside the band),
 * a uniform pick.
 */
export function pickFrontier<T extends { id: string }>(
  tasks: readonly T[],
  split: string,
  stats: TaskStatsProvider | undefined,
  opts: FrontierOptions,
  rng: Rng,
): Picked<T> {
  const frontier: T[] = [];
  const unexplored: T[] = [];
  for (const t of tasks) {
    const s = stats?.get(t.id, split);
    const attempts = s?.attempts ?? 0;
    if (attempts < opts.min_attempts) unexplored.push(t);
    else {
      const rate = (s?.successes ?? 0) / attempts;
      if (rate >= opts.low && rate <= opts.high) frontier.push(t);
    }
  }
  // One draw decides explore-or-not, one the task: the same seed gives the same pick for the same stats.
  const explore = rng.random() < opts.explore;
  if (frontier.length > 0 && (!explore || unexplored.length === 0)) return { task: rng.pick(frontier), reason: 'frontier' };
  if (unexplored.length > 0) return { task: rng.pick(unexplored), reason: 'explore' };
  return { task: rng.pick(tasks), reason: 'fallback' };
}

/** Tasks of worker `w`'s shard of one epoch: positions w, w+W, w+2W, ... of the permutation. */
export function shardSize(n: number, worker: number, workers: number): number {
  return worker >= n ? 0 : Math.floor((n - 1 - worker) / workers) + 1;
}

/** The permutation of epoch `epoch` (indices 0..n-1), the same for every worker given the shared seed. */
export function epochPermutation(n: number, seed: number, epoch: number): number[] {
  // Seed and epoch mixed into one 53-bit seed; Fisher-Yates with the repo's seeded Rng.
  const rng = new Rng((seed * 1_000_003 + epoch) % Number.MAX_SAFE_INTEGER);
  const p = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(0, i);
    const tmp = p[i] as number;
    p[i] = p[j] as number;
    p[j] = tmp;
  }
  return p;
}

/**
 * Epoch pick: worker `opts.worker`'s `cursor`-th task (cursor 0, 1, 2, ... across epochs). Every task of
 * the split appears exactly once per epoch across all workers; a worker resumes by passing the cursor
 * it got back as next_cursor. A worker whose shard is empty (more workers than tasks) has nothing to
 * pick: null.
 */
export function pickEpoch<T>(tasks: readonly T[], opts: EpochOptions, cursor: number): Picked<T> | null {
  const n = tasks.length;
  const size = shardSize(n, opts.worker, opts.workers);
  if (size === 0) return null;
  const epoch = Math.floor(cursor / size);
  const position = opts.worker + (cursor % size) * opts.workers;
  const perm = epochPermutation(n, opts.seed, epoch);
  return { task: tasks[perm[position] as number] as T, epoch, position, next_cursor: cursor + 1 };
}

/** code-v0's make kwargs for sampling (declared in its kwargs_schema: SAMPLING_KWARGS_SCHEMA). */
export interface SamplingKwargs {
  sampling?: SamplingMode;
  frontier?: Partial<FrontierOptions>;
  epoch?: { worker: number; workers: number; seed?: number; cursor?: number };
}

/** The kwargs_schema properties of SamplingKwargs (validated by the server at make). */
export const SAMPLING_KWARGS_SCHEMA = {
  sampling: { enum: ['uniform', 'frontier', 'epoch'] },
  frontier: {
    type: 'object',
    properties: {
      low: { type: 'number', minimum: 0, maximum: 1 },
      high: { type: 'number', minimum: 0, maximum: 1 },
      min_attempts: { type: 'integer', minimum: 0, maximum: 1_000_000 },
      explore: { type: 'number', minimum: 0, maximum: 1 },
    },
    additionalProperties: false,
  },
  epoch: {
    type: 'object',
    properties: {
      worker: { type: 'integer', minimum: 0, maximum: 1_000_000 },
      workers: { type: 'integer', minimum: 1, maximum: 1_000_000 },
      seed: { type: 'integer', minimum: 0, maximum: 2 ** 31 - 1 },
      cursor: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    },
    required: ['worker', 'workers'],
    additionalProperties: false,
  },
} as const;

/** A bad combination the schema cannot express (low > high, worker >= workers, options of another mode). */
export class SamplingConfigError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = 'SamplingConfigError';
  }
}

/** One session's sampler: the mode from make kwargs, and (epoch) the cursor it advances. */
export class TaskSampler {
  readonly mode: SamplingMode;
  private readonly frontier: FrontierOptions;
  private readonly epoch: EpochOptions | null;
  private cursor: number;

  constructor(
    kwargs: SamplingKwargs,
    private readonly stats: TaskStatsProvider | undefined,
  ) {
    this.mode = kwargs.sampling ?? 'uniform';
    if (kwargs.frontier !== undefined && this.mode !== 'frontier') throw new SamplingConfigError('frontier options need sampling: "frontier"', '/frontier');
    if (kwargs.epoch !== undefined && this.mode !== 'epoch') throw new SamplingConfigError('epoch options need sampling: "epoch"', '/epoch');
    this.frontier = { ...DEFAULT_FRONTIER, ...(kwargs.frontier ?? {}) };
    if (this.frontier.low > this.frontier.high)
      throw new SamplingConfigError(`frontier.low (${this.frontier.low}) is above frontier.high (${this.frontier.high})`, '/frontier/low');
    if (this.mode === 'epoch') {
      const e = kwargs.epoch;
      if (e === undefined) throw new SamplingConfigError('sampling "epoch" needs epoch: {worker, workers}', '/epoch');
      if (e.worker >= e.workers) throw new SamplingConfigError(`epoch.worker (${e.worker}) must be below epoch.workers (${e.workers})`, '/epoch/worker');
      this.epoch = { worker: e.worker, workers: e.workers, seed: e.seed ?? 0 };
    } else this.epoch = null;
    this.cursor = kwargs.epoch?.cursor ?? 0;
  }

  /**
   * The next task of `tasks` (one split, sorted by id). `seed` drives uniform and frontier picks;
   * `cursor` (epoch, a reset option) resumes from a cursor instead of this session's own.
   */
  pick<T extends { id: string }>(tasks: readonly T[], split: string, seed: number, cursor?: number): Picked<T> {
    if (tasks.length === 0) throw new SamplingConfigError(`split ${JSON.stringify(split)} has no tasks`, '/split');
    if (this.mode === 'uniform') return { task: new Rng(seed).pick(tasks) };
    if (this.mode === 'frontier') {
      // The frontier is a training signal: selecting eval tasks by their pass rate would tune to the eval set.
      if (split !== 'train') throw new SamplingConfigError('sampling "frontier" draws training tasks only (split "train")', '/split');
      return pickFrontier(tasks, split, this.stats, this.frontier, new Rng(seed));
    }
    const p = pickEpoch(tasks, this.epoch as EpochOptions, cursor ?? this.cursor);
    if (p === null)
      throw new SamplingConfigError(
        `epoch.worker ${this.epoch?.worker} has no tasks: ${this.epoch?.workers} workers share ${tasks.length} tasks`,
        '/epoch/worker',
      );
    this.cursor = p.next_cursor as number;
    return p;
  }
}
