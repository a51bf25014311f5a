// The wiring of the admission scheduler (docs/SCHEDULING.md): the one object that owns a Scheduler
// core (server/src/scheduler, sans-I/O) for a PooledSandboxService and carries its decisions out with
// timers and promises. Callers (sandbox-adapter.ts's SessionProvider, the connection's group request)
// `request()` units and await the admission; this object calls schedule() after every event and when
// nextDeadline() comes (one timer, not one per request), resolves admissions, answers expiries with
// CAPACITY, tells holders they are preempted, and refreshes the waiters' progress at most once a second
// with one progressAll pass. It knows no sockets, sessions or sandboxes: listeners do.
import { protocolError, type ProtocolError } from '#protocol/index.js';
import type { ResolvedScheduling, SchedulingGrant } from '../config.js';
import { AdmissionRefused } from '../errors.js';
import { GroupTooLargeError, Scheduler, SchedulerError, type FailureOutcome, type Progress } from './scheduler/index.js';

/** How often waiters' queued events are refreshed (PROTOCOL.md §6a: at most once a second). */
export const PROGRESS_INTERVAL_MS = 1000;
/** Suggested wait after a CAPACITY from the queue. */
const RETRY_AFTER_MS = 1000;

/** What the owner of a request hears of it. All optional; called synchronously from the driver. */
export interface AdmissionListener {
  /** Still waiting: on enqueue, then at most once a second while the figures change. */
  queued?(p: Progress, cls: string): void;
  /** Admitted after a queued event (a request admitted at once gets neither). */
  admitted?(waitedMs: number): void;
  /** The scheduler reclaims this holder's units for `forId`: close it with PREEMPTED, then release. */
  preempt?(forId: string): void;
}

/** The fields of a request the wiring computed from the client's ask and its grant. */
export interface AdmissionRequest {
  id: string;
  client: string;
  cls: string;
  /** Already capped at max_queue_timeout_ms. */
  queueTimeoutMs: number;
  units?: number;
  preemptible?: boolean;
}

/** What a make/reset/group asked for, before the grant is applied. */
export interface SchedulingAsk {
  priority?: string;
  queue_timeout_ms?: number;
  preemptible?: boolean;
}

/** A client's resolved scheduling parameters (the grant applied to its ask). */
export interface SchedulingParams {
  cls: string;
  queueTimeoutMs: number;
  preemptible: boolean;
}

/** Counters and gauges for /metrics (scheduler-metrics.ts); the driver only calls them. */
export interface SchedulerObserver {
  admitted(cls: string, waitedMs: number): void;
  expired(cls: string, reason: string): void;
  refused(cls: string, reason: string): void;
  preempted(cls: string): void;
  retried(cls: string, outcome: FailureOutcome['action']): void;
}

interface Waiter {
  cls: string;
  resolve: (attempt: number) => void;
  reject: (e: Error) => void;
  listener: AdmissionListener;
  /** A queued event went out: the admission is announced too. */
  announced: boolean;
  /** The last figures sent, so an unchanged wait sends nothing. */
  last: string;
  cleanup: () => void;
}

/** An abort of a wait (session closed, connection gone): the request left the queue. */
export class AdmissionAborted extends Error {
  override name = 'AdmissionAborted';
}

export class SchedulerDriver {
  readonly core: Scheduler;
  private readonly waiting = new Map<string, Waiter>();
  private readonly holders = new Map<string, { cls: string; listener: AdmissionListener }>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  private progressTimer: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private seq = 0;
  private closed = false;
  observer: SchedulerObserver | null = null;

  constructor(
    readonly config: ResolvedScheduling,
    readonly capacity: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    const weights: Record<string, number> = {};
    for (const [token, g] of config.grants) weights[`token:${token}`] = g.weight;
    this.core = new Scheduler({
      capacity,
      classes: config.classes,
      maxQueued: config.max_queued,
      maxQueuedPerClient: config.max_queued_per_client,
      retryBudget: config.retry_budget,
      maxGroupSize: Math.min(config.max_group_size, Math.max(1, capacity)),
      weights,
      defaultWeight: config.default_grant.weight,
      preemptibleClasses: config.preemptible_classes,
      preemptGraceMs: config.preempt_grace_ms,
    });
  }

  /** The largest group that can ever be admitted here. */
  get maxGroupSize(): number {
    return Math.min(this.config.max_group_size, Math.max(1, this.capacity));
  }

  newId(prefix: string): string {
    return `${prefix}${(++this.seq).toString(36)}`;
  }

  /**
   * The client key and grant of a connection: `token:<sha256 of the token>` with tokens (the grant the
   * operator configured for it, else default_grant), else `conn:<client_group or connection id>`.
   * `principal` is the connection's principal (resume.ts principalOf: the token's sha256, hex).
   */
  clientOf(principal: string | null, group: string | undefined, connectionId: string): { client: string; grant: Required<SchedulingGrant> } {
    if (principal !== null) return { client: `token:${principal}`, grant: this.config.grants.get(principal) ?? this.config.default_grant };
    return { client: `conn:${group ?? connectionId}`, grant: this.config.default_grant };
  }

  /** The granted classes, highest first, and the class of a request that names none. */
  classesOf(grant: Required<SchedulingGrant>): { allowed: string[]; dflt: string } {
    const allowed = this.config.classes.filter((c) => grant.classes.includes(c));
    const d = this.config.classes.indexOf(this.config.default_class);
    // The default class when granted, else the highest granted class below it, else the lowest granted.
    const dflt = allowed.find((c) => this.config.classes.indexOf(c) >= d) ?? (allowed[allowed.length - 1] as string);
    return { allowed, dflt };
  }

  /**
   * Applies a grant to what a request asked (`base`: the session's defaults from make). A class the
   * grant does not include is refused with INVALID_ARGUMENT naming the allowed ones: a client can never
   * raise its own priority, and a refusal says so instead of silently running it lower.
   */
  resolve(grant: Required<SchedulingGrant>, ask: SchedulingAsk, base?: SchedulingParams): SchedulingParams {
    const { allowed, dflt } = this.classesOf(grant);
    let cls = base?.cls ?? dflt;
    if (ask.priority !== undefined) {
      if (!allowed.includes(ask.priority)) {
        const reason = this.config.classes.includes(ask.priority)
          ? `priority class '${ask.priority}' is not granted to this client (allowed: ${allowed.join(', ')})`
          : `unknown priority class '${ask.priority.slice(0, 64)}' (allowed: ${allowed.join(', ')})`;
        throw new AdmissionRefused(protocolError('INVALID_ARGUMENT', { path: '/priority', reason }, { path: '/priority', reason, allowed }));
      }
      cls = ask.priority;
    }
    const max = this.config.max_queue_timeout_ms;
    const queueTimeoutMs = ask.queue_timeout_ms !== undefined ? Math.min(ask.queue_timeout_ms, max) : (base?.queueTimeoutMs ?? max);
    const preemptible = ask.preemptible ?? base?.preemptible ?? false;
    return { cls, queueTimeoutMs, preemptible };
  }

  /**
   * Queues a request and resolves (with the creation attempt) when it is admitted. Rejects with
   * AdmissionRefused (CAPACITY: queue_full at once, queue_timeout at the deadline) or AdmissionAborted
   * (`signal`). Synchronous errors of the core (a group too large) become INVALID_ARGUMENT.
   */
  request(req: AdmissionRequest, listener: AdmissionListener, signal?: AbortSignal): Promise<number> {
    if (this.closed) return Promise.reject(new AdmissionRefused(protocolError('SHUTTING_DOWN')));
    if (signal?.aborted) return Promise.reject(new AdmissionAborted('aborted before it was queued'));
    const now = this.now();
    // A timeout of 0 still gets one look at what is free now: the deadline is the next millisecond.
    const deadline = now + Math.max(1, req.queueTimeoutMs);
    let res;
    try {
      res = this.core.submit({ id: req.id, client: req.client, cls: req.cls, deadline, units: req.units ?? 1, preemptible: req.preemptible }, now);
    } catch (e) {
      if (e instanceof GroupTooLargeError) {
        const reason = `a group of ${e.units} can never be admitted at once here (limit ${e.limit})`;
        return Promise.reject(new AdmissionRefused(protocolError('INVALID_ARGUMENT', { path: '/size', reason }, { path: '/size', reason, limit: e.limit })));
      }
      if (e instanceof SchedulerError)
        return Promise.reject(new AdmissionRefused(protocolError('INVALID_ARGUMENT', { path: '', reason: e.message }, { path: '', reason: e.message })));
      throw e;
    }
    if (!res.ok) {
      this.observer?.refused(req.cls, res.reason);
      return Promise.reject(new AdmissionRefused(res.reason === 'deadline_passed' ? queueTimeout(req.queueTimeoutMs, 0) : queueFull(res.reason, res.limit)));
    }
    return new Promise<number>((resolve, reject) => {
      const onAbort = (): void => {
        if (!this.waiting.has(req.id)) return;
        this.waiting.delete(req.id);
        this.core.cancel(req.id);
        reject(new AdmissionAborted('the request left the queue (session or connection closed)'));
        this.run();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const cleanup = (): void => signal?.removeEventListener('abort', onAbort);
      this.waiting.set(req.id, { cls: req.cls, resolve, reject, listener, announced: false, last: '', cleanup });
      this.run();
      const w = this.waiting.get(req.id);
      if (w) {
        // Still waiting after one look: tell the client where it stands.
        this.announce(req.id, w, this.core.progress(req.id));
        this.armProgress();
      }
    });
  }

  /**
   * A creation for an admitted request failed. Requeued (single request): resolves again when it is
   * readmitted, so the caller just awaits and retries; recreate (group member): resolves at once;
   * give up: rejects with SANDBOX_ERROR's reason (the caller maps it). `signal` aborts a requeued wait.
   */
  async creationFailed(id: string, listener: AdmissionListener, signal?: AbortSignal, member?: number): Promise<FailureOutcome> {
    const h = this.holders.get(id);
    const cls = h?.cls ?? '';
    const out = this.core.creationFailed(id, this.now(), member);
    this.observer?.retried(cls, out.action);
    if (out.action === 'give_up' && out.last) this.holders.delete(id);
    if (out.action !== 'requeued') {
      this.run();
      return out;
    }
    this.holders.delete(id);
    await new Promise<number>((resolve, reject) => {
      const onAbort = (): void => {
        if (!this.waiting.has(id)) return;
        this.waiting.delete(id);
        this.core.cancel(id);
        reject(new AdmissionAborted('the request left the queue (session or connection closed)'));
        this.run();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const cleanup = (): void => signal?.removeEventListener('abort', onAbort);
      this.waiting.set(id, { cls, resolve, reject, listener, announced: false, last: '', cleanup });
      this.run();
    });
    return out;
  }

  /** The holder finished (its sandbox released, or it was preempted and gave it back). */
  release(id: string): void {
    if (!this.holders.delete(id)) return;
    this.core.release(id, this.now());
    this.run();
  }

  /** An admitted request that never got its sandbox for a reason that is not infrastructure (a bad limit, an abort). */
  cancel(id: string): void {
    if (!this.holders.delete(id)) return;
    this.core.cancel(id);
    this.run();
  }

  /** One member of a group finished; true when it was the last (group_complete). */
  releaseMember(id: string): boolean {
    const h = this.holders.get(id);
    if (!h) return false;
    const last = this.core.releaseMember(id, this.now());
    if (last) this.holders.delete(id);
    this.run();
    return last;
  }

  /** Queued, admitted or neither: how many units are held and queued (readiness, metrics). */
  stats() {
    return this.core.stats();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.progressTimer) clearInterval(this.progressTimer);
    this.timer = this.progressTimer = null;
    for (const [id, w] of this.waiting) {
      this.waiting.delete(id);
      w.cleanup();
      w.reject(new AdmissionRefused(protocolError('SHUTTING_DOWN')));
    }
  }

  // ---- internals ----

  /** schedule() and carry out its decisions; re-entrant calls (a listener releasing) loop instead of nesting. */
  private run(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        const now = this.now();
        for (const d of this.core.schedule(now)) {
          if (d.kind === 'admit') {
            const w = this.waiting.get(d.id);
            if (!w) continue;
            this.waiting.delete(d.id);
            w.cleanup();
            this.holders.set(d.id, { cls: w.cls, listener: w.listener });
            this.observer?.admitted(w.cls, d.waited_ms);
            if (w.announced) w.listener.admitted?.(Math.max(0, Math.round(d.waited_ms)));
            w.resolve(d.attempt);
          } else if (d.kind === 'expire') {
            const w = this.waiting.get(d.id);
            if (!w) continue;
            this.waiting.delete(d.id);
            w.cleanup();
            this.observer?.expired(w.cls, d.reason);
            w.reject(new AdmissionRefused(d.reason === 'deadline' ? queueTimeout(d.waited_ms, d.waited_ms) : queueFull('too_large', this.maxGroupSize)));
          } else {
            const h = this.holders.get(d.id);
            if (!h) continue;
            this.observer?.preempted(h.cls);
            h.listener.preempt?.(d.for);
          }
        }
      } while (this.again);
    } finally {
      this.running = false;
    }
    this.armTimer();
  }

  /** One timer at nextDeadline() (a queue deadline or a preemption grace ending). */
  private armTimer(): void {
    const at = this.core.nextDeadline();
    if (at === null || this.closed) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      this.timerAt = Number.POSITIVE_INFINITY;
      return;
    }
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    // +1: performance.now() has sub-ms precision, setTimeout ms; never fire a hair early and spin.
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.timerAt = Number.POSITIVE_INFINITY;
        this.run();
      },
      Math.max(0, Math.ceil(at - this.now())) + 1,
    );
    this.timer.unref();
  }

  private armProgress(): void {
    if (this.progressTimer || this.closed) return;
    this.progressTimer = setInterval(() => this.refresh(), PROGRESS_INTERVAL_MS);
    this.progressTimer.unref();
  }

  /** Every waiter's progress in one pass; a waiter whose figures did not change hears nothing. */
  private refresh(): void {
    if (this.waiting.size === 0) {
      if (this.progressTimer) clearInterval(this.progressTimer);
      this.progressTimer = null;
      return;
    }
    this.core.progressAll((id, p) => {
      const w = this.waiting.get(id);
      if (w) this.announce(id, w, p);
    });
  }

  private announce(_id: string, w: Waiter, p: Progress): void {
    const est = p.estimated_wait_ms === null ? null : Math.round(p.estimated_wait_ms);
    const key = `${p.position}/${p.units_ahead}/${est}`;
    if (key === w.last) return;
    w.last = key;
    w.announced = true;
    w.listener.queued?.({ ...p, estimated_wait_ms: est }, w.cls);
  }
}

function queueTimeout(timeoutMs: number, waitedMs: number): ProtocolError {
  const reason = `no sandbox within queue_timeout_ms (${Math.round(timeoutMs)})`;
  return protocolError(
    'CAPACITY',
    { reason },
    { reason: 'queue_timeout', limit: 'queue_timeout_ms', retry_after_ms: RETRY_AFTER_MS, waited_ms: Math.max(0, Math.round(waitedMs)) },
  );
}

function queueFull(why: string, limit: number): ProtocolError {
  const name = why === 'client_queue_full' ? 'max_queued_per_client' : why === 'too_large' ? 'max_group_size' : 'max_queued';
  const reason = `admission queue full (${name} ${limit})`;
  return protocolError('CAPACITY', { reason }, { reason: 'queue_full', limit: name, retry_after_ms: RETRY_AFTER_MS });
}
