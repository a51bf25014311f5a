// Race an env call against a deadline. On expiry the call is left running (JS cannot cancel it);
// the caller records it as a straggler and discards its late result.

export class DeadlineExceeded extends Error {
  constructor(
    readonly op: string,
    readonly timeoutMs: number,
    /** The abandoned call, settled-safe (never rejects). */
    readonly straggler: Promise<unknown>,
  ) {
    super(`${op} exceeded its deadline of ${timeoutMs} ms`);
    this.name = 'DeadlineExceeded';
  }
}

const swallow = () => undefined;

/**
 * The monotonic clock of deadlines and of step timing, in ms from an arbitrary origin. process.hrtime()
 * costs what Date.now() costs (a clock read, ~0.09 µs in this VM); performance.now() costs ~0.025 µs
 * more (its receiver check), on a path where that is ~1% of a no-op step.
 */
export function monoNow(): number {
  const t = process.hrtime();
  return t[0] * 1e3 + t[1] / 1e6;
}

export function withDeadline<T>(p: Promise<T>, ms: number, op: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new DeadlineExceeded(op, ms, p.then(swallow, swallow))), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

/** Call fn and turn a synchronous throw into a rejection (envs may throw before returning a promise). */
export function callAsync<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (e) {
    return Promise.reject(e);
  }
}

interface Pending {
  /** Expiry, on monoNow()'s clock. */
  at: number;
  op: string;
  ms: number;
  p: Promise<unknown>;
  reject: (e: unknown) => void;
  /** Who may abandon the call early (a session, on close). */
  owner: object | undefined;
}

/**
 * Deadlines for the hot path: one sweeping interval instead of a timer armed and cleared per step
 * (timer list insert/remove was ~8% of the server's per-step CPU). Precision is one tick
 * (deadline/20, 5 ms..1 s), which is plenty for deadlines measured in seconds. Times are monoNow()
 * (monotonic: a wall-clock step cannot fire or hold back a deadline), and a caller that has just read
 * that clock passes its reading as `startedAt` (a session's step does: the same reading times the step
 * for the metrics, and a clock read costs ~0.1 µs in a VM).
 */
export class DeadlineSweeper {
  private readonly pending = new Set<Pending>();
  private timer: NodeJS.Timeout | null = null;

  constructor(readonly tickMs: number) {}

  static tickFor(...deadlinesMs: number[]): number {
    return Math.max(5, Math.min(1000, Math.floor(Math.min(...deadlinesMs) / 20)));
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.sweep(monoNow()), this.tickMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  race<T>(p: Promise<T>, ms: number, op: string, owner?: object, startedAt: number = monoNow()): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry: Pending = { at: startedAt + ms, op, ms, p, reject, owner };
      this.pending.add(entry);
      p.then(
        (v) => {
          if (this.pending.delete(entry)) resolve(v);
        },
        (e: unknown) => {
          if (this.pending.delete(entry)) reject(e);
        },
      );
    });
  }

  /**
   * Rejects `owner`'s calls still in flight with `error` now (the call itself runs on, unawaited).
   * Linear in the calls in flight, and called only when a session closes while one of its calls runs.
   */
  abandon(owner: object, error: unknown): void {
    for (const e of this.pending) {
      if (e.owner !== owner) continue;
      this.pending.delete(e);
      e.p.then(swallow, swallow);
      e.reject(error);
    }
  }

  sweep(now: number): void {
    for (const e of this.pending) {
      if (e.at > now) continue;
      this.pending.delete(e);
      e.reject(new DeadlineExceeded(e.op, e.ms, e.p.then(swallow, swallow)));
    }
  }
}
