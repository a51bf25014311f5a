// One env session: its state machine, its FIFO queue and its operations (open, reset, step, close)
// with deadlines and the error mapping of the contract (mapEnvError). Only this class changes a
// session's state, its queue and its idle clock. Requests for a session run strictly in order; different
// sessions run concurrently (each drains its own queue; each job's owner hears its reply).
// Over 500 lines on purpose: the state, the queue and the idle clock change together on every operation, and
// the issue-31 rule is that only this class changes them (split, each part would need the others' internals).
import type { FastifyBaseLogger } from 'fastify';
import {
  checkSpace,
  findUnencodable,
  isEncodable,
  protocolError,
  type BatchItem,
  type CloseRequest,
  type CloseResult,
  type ResetRequest,
  type ResetResult,
  type StepRequest,
  type StepResult,
} from '#protocol/index.js';
import type { EnvContext, EnvInstance, EnvLogger, ResetResult as EnvResetResult, StepResult as EnvStepResult, TaskStatsProvider } from '#envs/api.js';
import type { RegisteredEnv } from '#envs/registry.js';
import { callAsync, DeadlineExceeded, monoNow, withDeadline, type DeadlineSweeper } from './deadline.js';
import { AdmissionRefused, invalidInput, mapEnvError, ProtocolError, reasonOf, sessionClosed, type EnvOp } from '../errors.js';
import { newEpisodeId, type EpisodeObservers } from '../observability/episode-events.js';
import { loopTurn, sameTurn, type SyncSampler } from '../observability/step-timing.js';
import type { SandboxService, SessionSandboxes } from '../env-host/sandbox-adapter.js';
import type { SessionAdmission } from '../admission/session-admission.js';
import { CAPACITY_RETRY_MS } from '../admission/capacity-ledger.js';
import type { ServerConfig } from '../config.js';

/** created -> running -> needs_reset (episode over) ; failed (TIMEOUT/ENV_ERROR/SANDBOX_ERROR) ; closed. */
export type SessionState = 'created' | 'running' | 'needs_reset' | 'failed' | 'closed';

/** A request that targets one session: reset, step or close, standalone or as a batch item. */
export type SessionRequest = ResetRequest | StepRequest | CloseRequest | BatchItem;

/** The wire result of a session request. */
export type SessionResult = ResetResult | StepResult | CloseResult;

/** A reply target: a standalone request (batch null) or one slot of a batch. */
export interface BatchCollector {
  id: number;
  binary: boolean;
  results: unknown[];
  remaining: number;
}

/** Who hears a job's reply: the connection that received it (it may forward it after a resume). */
export interface JobOwner {
  settle(s: Session, job: Job, result: SessionResult, error: ProtocolError | null): void;
}

export interface Job {
  owner: JobOwner;
  /** The request (or batch item): type + session + params. */
  item: SessionRequest;
  id: number;
  binary: boolean;
  batch: BatchCollector | null;
  index: number;
  /** Frame bytes this request holds while it waits (max_queued_bytes). */
  bytes: number;
}

export interface OpLimits {
  step_timeout_ms: number;
  reset_timeout_ms: number;
  /** The session queue's limits: requests waiting behind the running one, and their frame bytes. */
  max_queued_requests: number;
  max_queued_bytes: number;
  deadlines: DeadlineSweeper;
}

/** What opening a session needs of the server (ServerCore satisfies it; a session never reaches further). */
export interface SessionHost {
  readonly log: FastifyBaseLogger;
  readonly config: Pick<ServerConfig, 'step_timeout_ms' | 'reset_timeout_ms'>;
  readonly sandbox: Pick<SandboxService, 'forSession'> | null;
  readonly taskStatsFor: ((envId: string) => TaskStatsProvider) | null;
  readonly observers: EpisodeObservers;
  readonly deadlines: DeadlineSweeper;
}

/** How long close waits for env.close() before giving up on it. */
const CLOSE_TIMEOUT_MS = 10_000;

/** Epoch ms at monoNow() 0, read once (a step's wall-clock time is derived from its monotonic readings). */
const MONO_EPOCH = Date.now() - monoNow();

export class Session {
  private current: SessionState = 'created';
  /** Steps taken in the current episode (for server-enforced truncation). */
  private steps = 0;
  /** Why the session failed (reported in RESET_NEEDED). */
  private failReason = '';
  /**
   * A timed-out env call that may still be running. Its late result is discarded, and the next
   * reset waits for it (within its own deadline) so the env never sees two calls at once.
   */
  private straggler: Promise<unknown> | null = null;
  /** Date.now() of the last request in or out (idle reaping); paused while the connection is detached. */
  private lastActive = Date.now();
  /** Requests waiting behind the running one, in order. */
  private readonly queue: Job[] = [];
  /** Sum of the waiting jobs' bytes. */
  private queuedBytes = 0;
  /** A request of the queue is running. */
  private running = false;
  /** The current episode's id (set by each successful reset), and whether it is still running. */
  private episodeId: string | null = null;
  private episodeOpen = false;
  /** Which of this env's synchronous steps are timed for the observers (step-timing.ts). */
  private readonly sampler: SyncSampler;

  private constructor(
    readonly id: string,
    readonly env: RegisteredEnv,
    private readonly instance: EnvInstance,
    private readonly abort: AbortController,
    /** The session's log context; `logger` adds the episode's (episode and task ids) once reset. */
    private readonly logs: LogContext,
    private readonly sandboxes: SessionSandboxes | null,
    private readonly deadlines: DeadlineSweeper,
    private readonly observers: EpisodeObservers,
    /** Its side of the admission queue (PROTOCOL.md §6a): the connection sets each reset's fields on it. */
    readonly admission: SessionAdmission | null = null,
  ) {
    this.sampler = observers.sampling.samplerFor(env.def.id);
  }

  /** Every line of a session carries session and env; of an episode, also episode and task. */
  get logger(): FastifyBaseLogger {
    return this.logs.current;
  }

  /** The running episode's id, or null (none started, or it ended: terminated, truncated, failed). */
  get openEpisodeId(): string | null {
    return this.episodeOpen ? this.episodeId : null;
  }

  /**
   * Creates the env instance (under the make deadline, with its sandboxes when it declares one).
   * Resolves with the session in state `created`, or with the wire error; never rejects.
   */
  static async open(
    id: string,
    entry: RegisteredEnv,
    kwargs: Record<string, unknown>,
    core: SessionHost,
    onSandboxLost: (reason: string) => void,
    /** Its side of the admission queue (sandboxed envs on a server with a scheduler), else null. */
    admission: SessionAdmission | null = null,
  ): Promise<Session | ProtocolError> {
    const abort = new AbortController();
    const logger = core.log.child({ session: id, env: entry.def.id });
    const logs: LogContext = { session: logger, current: logger };
    let sandboxes: SessionSandboxes | null = null;
    let creating: Promise<EnvInstance> | null = null;
    try {
      if (entry.def.sandbox && core.sandbox) sandboxes = core.sandbox.forSession(id, abort.signal, onSandboxLost, admission);
      // task_stats: the server's per-task statistics for this env, read-only (difficulty-based sampling).
      const stats = core.taskStatsFor?.(entry.def.id);
      const base = { signal: abort.signal, logger: envLogger(logs), step_timeout_ms: core.config.step_timeout_ms, ...(stats ? { task_stats: stats } : {}) };
      // EnvContext.artifacts only when the archive keeps them: an env records nothing otherwise.
      const sink = core.observers.artifacts;
      const artifacts = sink ? { put: (name: string, data: Uint8Array) => sink({ session_id: id, name, data }) } : undefined;
      const ctx: EnvContext = { ...base, ...(sandboxes ? { sandboxes } : {}), ...(artifacts ? { artifacts } : {}) };
      creating = callAsync(() => entry.def.create(ctx, kwargs));
      const instance = await core.deadlines.race(creating, core.config.reset_timeout_ms, 'make');
      if (!instance || typeof instance.reset !== 'function' || typeof instance.step !== 'function' || typeof instance.close !== 'function') {
        throw new Error(`env '${entry.def.id}' create() did not return {reset, step, close}`);
      }
      return new Session(id, entry, instance, abort, logs, sandboxes, core.deadlines, core.observers, sandboxes ? admission : null);
    } catch (e) {
      abort.abort();
      if (sandboxes) void sandboxes.releaseAll().catch(() => undefined);
      // A late instance belongs to nobody: close it when it arrives.
      if (e instanceof DeadlineExceeded) void creating?.then((inst) => inst?.close?.()).catch(() => undefined);
      const pe = mapEnvError(e, 'make');
      if (pe.code === 'ENV_ERROR') logger.warn({ err: e }, 'session make failed');
      return pe;
    }
  }

  get state(): SessionState {
    return this.current;
  }

  /** A method, not a comparison of `state`: TypeScript would keep a narrowing of it across an await. */
  isClosed(): boolean {
    return this.current === 'closed';
  }

  /** Idle means nothing queued or running; only idle sessions are reaped. */
  isIdleSince(cutoff: number): boolean {
    return !this.running && this.queue.length === 0 && this.lastActive < cutoff;
  }

  /** A request of this session is running. */
  get busy(): boolean {
    return this.running;
  }

  /** Requests waiting behind the running one. */
  get waiting(): number {
    return this.queue.length;
  }

  /** A request arrived for this session: it is not idle. */
  touch(): void {
    this.lastActive = Date.now();
  }

  /**
   * The connection was away `ms` (detached until a resume): idle time is not counted while detached (the
   * grace period bounds it), but a resume is no activity either, so the clock moves by the time away.
   */
  idleClockPaused(ms: number): void {
    this.lastActive += ms;
  }

  /** CAPACITY when one more waiting request of `bytes` would pass the queue's limits, else null. */
  queueFull(bytes: number, limits: OpLimits): ProtocolError | null {
    let limit: string | null = null;
    let max = 0;
    if (this.queue.length >= limits.max_queued_requests) [limit, max] = ['max_queued_requests', limits.max_queued_requests];
    else if (this.queue.length > 0 && this.queuedBytes + bytes > limits.max_queued_bytes) [limit, max] = ['max_queued_bytes', limits.max_queued_bytes];
    if (limit === null) return null;
    const reason = `session queue ${limit} (${max}) reached`;
    return protocolError('CAPACITY', { reason }, { reason, limit, retry_after_ms: CAPACITY_RETRY_MS });
  }

  /** Queues a request (checked with queueFull by the caller) and starts the queue if idle; job.owner hears its reply. */
  submit(job: Job, limits: OpLimits): void {
    this.queuedBytes += job.bytes;
    this.queue.push(job);
    if (!this.running) void this.drain(limits);
  }

  private async drain(limits: OpLimits): Promise<void> {
    this.running = true;
    let job: Job | undefined;
    try {
      while ((job = this.queue.shift()) !== undefined) {
        this.queuedBytes -= job.bytes;
        let result: SessionResult = {};
        let error: ProtocolError | null = null;
        try {
          // A reset's scheduling fields (PROTOCOL.md §6a) apply to this episode; its events name this frame.
          if (job.item.type === 'reset' && this.admission !== null) this.admission.begin(job.id, job.item);
          // run() checks an env result's encodability, once; the reply is encoded without a second check.
          result = await this.run(job.item, limits, job.binary);
        } catch (e) {
          if (e instanceof ProtocolError) error = e;
          else {
            this.logger.error({ err: e }, 'internal error in session op');
            error = protocolError('INTERNAL', { reason: reasonOf(e) });
          }
        }
        this.lastActive = Date.now();
        job.owner.settle(this, job, result, error);
      }
    } catch (e) {
      // Only a server bug lands here; keep the session usable rather than wedged busy.
      this.logger.error({ err: e }, 'internal error draining a session queue');
    } finally {
      this.running = false;
      if (this.queue.length > 0) void this.drain(limits);
    }
  }

  /**
   * Runs one request of this session's queue. Resolves with the wire result, already checked to be
   * encodable in the reply's encoding (binary: msgpack), or rejects with a ProtocolError.
   */
  run(item: SessionRequest, limits: OpLimits, binary: boolean): Promise<SessionResult> {
    if (this.current === 'closed') return item.type === 'close' ? Promise.resolve({}) : Promise.reject(sessionClosed(this.id));
    // Observed only when someone listens: otherwise no timing, no event objects. A step is observed
    // inside step() itself: a wrapper would add a promise and an await to every step.
    if (this.observers.active && item.type === 'reset') return this.resetObserved(item, limits, binary);
    switch (item.type) {
      case 'step':
        return this.step(item.action, limits, binary);
      case 'reset':
        return this.reset(item.seed, item.options ?? {}, limits, binary);
      case 'close':
        return this.close().then(() => ({}));
    }
  }

  /** run() for a reset, telling the observers its result or its error. */
  private async resetObserved(item: SessionRequest & { type: 'reset' }, limits: OpLimits, binary: boolean): Promise<SessionResult> {
    const t0 = performance.now();
    const options = item.options ?? {};
    try {
      const r = await this.reset(item.seed, options, limits, binary);
      this.observers.reset({
        session_id: this.id,
        env_id: this.env.def.id,
        episode_id: this.episodeId as string,
        seed: item.seed,
        options,
        observation: r.observation,
        info: r.info,
        duration_ms: performance.now() - t0,
        t: Date.now(),
      });
      return r;
    } catch (e) {
      if (e instanceof ProtocolError)
        this.observers.error({
          session_id: this.id,
          env_id: this.env.def.id,
          episode_id: null,
          op: 'reset',
          error: e,
          duration_ms: performance.now() - t0,
          t: Date.now(),
        });
      throw e;
    }
  }

  /**
   * Abort the env's signal first (so a hung step can stop), answer a running reset/step with
   * `abandonWith` without waiting for it, then env.close() bounded by a deadline, then release its
   * sandboxes. Idempotent; never throws.
   */
  async close(abandonWith: ProtocolError = sessionClosed(this.id)): Promise<void> {
    if (this.current === 'closed') return;
    this.current = 'closed';
    this.abort.abort();
    // A reset or step still running is abandoned now: its reply goes out (UNKNOWN_SESSION, closed)
    // without waiting for an env that may not honour the signal.
    if (this.running) this.deadlines.abandon(this, abandonWith);
    try {
      await withDeadline(
        Promise.resolve().then(() => this.instance.close()),
        CLOSE_TIMEOUT_MS,
        'close',
      );
    } catch (e) {
      this.logger.warn({ err: e }, 'env close failed');
    }
    if (this.sandboxes) {
      try {
        await this.sandboxes.releaseAll();
      } catch (e) {
        this.logger.warn({ err: e }, 'sandbox release failed');
      }
    }
  }

  private async step(action: unknown, limits: OpLimits, binary: boolean): Promise<StepResult> {
    // The start is the deadline's start too (one clock read either way); the loop iteration tells the
    // observers' timing whether the step waited for the loop (step-timing.ts). What the event names is
    // read before the step.
    const t0 = monoNow();
    const turn = this.observers.active ? loopTurn() : -1;
    const episode = this.episodeOpen ? this.episodeId : null;
    const index = this.steps;
    try {
      if (this.current !== 'running') throw this.resetNeeded();
      const bad = checkSpace(this.env.def.action_space, action);
      // Paths and reasons quote the action's own keys: clipped, never echoed whole.
      if (bad) throw invalidInput('INVALID_ACTION', bad.path, bad.reason);
      let out: EnvStepResult;
      try {
        out = await limits.deadlines.race(this.instance.step(action), limits.step_timeout_ms, 'step', this, t0);
      } catch (e) {
        if (this.isClosed()) throw e instanceof ProtocolError ? e : sessionClosed(this.id);
        throw this.failed(e, 'step');
      }
      if (this.isClosed()) throw sessionClosed(this.id);
      const problem = checkStepResult(out);
      if (problem) throw this.failed(new Error(problem), 'step');
      this.steps++;
      const max = this.env.def.max_episode_steps;
      // Gymnasium semantics: a step that terminates is not also a time-limit truncation, even when it
      // is the last allowed step (check_env rejects both flags on one step).
      const truncated = !out.terminated && (out.truncated === true || (max !== null && this.steps >= max));
      if (out.terminated || truncated) {
        this.current = 'needs_reset';
        this.episodeOpen = false;
      }
      const r = this.encodable(
        { observation: out.observation, reward: out.reward, terminated: out.terminated, truncated, info: out.info ?? {} },
        binary,
        'step',
      );
      const obs = this.observers;
      if (obs.active) {
        // The end is read only for a step the observers time (clock reads cost ~0.1 µs in a VM):
        // every one while an observer needs it, one that waited for the loop, or a sampled one.
        const timed = obs.timeEveryStep || turn < 0 || !sameTurn(turn) || this.sampler.take(t0);
        const now = timed ? monoNow() : Number.NaN;
        obs.step({
          session_id: this.id,
          env_id: this.env.def.id,
          episode_id: episode as string,
          step_index: index,
          action,
          observation: r.observation,
          reward: r.reward,
          terminated: r.terminated,
          truncated: r.truncated,
          info: r.info,
          duration_ms: now - t0,
          t: MONO_EPOCH + (timed ? now : t0),
        });
      }
      return r;
    } catch (e) {
      if (this.observers.active && e instanceof ProtocolError) {
        this.observers.error({
          session_id: this.id,
          env_id: this.env.def.id,
          episode_id: episode,
          op: 'step',
          error: e,
          step_index: index,
          action,
          duration_ms: monoNow() - t0,
          t: Date.now(),
        });
      }
      throw e;
    }
  }

  private async reset(seed: number | undefined, options: Record<string, unknown>, limits: OpLimits, binary: boolean): Promise<ResetResult> {
    let out: EnvResetResult;
    try {
      const prior = this.straggler;
      const call = prior ? prior.then(() => this.instance.reset(seed, options)) : this.instance.reset(seed, options);
      // With an admission queue the deadline pauses while the sandbox waits there (it has its own).
      out = await (this.admission
        ? this.admission.race(call, limits.reset_timeout_ms, limits.deadlines, this)
        : limits.deadlines.race(call, limits.reset_timeout_ms, 'reset', this));
    } catch (e) {
      if (this.isClosed()) throw e instanceof ProtocolError ? e : sessionClosed(this.id);
      throw this.failed(e, 'reset');
    }
    if (this.isClosed()) throw sessionClosed(this.id);
    if (typeof out !== 'object' || out === null || out.observation === undefined) throw this.failed(new Error('reset returned no observation'), 'reset');
    if (out.info !== undefined && (typeof out.info !== 'object' || out.info === null))
      throw this.failed(new Error('reset returned a non-object info'), 'reset');
    this.straggler = null;
    this.steps = 0;
    this.current = 'running';
    this.failReason = '';
    this.startEpisode(out.info);
    return this.encodable({ observation: out.observation, info: out.info ?? {} }, binary, 'reset');
  }

  /** A new episode id, and a log context naming it and its task (the env's info.task_id, when it has one). */
  private startEpisode(info: Record<string, unknown> | undefined): void {
    this.episodeId = newEpisodeId();
    this.episodeOpen = true;
    const task = info?.task_id;
    const bindings: Record<string, string> = { episode: this.episodeId };
    // Bounded: an env's task id is its own text, but a log line must not carry an unbounded one.
    if (typeof task === 'string') bindings.task = task.length > 200 ? `${task.slice(0, 199)}…` : task;
    this.logs.current = this.logs.session.child(bindings);
  }

  /**
   * The one encodability check of a reply that carries env values (the connection encodes the frame
   * around it without checking again). A value outside the wire data model (NaN, Infinity, a class
   * instance...) is the env's fault: ENV_ERROR, and the session is poisoned as for any env error.
   */
  private encodable<T extends ResetResult | StepResult>(result: T, binary: boolean, op: 'reset' | 'step'): T {
    if (isEncodable(result, binary ? 'msgpack' : 'json')) return result;
    const bad = findUnencodable(result, binary ? 'msgpack' : 'json');
    throw this.failed(new Error(`env returned a value that cannot be encoded${bad ? ` at ${bad.path || '/'}: ${bad.reason}` : ''}`), op);
  }

  private resetNeeded(): ProtocolError {
    const state = this.current;
    const reason =
      state === 'created'
        ? 'call reset before step'
        : state === 'needs_reset'
          ? 'the episode has ended'
          : `the session failed (${this.failReason}); reset or close it`;
    return protocolError('RESET_NEEDED', { reason }, { reason, state });
  }

  /** Maps a failed env call to its wire error; a session-scope error poisons the session. */
  private failed(e: unknown, op: EnvOp): ProtocolError {
    const pe = mapEnvError(e, op);
    if (e instanceof DeadlineExceeded) this.straggler = e.straggler;
    if (e instanceof AdmissionRefused && this.current === 'running') {
      // A reset refused by the admission queue (CAPACITY) left the env between episodes: reset again.
      this.current = 'needs_reset';
      this.episodeOpen = false;
    }
    if (pe.scope !== 'session') return pe;
    if (pe.code === 'TIMEOUT') this.logger.warn({ op, timeout_ms: pe.details?.timeout_ms }, 'session timed out');
    else if (pe.code === 'SANDBOX_ERROR') this.logger.warn({ op, reason: pe.details?.reason }, 'session sandbox failed');
    else this.logger.warn({ op, err: e }, 'session env error');
    if (this.current !== 'closed') {
      this.current = 'failed';
      this.failReason = pe.code;
    }
    this.episodeOpen = false;
    return pe;
  }
}

/** The session's loggers: `session` (session, env) and `current` (plus episode and task once reset). */
interface LogContext {
  readonly session: FastifyBaseLogger;
  current: FastifyBaseLogger;
}

/** The env's logger (EnvContext.logger): always the session's current context, so env lines name the episode too. */
function envLogger(logs: LogContext): EnvLogger {
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (o: object | string, m?: string): void => {
      if (typeof o === 'string') logs.current[level](o);
      else logs.current[level](o, m);
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

function checkStepResult(out: EnvStepResult): string | null {
  if (typeof out !== 'object' || out === null) return 'step returned no result object';
  if (typeof out.reward !== 'number' || !Number.isFinite(out.reward)) return `step returned a non-finite reward (${String(out.reward)})`;
  if (typeof out.terminated !== 'boolean') return 'step returned a non-boolean terminated';
  if (out.truncated !== undefined && typeof out.truncated !== 'boolean') return 'step returned a non-boolean truncated';
  if (out.observation === undefined) return 'step returned no observation';
  if (out.info !== undefined && (typeof out.info !== 'object' || out.info === null || Array.isArray(out.info))) return 'step returned a non-object info';
  return null;
}
