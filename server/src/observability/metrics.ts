// Prometheus metrics (GET /metrics), fed by the episode hook and the tracker's episode summaries, and
// by values read at scrape time (connections, sessions, queues, socket bytes, sandbox pools). Names,
// units and labels are listed in docs/OBSERVABILITY.md. Label values are bounded: env ids of the
// registry (else `_unknown`), task ids of the env's catalog (else `_other`; `_none` without one),
// registry error codes, and the fixed classes of outcomes.ts. Nothing the client sends becomes a label.
// The step path does metric updates only: cached label children, no allocation. It accepts untimed
// steps (stepTiming 'sampled', step-timing.ts): those count in sandgym_steps_total, not in the
// step-duration histogram. What the hook updates on every step, reset, episode end and error is a
// plain series (step-histogram.ts: numbers folded into the exposition at scrape time), not prom-client's
// Counter/Histogram, whose inc/observe hash a label object on every call; grading and sandbox
// creation (milliseconds to minutes each) keep prom-client's.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EnvRegistry } from '#envs/registry.js';
import type { SandboxCreation } from '../sandbox/index.js';
import type { SandboxService } from '../env-host/sandbox-adapter.js';
import type { CloseEvent, EpisodeObserver, ErrorEvent, OpenEvent, ResetEvent, StepEvent } from './episode-events.js';
import type { EpisodeSummary, EpisodeTracker } from './episode-tracker.js';
import { registerProcessMetrics } from './process-metrics.js';
import { PlainCounter, type Series, StepHistogram } from './step-histogram.js';
import { causeOfError, causeOfZeroReason, isScored, zeroReasonClass, zeroReasonOf, type FailureCause } from './outcomes.js';

/** What the metrics read at scrape time from the server (ServerCore satisfies it). */
export interface ScrapeSources {
  readonly registry: EnvRegistry;
  readonly sandbox: SandboxService | null;
  readonly sessionCount: number;
  readonly connections: { readonly size: number };
  queuedRequests(): number;
  socketBytes(): { read: number; written: number };
}

const UNKNOWN_ENV = '_unknown';
const OTHER_TASK = '_other';
const NO_TASK = '_none';

/** Seconds: per step from sub-millisecond (pure envs) to minutes (code-v0 grading). */
const STEP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const GRADE_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300];
const CREATE_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60];
/** Episode return: shaped rewards in [-1, 1] (code-v0) up to unbounded returns of simple envs. */
const REWARD_BUCKETS = [-1, -0.5, 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 1, 2, 5, 10, 100];
const LENGTH_BUCKETS = [1, 2, 3, 5, 8, 10, 15, 20, 30, 50, 75, 100, 200, 500, 1000];

export interface MetricsOptions {
  /** Also the process metrics of prom-client (process_*, nodejs_*). Default true. */
  processMetrics?: boolean;
  /**
   * Also nodejs_gc_duration_seconds (config `gc_metrics`). Default false: its GC observer makes every
   * young-generation GC dearer (process-metrics.ts), which showed on the step path of in-process envs.
   */
  gcMetrics?: boolean;
}

export class ServerMetrics implements EpisodeObserver {
  readonly name = 'metrics';
  readonly stepTiming = 'sampled';
  readonly registry = new Registry();
  private readonly envIds: Set<string>;
  /** env -> its catalog's task ids (absent: the env has none). */
  private readonly taskIds = new Map<string, Set<string>>();

  private readonly stepDuration: StepHistogram;
  private readonly resetDuration: StepHistogram;
  private readonly gradeDuration: Histogram<'env'>;
  private readonly started: PlainCounter;
  private readonly finished: PlainCounter;
  private readonly episodeReward: StepHistogram;
  private readonly episodeSteps: StepHistogram;
  private readonly failures: PlainCounter;
  private readonly errors: PlainCounter;
  private readonly gradedZero: PlainCounter;
  private readonly sessionsOpened: PlainCounter;
  private readonly createDuration: Histogram<'image' | 'result'>;

  /** Label children cached per key: prom-client's labels() hashes and allocates on every call. */
  private readonly stepChild = new Map<string, Series>();
  /** The last step's env id and series: consecutive steps are mostly of one env (no lookup then). */
  private lastStepEnv = '';
  private lastStepSeries: Series | null = null;
  private stopCreations: (() => void) | null = null;

  constructor(src: ScrapeSources, tracker: EpisodeTracker, opts: MetricsOptions = {}) {
    const reg = this.registry;
    const registers = [reg];
    this.envIds = new Set(src.registry.list().map((e) => e.def.id));
    for (const e of src.registry.list()) {
      const refs = e.def.catalog?.();
      if (refs) this.taskIds.set(e.def.id, new Set(refs.map((r) => r.id)));
    }
    if (opts.processMetrics !== false) registerProcessMetrics(reg, { gc: opts.gcMetrics === true });

    // The step path's histogram: its own preallocated series (step-histogram.ts), not prom-client's observe.
    this.stepDuration = new StepHistogram(
      'sandgym_step_duration_seconds',
      'Time from a step starting to its result (env, sandbox and grading), by env.',
      'env',
      STEP_BUCKETS,
      reg,
    );
    this.resetDuration = new StepHistogram('sandgym_reset_duration_seconds', 'Time from a reset starting to its result, by env.', 'env', STEP_BUCKETS, reg);
    this.gradeDuration = new Histogram({
      name: 'sandgym_grading_duration_seconds',
      help: 'Grading runs (not served from the grade cache), as the env reports them in info.grade.timings_ms.total.',
      labelNames: ['env'],
      buckets: GRADE_BUCKETS,
      registers,
    });
    this.started = new PlainCounter('sandgym_episodes_started_total', 'Episodes started (successful resets).', ['env', 'task'], reg);
    this.finished = new PlainCounter(
      'sandgym_episodes_finished_total',
      'Episodes ended, by outcome (success, failure: scored; timeout, sandbox_error, env_error, abandoned, shutdown: not scored).',
      ['env', 'task', 'outcome'],
      reg,
    );
    this.episodeReward = new StepHistogram('sandgym_episode_reward', 'Return (sum of rewards) of scored episodes.', ['env', 'task'], REWARD_BUCKETS, reg);
    this.episodeSteps = new StepHistogram('sandgym_episode_steps', 'Length in steps of scored episodes.', ['env', 'task'], LENGTH_BUCKETS, reg);
    this.failures = new PlainCounter(
      'sandgym_failures_total',
      'Failures by cause (docs/OBSERVABILITY.md, PROTOCOL.md §11a): agent faults seen in step results and grades, and error replies.',
      ['env', 'cause'],
      reg,
    );
    this.errors = new PlainCounter('sandgym_errors_total', 'Error replies to make, reset and step, by registry code.', ['env', 'op', 'code'], reg);
    this.gradedZero = new PlainCounter(
      'sandgym_graded_zero_total',
      'Grades of zero with a zero_reason (integrity events), by reason class; a rise is the first sign of a policy probing the grader.',
      ['env', 'zero_reason'],
      reg,
    );
    this.sessionsOpened = new PlainCounter('sandgym_sessions_opened_total', 'Sessions opened (successful makes).', ['env'], reg);
    const stepDuration = this.stepDuration;
    new Counter({
      name: 'sandgym_steps_total',
      help: 'Successful steps.',
      labelNames: ['env'],
      registers,
      collect: function () {
        this.reset();
        for (const [labels, n] of stepDuration.totals()) this.inc(labels, n);
      },
    });
    this.createDuration = new Histogram({
      name: 'sandgym_sandbox_create_duration_seconds',
      help: 'Sandbox creation attempts (container start and health check), by image and result (ok, failed).',
      labelNames: ['image', 'result'],
      buckets: CREATE_BUCKETS,
      registers,
    });

    new Gauge({
      name: 'sandgym_connections',
      help: 'Open WebSocket connections.',
      registers,
      collect: function () {
        this.set(src.connections.size);
      },
    });
    new Gauge({
      name: 'sandgym_sessions',
      help: 'Open sessions (including makes in flight).',
      registers,
      collect: function () {
        this.set(src.sessionCount);
      },
    });
    new Gauge({
      name: 'sandgym_episodes_running',
      help: 'Episodes started and not ended.',
      registers,
      collect: function () {
        this.set(tracker.running);
      },
    });
    new Gauge({
      name: 'sandgym_queued_requests',
      help: 'Requests waiting behind a running one, all sessions.',
      registers,
      collect: function () {
        this.set(src.queuedRequests());
      },
    });
    new Counter({
      name: 'sandgym_received_bytes_total',
      help: 'Bytes read from WebSocket connection sockets (frames and upgrade).',
      registers,
      collect: function () {
        this.reset();
        this.inc(src.socketBytes().read);
      },
    });
    new Counter({
      name: 'sandgym_sent_bytes_total',
      help: 'Bytes written to WebSocket connection sockets.',
      registers,
      collect: function () {
        this.reset();
        this.inc(src.socketBytes().written);
      },
    });
    const poolState = (): {
      image: string;
      idle: number;
      in_use: number;
      creating: number;
      wiping?: number;
      waiting: number;
      created: number;
      create_failures: number;
    }[] => {
      const r = src.sandbox?.ready();
      return r?.sandbox?.pools ?? [];
    };
    new Gauge({
      name: 'sandgym_sandbox_pool_sandboxes',
      help: 'Sandboxes of the warm pools by image and state (warm: idle and ready; busy: handed to a session; creating; wiping: released, being wiped in place).',
      labelNames: ['image', 'state'],
      registers,
      collect: function () {
        this.reset();
        for (const p of poolState()) {
          this.inc({ image: p.image, state: 'warm' }, p.idle);
          this.inc({ image: p.image, state: 'busy' }, p.in_use);
          this.inc({ image: p.image, state: 'creating' }, p.creating);
          this.inc({ image: p.image, state: 'wiping' }, p.wiping ?? 0);
        }
      },
    });
    new Gauge({
      name: 'sandgym_sandbox_pool_waiting',
      help: 'Acquirers waiting for a sandbox (the pool is at max_total or still creating).',
      labelNames: ['image'],
      registers,
      collect: function () {
        this.reset();
        for (const p of poolState()) this.inc({ image: p.image }, p.waiting);
      },
    });
    new Counter({
      name: 'sandgym_sandbox_creations_total',
      help: 'Sandbox creation attempts of the warm pools by image and result (ok, failed).',
      labelNames: ['image', 'result'],
      registers,
      collect: function () {
        this.reset();
        for (const p of poolState()) {
          this.inc({ image: p.image, result: 'ok' }, p.created);
          this.inc({ image: p.image, result: 'failed' }, p.create_failures);
        }
      },
    });
    const onCreated = src.sandbox?.onSandboxCreated;
    if (onCreated)
      this.stopCreations = onCreated.call(src.sandbox, (e: SandboxCreation) =>
        this.createDuration.labels(e.image, e.ok ? 'ok' : 'failed').observe(e.ms / 1000),
      );
    tracker.onFinished((s) => this.finishedEpisode(s));
  }

  /** Stops listening to the sandbox layer (server close). */
  close(): void {
    this.stopCreations?.();
    this.stopCreations = null;
  }

  /** The text exposition (Content-Type: `contentType`). */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private env(id: string): string {
    return this.envIds.has(id) ? id : UNKNOWN_ENV;
  }

  private task(env: string, id: string | null | unknown): string {
    if (typeof id !== 'string') return NO_TASK;
    return this.taskIds.get(env)?.has(id) === true ? id : OTHER_TASK;
  }

  private stepSeries(envId: string): Series {
    const env = this.env(envId);
    let h = this.stepChild.get(env);
    if (h === undefined) {
      h = this.stepDuration.child(env);
      this.stepChild.set(env, h);
    }
    this.lastStepEnv = envId;
    this.lastStepSeries = h;
    return h;
  }

  private fail(env: string, cause: FailureCause): void {
    this.failures.child(env, cause).n += 1;
  }

  onOpen(e: OpenEvent): void {
    this.sessionsOpened.child(this.env(e.env_id)).n += 1;
  }

  onReset(e: ResetEvent): void {
    const env = this.env(e.env_id);
    this.resetDuration.observe(this.resetDuration.child(env), e.duration_ms / 1000);
    this.started.child(env, this.task(env, e.info.task_id)).n += 1;
  }

  /** The hot path: cached children, property reads, no allocation on a step without faults. */
  onStep(e: StepEvent): void {
    let h = this.lastStepSeries;
    if (h === null || e.env_id !== this.lastStepEnv) h = this.stepSeries(e.env_id);
    // NaN: a step not timed (step-timing.ts): counted, not observed.
    const d = e.duration_ms;
    if (!Number.isNaN(d)) this.stepDuration.observe(h, d / 1000);
    else this.stepDuration.untimed(h);
    const info = e.info;
    if (info.oom_killed === undefined && info.timed_out === undefined && info.grade === undefined) return;
    const env = this.env(e.env_id);
    if (info.oom_killed === true) this.fail(env, 'oom');
    if (info.timed_out === true) this.fail(env, 'agent_timeout');
    const g = info.grade;
    if (typeof g !== 'object' || g === null) return;
    const grade = g as { cached?: unknown; timings_ms?: { total?: unknown } };
    // A cached grade is the same verdict again (an unchanged workspace): neither a run nor a new event.
    if (grade.cached === true) return;
    const total = grade.timings_ms?.total;
    if (typeof total === 'number' && Number.isFinite(total)) this.gradeDuration.labels(env).observe(total / 1000);
    const z = zeroReasonOf(info);
    if (z !== null) {
      const cls = zeroReasonClass(z);
      this.gradedZero.child(env, cls).n += 1;
      this.fail(env, causeOfZeroReason(cls));
    }
  }

  onClose(e: CloseEvent): void {
    // A sandbox lost outside any call reaches the client as a session_closed event, not an error reply.
    if (e.code === 'SANDBOX_ERROR') this.fail(this.env(e.env_id), 'sandbox_infrastructure');
  }

  onError(e: ErrorEvent): void {
    const env = this.env(e.env_id);
    this.errors.child(env, e.op, e.error.code).n += 1;
    this.fail(env, causeOfError(e.error.code));
  }

  private finishedEpisode(s: EpisodeSummary): void {
    const env = this.env(s.env_id);
    const task = this.task(env, s.task_id);
    this.finished.child(env, task, s.outcome).n += 1;
    if (!isScored(s.outcome)) return;
    this.episodeReward.observe(this.episodeReward.child(env, task), s.return);
    this.episodeSteps.observe(this.episodeSteps.child(env, task), s.steps);
  }
}
