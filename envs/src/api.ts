// The env API: everything needed to define an environment, in one place.
// Documented in envs/README.md. The shape is part of the shared contract; change it only there.
import type { Bound, EnvSpec, RubricItem, Space, Tasks } from '#protocol/index.js';
import type { SandboxProvider, SandboxRequirement } from './sandbox-api.js';

// The definition's spec fields are the wire EnvSpec's (the registry builds the env_spec from them).
export type { Bound, RubricItem, Tasks };

export interface EnvDefinition<K extends Record<string, unknown> = Record<string, unknown>> {
  id: string;
  description: string;
  observation_space: Space;
  action_space: Space;
  /** The server sets `truncated` when an episode reaches this many steps. null = unlimited. */
  max_episode_steps: number | null;
  reward_range?: [Bound, Bound];
  /** Default false: same seed + same actions => same transitions. */
  stochastic?: boolean;
  /** JSON Schema for make kwargs, compiled once at registration. */
  kwargs_schema?: EnvSpec['kwargs_schema'];
  /** Reward components reported per step in info.reward_components. */
  rubric?: RubricItem[];
  tasks?: Tasks;
  /** Declared => the server hands ctx.sandboxes to create(). */
  sandbox?: SandboxRequirement;
  /**
   * The tasks this env picks from, for the server only (never on the wire): metric labels are task ids
   * from this list (anything else is `_other`, so label cardinality stays bounded) and per-task
   * statistics are kept for these. An env whose reset info names a `task_id` declares it.
   */
  catalog?(): readonly TaskRef[];
  create(ctx: EnvContext, kwargs: K): EnvInstance | Promise<EnvInstance>;
}

/** One task of an env's catalog. */
export interface TaskRef {
  id: string;
  split: string;
  /** Content hash of the task's version, when the env has one. */
  hash?: string;
}

/** Success statistics of one task on one split, from the episodes this server has seen (and its archive). */
export interface TaskStat {
  /** Episodes the env ended (terminated or truncated): the ones with a score. */
  attempts: number;
  /** Of those, the ones that reached full marks. */
  successes: number;
}

/** Read-only view of the server's per-task statistics for one env (EnvContext.task_stats). */
export interface TaskStatsProvider {
  /** The task's statistics on `split`, or undefined when it has none yet. */
  get(task_id: string, split: string): TaskStat | undefined;
}

export interface ResetResult {
  observation: unknown;
  info?: Record<string, unknown>;
}

export interface StepResult {
  observation: unknown;
  reward: number;
  terminated: boolean;
  truncated?: boolean;
  info?: Record<string, unknown>;
}

export interface EnvInstance {
  reset(seed: number | undefined, options: Record<string, unknown>): Promise<ResetResult>;
  /** The server has already checked `action` against action_space. */
  step(action: unknown): Promise<StepResult>;
  close(): Promise<void>;
}

type LogFn = (o: object | string, m?: string) => void;

export interface EnvLogger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

export interface EnvContext {
  /** Aborted when the session closes (client close, connection drop, idle reaping, shutdown). */
  readonly signal: AbortSignal;
  readonly logger: EnvLogger;
  /** Present when the env declares `sandbox` and the server has a driver. */
  readonly sandboxes?: SandboxProvider;
  /**
   * The server's step deadline. An env that runs a bounded sub-task inside a step (a check, a test run)
   * derives that sub-task's limit from it, so the sub-task always ends strictly inside the deadline and
   * the same input always gets the same outcome (never a TIMEOUT one time and a score the next).
   */
  readonly step_timeout_ms?: number;
  /**
   * The server's live per-task statistics for this env (read-only; envs that sample tasks by
   * difficulty use it). Absent when the server keeps none.
   */
  readonly task_stats?: TaskStatsProvider;
  /**
   * Write-only: what the env records for its running episode, kept by the server's trajectory archive
   * so the episode can be re-graded later (`sandgym rescore`). Present only when the server keeps it;
   * an env records only what the agent could see (never hidden tests).
   */
  readonly artifacts?: EpisodeArtifacts;
}

/** EnvContext.artifacts. Names in use: `final_workspace` (a tar of the workspace the env graded last). */
export interface EpisodeArtifacts {
  put(name: string, data: Uint8Array): void;
}

/** Infrastructure failure: reported as SANDBOX_ERROR, never as a reward of 0. */
export class SandboxFailure extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SandboxFailure';
  }
}

/**
 * What this server cannot serve, for a reason no retry changes (its configuration: e.g. a repository task on a driver
 * that runs host tools, not images): reported as UNSUPPORTED (not retryable, scope request: the session stays usable).
 * The message says why and what serves it.
 */
export class Unsupported extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Unsupported';
  }
}

/** Bad make kwargs / reset options detected by the env: reported as INVALID_ARGUMENT. */
export class InvalidArgument extends Error {
  constructor(
    message: string,
    public path = '',
  ) {
    super(message);
    this.name = 'InvalidArgument';
  }
}

/**
 * Identity helper that keeps the kwargs type parameter while exporting a plain EnvDefinition. (`create`
 * is a method, so EnvDefinition<K> is assignable to EnvDefinition: the server validates make kwargs
 * against kwargs_schema before create sees them, which is what makes K true.)
 */
export function defineEnv<K extends Record<string, unknown>>(def: EnvDefinition<K>): EnvDefinition {
  return def;
}
