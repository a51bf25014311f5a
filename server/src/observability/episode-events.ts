// The episode hook: what happens to every session and episode, told synchronously to whoever listens
// (metrics, the trajectory archive, task statistics). The session and the connection build an event
// only when an observer is registered (`EpisodeObservers.active`), so a server without observers pays
// one boolean test per operation. Events hold REFERENCES to the values the client gets (action,
// observation, info): nothing is copied or serialised on the step path. An observer that keeps a value
// past its call copies it itself and must never mutate what it is given (the reply is encoded after
// the observers ran). An observer that throws is logged once and skipped for that call; it never
// breaks the session.
import type { ProtocolError, StepResult } from '#protocol/index.js';
import { StepSampling } from './step-timing.js';

/** The session operation an error answered. `make`: the session was never opened (session_id null). */
export type EpisodeOp = 'make' | 'reset' | 'step' | 'close';

/** A session was opened (make succeeded). */
export interface OpenEvent {
  session_id: string;
  env_id: string;
  /** The make kwargs as the client sent them (validated against the env's kwargs_schema). */
  kwargs: Record<string, unknown>;
  /**
   * Whose session it is (the tenant): `token:` and 16 hex digits of its token's SHA-256 on a server with
   * tokens, else `conn:` and the hello's client_group or the connection id. The archive caps memory by it.
   */
  principal?: string;
  /** The connection's id (unique within this server process). */
  connection_id: string;
  /** Wall-clock time of the event, ms since the epoch. */
  t: number;
}

/** An episode started: reset succeeded. */
export interface ResetEvent {
  session_id: string;
  env_id: string;
  /** New for every reset of the server process; every later step/error event of the episode carries it. */
  episode_id: string;
  seed: number | undefined;
  options: Record<string, unknown>;
  observation: unknown;
  info: Record<string, unknown>;
  duration_ms: number;
  t: number;
}

/** A step succeeded (its result is what the client gets). */
/** A step: the protocol's step result (declared once, protocol/schema) with who, which step, the action and timing. */
export interface StepEvent extends StepResult {
  session_id: string;
  env_id: string;
  episode_id: string;
  /** 0 for the first step of the episode. */
  step_index: number;
  action: unknown;
  /**
   * From the step's start to its result; NaN when the step was not timed, which happens only while
   * every step observer declares `stepTiming: 'sampled'` (step-timing.ts says which steps are timed).
   */
  duration_ms: number;
  /** Wall-clock ms since the epoch at the result; at the step's start when it was not timed. */
  t: number;
}

/**
 * A session operation ended in an error (the ProtocolError the client gets: code, scope, details).
 * `session_id` null: a make refused before a session existed (UNKNOWN_ENV, CAPACITY, INVALID_ARGUMENT,
 * UNSUPPORTED, a failed create). `episode_id` null: no episode was running (before the first reset, or
 * the reset itself failed).
 */
export interface ErrorEvent {
  session_id: string | null;
  env_id: string;
  episode_id: string | null;
  op: EpisodeOp;
  error: ProtocolError;
  /** For a step error: the index the step would have had. */
  step_index?: number;
  /** For a step error: the action as the client sent it (a reference, like StepEvent.action). */
  action?: unknown;
  duration_ms: number;
  t: number;
}

/** A session was closed (by the client, the connection, idle reaping, a lost sandbox or shutdown). */
export interface CloseEvent {
  session_id: string;
  env_id: string;
  /** The episode still running when the session closed (it ends unfinished), or null. */
  episode_id: string | null;
  /** Text for people: 'closed by client', 'connection closed', 'idle for N ms', ... */
  reason: string;
  /** For a server-initiated close, the code the client was told (TIMEOUT, SANDBOX_ERROR, SHUTTING_DOWN). */
  code?: 'TIMEOUT' | 'SANDBOX_ERROR' | 'SHUTTING_DOWN';
  t: number;
}

/**
 * What an env recorded for its running episode through EnvContext.artifacts (code-v0: the workspace tar
 * it graded last), for the trajectory archive's re-scoring. Not an observer method: one consumer at most.
 */
export interface ArtifactEvent {
  session_id: string;
  name: string;
  data: Uint8Array;
}

export interface EpisodeObserver {
  /** A name for the log line when it throws. */
  readonly name?: string;
  /**
   * 'sampled': this observer's onStep accepts untimed steps (duration_ms NaN), so the session may skip
   * the clock read that ends a step (step-timing.ts). Default 'every': all steps are timed while it listens.
   */
  readonly stepTiming?: 'every' | 'sampled';
  onOpen?(e: OpenEvent): void;
  onReset?(e: ResetEvent): void;
  onStep?(e: StepEvent): void;
  onError?(e: ErrorEvent): void;
  onClose?(e: CloseEvent): void;
}

interface WarnLogger {
  warn(o: object, msg: string): void;
}

type Method = 'onOpen' | 'onReset' | 'onStep' | 'onError' | 'onClose';

/** The fan-out held by ServerCore (`core.observers`). */
export class EpisodeObservers {
  private list: EpisodeObserver[] = [];
  /** Observers that threw once already (logged once each, still called). */
  private readonly warned = new WeakSet<EpisodeObserver>();
  /** False while nobody listens: callers then build no event at all. */
  active = false;
  /** True while some step observer needs every step timed (one without stepTiming 'sampled'). */
  timeEveryStep = false;
  /** The observers with an onStep (the step path's loop walks only these). */
  private stepList: EpisodeObserver[] = [];
  /** Per-env choice of the synchronous steps to time (step-timing.ts). */
  readonly sampling = new StepSampling();
  /** The consumer of env artifacts (the archive), or null: sessions then give envs no EnvContext.artifacts. */
  artifacts: ((e: ArtifactEvent) => void) | null = null;

  constructor(private readonly log: WarnLogger) {}

  /** Registers an observer; returns the function that removes it. */
  add(o: EpisodeObserver): () => void {
    this.list = [...this.list, o];
    this.listChanged();
    return () => {
      this.list = this.list.filter((x) => x !== o);
      this.listChanged();
    };
  }

  private listChanged(): void {
    this.active = this.list.length > 0;
    this.stepList = this.list.filter((o) => o.onStep !== undefined);
    this.timeEveryStep = this.stepList.some((o) => o.stepTiming !== 'sampled');
  }

  get size(): number {
    return this.list.length;
  }

  open(e: OpenEvent): void {
    this.emit('onOpen', e);
  }

  reset(e: ResetEvent): void {
    this.emit('onReset', e);
  }

  /** The hot one: a plain loop over the step observers (emit's generic method lookup showed in profiles). */
  step(e: StepEvent): void {
    const l = this.stepList;
    for (let i = 0; i < l.length; i++) {
      const o = l[i] as EpisodeObserver;
      try {
        o.onStep?.(e);
      } catch (err) {
        this.threw(o, 'onStep', err);
      }
    }
  }

  error(e: ErrorEvent): void {
    this.emit('onError', e);
  }

  close(e: CloseEvent): void {
    this.emit('onClose', e);
  }

  private emit<M extends Method>(method: M, e: Parameters<NonNullable<EpisodeObserver[M]>>[0]): void {
    // The list is replaced, never mutated, so an observer that unsubscribes during a call is safe.
    for (const o of this.list) {
      const f = o[method] as ((ev: typeof e) => void) | undefined;
      if (f === undefined) continue;
      try {
        f.call(o, e);
      } catch (err) {
        this.threw(o, method, err);
      }
    }
  }

  private threw(o: EpisodeObserver, method: Method, err: unknown): void {
    if (this.warned.has(o)) return;
    this.warned.add(o);
    this.log.warn({ err, observer: o.name ?? 'anonymous', method }, 'episode observer threw (logged once per observer; the session goes on)');
  }
}

let episodeCounter = 0;
const processTag = `${Date.now().toString(36)}${Math.floor(Math.random() * 36 ** 4)
  .toString(36)
  .padStart(4, '0')}`;

/**
 * A new episode id: unique within the process, and across processes in practice (start time and a
 * random tag), sortable by creation within one process. Cheap: a counter, no crypto on reset.
 */
export function newEpisodeId(): string {
  episodeCounter++;
  return `e_${processTag}_${episodeCounter.toString(36).padStart(6, '0')}`;
}
