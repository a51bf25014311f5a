// Warm pools. Creating a container costs 0.5-0.8 s and the daemon makes only 1-3 a second, so
// sandboxes are created ahead of demand in the background and `acquire` is an in-memory pop. One pool
// per (image, limits profile, workspace, env); PoolSet routes specs to pools.
//
// Sizing (autosize, the default): the idle target follows demand by Little's law: arrivals per second
// (an EWMA) x creation latency (an EWMA of measured creations) is how many acquires land while one
// replacement is being made, so that many (x SIZING_HEADROOM) are kept ready, never fewer than minIdle,
// never more than maxTotal allows. A burst raises the rate at once (every acquire counts), so refills
// start while its first acquirers are still being served; when demand stops the rate decays and idle
// sandboxes above the target are destroyed once the surplus has lasted a demand window.
//
// Bursts: a synchronous trainer (a GRPO batch) resets all its episodes at once, every training step. A rate
// cannot see that: 32 resets in one instant, then none for a minute, average out to a small target, and
// the next batch again waits for creations. So the pool also remembers the largest burst it has seen (the
// net draws, acquires less wiped returns, within one creation latency: the draws no creation can answer
// in time) with a slow decay (burstMemoryMs), and keeps that many idle: the batch after the first is
// served from the pool. Bursts below BURST_MIN_DRAWS are left to the rate.
// Many keys (one image per repository environment): PoolSet is an IdleBudget shared by its pools, so the idle
// sandboxes of all of them stay within maxIdleTotal; room goes to the pools acquired from most recently.
// Over 500 lines on purpose: one pool's counts (idle, creating, wiping, waiting) and its demand sizing share
// invariants that hold only if one object changes them.
import { createHash } from 'node:crypto';
import { SandboxAcquireAborted, SandboxPoolClosedError, SandboxRequestError } from './errors.js';
import { limitsKey, resolveLimits, DEFAULT_LIMITS, defaultMaxLimits, type LimitPolicy } from './limits.js';
import { silentLogger, type DriverSandbox, type SandboxDriver, type SandboxLimits, type SandboxLogger, type SandboxSpec } from './types.js';

export interface PoolOptions {
  /** Idle sandboxes kept ready. */
  minIdle?: number;
  /** Live sandboxes (idle + creating + handed out) this pool may hold; acquirers beyond wait FIFO. */
  maxTotal?: number;
  /** Concurrent creations for this pool. */
  refillConcurrency?: number;
  /** Run a command before a sandbox joins the pool (default true). */
  healthCheck?: boolean;
  logger?: SandboxLogger;
  /** Told of every creation attempt (its duration, health check included, and whether it worked). */
  onCreate?: (e: SandboxCreation) => void;
  /** Size the idle target from demand (default true); false: exactly minIdle (plus waiters). */
  autosize?: boolean;
  /** Time constant of the arrival-rate EWMA and how long an idle surplus lasts before it is shed (ms, default 10 s). */
  demandWindowMs?: number;
  /** Creation latency assumed before the first creation is measured (ms, default 1000). */
  initialCreateMs?: number;
  /** Time constant of the remembered burst (ms, default 300,000; 0 turns burst sizing off). */
  burstMemoryMs?: number;
  /** The idle budget shared by the pools of one PoolSet (PoolSet passes itself; absent: this pool alone decides). */
  idleBudget?: IdleBudget;
}

/**
 * A cap on idle sandboxes across pools (PoolSetOptions.maxIdleTotal). With one image per repository environment a
 * server may serve hundreds of pool keys; min_idle and burst targets per key would hold idle sandboxes (memory) for
 * every key ever used. A pool asks before creating a sandbox meant to wait idle (never before one a waiter needs), and
 * tells the budget when one joins its idle list.
 */
export interface IdleBudget {
  /** May `p` create one more sandbox to keep idle? May free room by destroying an idle one of a colder pool. */
  reserve(p: SandboxPool): boolean;
  /** A sandbox joined `p`'s idle list: if the idle sandboxes of all pools exceed the cap, the coldest are shed now. */
  settle(p: SandboxPool): void;
}

/** Idle sandboxes kept per (arrival rate x creation latency): covers Poisson bursts above the mean. */
export const SIZING_HEADROOM = 1.5;
/**
 * The smallest burst remembered: fewer draws at once are what the rate's headroom covers, and a server that
 * served one or two resets must not hold spares for minutes because of them.
 */
export const BURST_MIN_DRAWS = 4;
/** Concurrent creations a pool may run when demand asks for more than refillConcurrency (the driver caps the daemon's load). */
const MAX_DEMAND_CONCURRENCY = 8;
/** How often an autosized pool re-evaluates its target (refill ahead of demand, shed a stale surplus). */
const SIZING_TICK_MS = 1000;

/** One sandbox creation attempt, as PoolOptions.onCreate hears it. */
export interface SandboxCreation {
  image: string;
  ms: number;
  ok: boolean;
}

export interface PoolStats {
  key: string;
  image: string;
  idle: number;
  creating: number;
  in_use: number;
  /** Released with reuse 'wipe' and being wiped in place (live: counted against max_total; idle next). */
  wiping: number;
  waiting: number;
  hits: number;
  misses: number;
  created: number;
  create_failures: number;
  destroyed: number;
  resets: number;
  /** Sandboxes whose spec.prepare command succeeded (after a creation or a wipe). */
  prepared: number;
  /** The idle count the pool is filling to now (minIdle when not autosized). */
  target_idle: number;
  /** Acquires per second the pool must replace by creating (EWMA over the demand window; wiped returns count -1). */
  arrival_rate: number;
  /** Creation latency, health check included (EWMA, ms). */
  create_ms: number;
  /** In-place wipe latency (EWMA, ms; 0 before the first). */
  wipe_ms: number;
  /** The remembered burst (net draws within one creation latency, decayed over burstMemoryMs, rounded). */
  burst: number;
}

interface Waiter {
  resolve: (sb: DriverSandbox) => void;
  reject: (e: Error) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export class SandboxPool {
  readonly key: string;
  private readonly idle: DriverSandbox[] = [];
  private readonly inUse = new Set<DriverSandbox>();
  /** Released sandboxes being wiped in place (between inUse and idle). */
  private resetting = 0;
  private readonly waiters: Waiter[] = [];
  private readonly pendingDestroys = new Set<Promise<void>>();
  private readonly pendingWipes = new Set<Promise<void>>();
  private creating = 0;
  private consecutiveFailures = 0;
  private lastError: Error | null = null;
  private closed = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly s = { hits: 0, misses: 0, created: 0, create_failures: 0, destroyed: 0, resets: 0, prepared: 0 };
  private readonly minIdle: number;
  private readonly maxTotal: number;
  private readonly concurrency: number;
  private readonly log: SandboxLogger;
  private readonly autosize: boolean;
  private readonly tauMs: number;
  /** Decayed arrival count (events, time constant tauMs) as of lastArrival. */
  private arrivals = 0;
  private lastArrival = 0;
  private createMsEwma: number;
  /** Decayed count of in-place wipes as of lastWipe, and their latency (EWMA, ms; 0 until one is measured). */
  private wipes = 0;
  private lastWipe = 0;
  private wipeMsEwma = 0;
  /** Net draws (acquire times) within the last creation latency: the burst now. At most maxTotal kept. */
  private readonly draws: number[] = [];
  /** The largest burst seen, as of burstAt (decays with time constant burstMs). */
  private burstPeak = 0;
  private burstAt = 0;
  private readonly burstMs: number;
  /** Since when idle has been above the target (0: it is not). */
  private surplusSince = 0;
  private sizingTimer: NodeJS.Timeout | null = null;
  /** When this pool was last acquired from (or made): the budget sheds the idle sandboxes of the coldest pool first. */
  lastUsed = performance.now();

  constructor(
    private readonly driver: SandboxDriver,
    readonly spec: SandboxSpec,
    private readonly opts: PoolOptions = {},
    key?: string,
  ) {
    this.key = key ?? `${spec.image}|${spec.workspace ?? '/workspace'}`;
    this.minIdle = opts.minIdle ?? 2;
    this.maxTotal = Math.max(1, opts.maxTotal ?? 64);
    this.concurrency = Math.max(1, opts.refillConcurrency ?? 2);
    this.log = opts.logger ?? silentLogger;
    this.autosize = opts.autosize !== false;
    this.tauMs = Math.max(100, opts.demandWindowMs ?? 10_000);
    this.createMsEwma = Math.max(1, opts.initialCreateMs ?? 1000);
    this.burstMs = Math.max(0, opts.burstMemoryMs ?? 300_000);
  }

  /** Starts filling to minIdle in the background. */
  start(): void {
    this.refill();
    if (this.autosize && !this.sizingTimer) {
      this.sizingTimer = setInterval(() => this.resize(), SIZING_TICK_MS);
      this.sizingTimer.unref();
    }
  }

  /** Acquires per second now (the decayed count over the time constant). */
  arrivalRate(now = performance.now()): number {
    if (this.arrivals === 0) return 0;
    return (this.arrivals * Math.exp(-(now - this.lastArrival) / this.tauMs) * 1000) / this.tauMs;
  }

  /**
   * One acquire (+1), or one sandbox wiped back into the pool (-1): the rate that matters is of draws the
   * pool must replace by creating. With reuse 'replace' that is every acquire; with 'wipe' only the growth
   * (a burst of new sessions), so a pool recycling its sandboxes does not also fill to maxTotal.
   */
  private noteArrival(delta = 1): void {
    const now = performance.now();
    this.arrivals = Math.max(0, this.arrivals * Math.exp(-(now - this.lastArrival) / this.tauMs) + delta);
    this.lastArrival = now;
    if (this.burstMs > 0) this.noteDraw(now, delta);
  }

  /**
   * The burst: draws within one creation latency, less the wiped returns in it (a wiped return cancels the
   * oldest draw still counted), so a pool recycling in place at a steady rate does not look like a burst.
   * A burst at least as high as the decayed peak becomes the new peak.
   */
  private noteDraw(now: number, delta: number): void {
    const horizon = now - this.createMsEwma;
    while (this.draws.length > 0 && (this.draws[0] as number) < horizon) this.draws.shift();
    if (delta < 0) {
      this.draws.shift();
      return;
    }
    this.draws.push(now);
    if (this.draws.length > this.maxTotal) this.draws.shift();
    if (this.draws.length >= BURST_MIN_DRAWS && this.draws.length >= this.burstLevel(now)) {
      this.burstPeak = this.draws.length;
      this.burstAt = now;
    }
  }

  /** The remembered burst now: the peak, decayed since it was seen. */
  burstLevel(now = performance.now()): number {
    if (this.burstPeak === 0 || this.burstMs === 0) return 0;
    return this.burstPeak * Math.exp(-(now - this.burstAt) / this.burstMs);
  }

  /** In-place wipes per second now (decayed count over the time constant). */
  private wipeRate(now: number): number {
    if (this.wipes === 0) return 0;
    return (this.wipes * Math.exp(-(now - this.lastWipe) / this.tauMs) * 1000) / this.tauMs;
  }

  /**
   * Idle sandboxes wanted now: minIdle, or, when autosized, the acquires expected while replacements are made
   * (demand rate x creation latency) plus those expected while released sandboxes are wiped (wipe rate x wipe
   * latency: a session's next acquire does not wait for its own wipe), x SIZING_HEADROOM, or the remembered
   * burst if that is more; within maxTotal.
   */
  targetIdle(now = performance.now()): number {
    if (!this.autosize) return this.minIdle;
    const inFlight = this.arrivalRate(now) * (this.createMsEwma / 1000) + this.wipeRate(now) * (this.wipeMsEwma / 1000);
    // Rounded, not ceiled: a decayed rate never reaches 0, and a pool must come back down to minIdle.
    const demand = Math.max(Math.round(inFlight * SIZING_HEADROOM), Math.round(this.burstLevel(now)));
    return Math.min(this.maxTotal, Math.max(this.minIdle, demand));
  }

  /**
   * Creations allowed at once: refillConcurrency, more while demand (a target above minIdle, queued acquirers)
   * needs more replacements in flight. The driver still caps what reaches the daemon at once.
   */
  private creationSlots(target: number): number {
    if (!this.autosize) return this.concurrency;
    return Math.max(this.concurrency, Math.min(MAX_DEMAND_CONCURRENCY, target - this.minIdle + this.waiters.length));
  }

  /** The sizing tick: refill to a risen target, destroy the idle surplus once it has outlasted a demand window. */
  private resize(): void {
    if (this.closed) return;
    this.refill();
    const now = performance.now();
    const target = this.targetIdle(now);
    if (this.idle.length <= target) {
      this.surplusSince = 0;
      return;
    }
    if (this.surplusSince === 0) {
      this.surplusSince = now;
      return;
    }
    if (now - this.surplusSince < this.tauMs) return;
    // Oldest first: they have waited longest (and the newest are the likeliest to be warm in caches).
    const extra = this.idle.splice(0, this.idle.length - target);
    for (const sb of extra) this.destroyLater(sb);
    this.surplusSince = 0;
    if (extra.length > 0) this.log.info({ pool: this.key, shed: extra.length, target_idle: target }, 'sandbox pool shrank to demand');
  }

  /** Idle sandboxes now. */
  idleCount(): number {
    return this.idle.length;
  }

  /**
   * What this pool holds or will hold idle: idle, creating and being wiped, less what its waiters will take. The idle
   * budget counts these, so creations in flight cannot together overshoot the cap.
   */
  idleClaim(): number {
    return Math.max(0, this.idle.length + this.creating + this.resetting - this.waiters.length);
  }

  /** Destroys up to n idle sandboxes, oldest first (the budget reclaiming them for a hotter pool); returns how many. */
  shedIdle(n: number): number {
    const out = this.idle.splice(0, Math.max(0, n));
    for (const sb of out) this.destroyLater(sb);
    return out.length;
  }

  private total(): number {
    // A sandbox being wiped in place still exists: counting it keeps max_total a hard cap.
    return this.idle.length + this.creating + this.inUse.size + this.resetting;
  }

  /** Pops a warm sandbox, or waits (FIFO) for the next one. Never hands one sandbox out twice. */
  acquire(signal?: AbortSignal): Promise<DriverSandbox> {
    if (this.closed) return Promise.reject(new SandboxPoolClosedError(this.key));
    if (signal?.aborted) return Promise.reject(new SandboxAcquireAborted());
    this.lastUsed = performance.now();
    this.noteArrival();
    // Only hand out a sandbox if no one queued before us (FIFO) and it is still alive.
    while (this.waiters.length === 0 && this.idle.length > 0) {
      const sb = this.idle.shift()!;
      if (sb.deadReason) continue;
      this.s.hits += 1;
      this.inUse.add(sb);
      this.refill();
      return Promise.resolve(sb);
    }
    this.s.misses += 1;
    return new Promise<DriverSandbox>((resolve, reject) => {
      const w: Waiter = { resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          const i = this.waiters.indexOf(w);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(new SandboxAcquireAborted());
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      this.waiters.push(w);
      this.refill();
    });
  }

  /**
   * Returns a sandbox. Default: destroy it off the critical path (the next acquire gets a fresh one
   * from the pool). With reset: kill every process, wipe workspace and /tmp, and put it back idle:
   * ~10 ms instead of a container (re)creation, for envs that trust their own episodes not to taint
   * anything outside those two directories (the root filesystem is read-only on Docker).
   */
  async release(sb: DriverSandbox, mode: { reset?: boolean } = {}): Promise<void> {
    if (!this.inUse.delete(sb)) return; // idempotent: not ours or already released
    if (mode.reset && !sb.deadReason && !this.closed) {
      // Resolves once wiped and back. A caller may leave it running (the session layer does): meanwhile the
      // sandbox counts as live (max_total) and as coming idle (refill makes no replacement for it), and a
      // waiter gets it once it is clean.
      this.resetting += 1;
      const p = this.wipe(sb).finally(() => this.pendingWipes.delete(p));
      this.pendingWipes.add(p);
      return p;
    }
    this.destroyLater(sb);
    this.refill();
  }

  private async wipe(sb: DriverSandbox): Promise<void> {
    let wiped = false;
    const t0 = performance.now();
    const decay = Math.exp(-(t0 - this.lastWipe) / this.tauMs);
    this.wipes = this.wipes * decay + 1;
    this.lastWipe = t0;
    try {
      await sb.reset();
      await this.prepare(sb);
      wiped = true;
      const ms = performance.now() - t0;
      this.wipeMsEwma = this.wipeMsEwma === 0 ? ms : this.wipeMsEwma + 0.3 * (ms - this.wipeMsEwma);
    } catch (e) {
      this.log.warn({ pool: this.key, sandbox: sb.id, err: String(e) }, 'in-place reset failed; destroying');
    } finally {
      this.resetting -= 1;
    }
    if (wiped && !sb.deadReason) {
      this.s.resets += 1;
      this.noteArrival(-1);
      this.offer(sb);
      return;
    }
    this.destroyLater(sb);
    this.refill();
  }

  /**
   * The spec's judge command (SandboxRequirement.prepare) on a new or wiped sandbox. A command that fails is
   * logged and the sandbox handed out unprepared (the requirement promises nothing more); a sandbox that died
   * meanwhile fails as any creation or wipe would.
   */
  private async prepare(sb: DriverSandbox): Promise<void> {
    const req = this.spec.prepare;
    if (!req) return;
    try {
      const r = await sb.exec({ ...req, identity: 'judge' });
      if (r.exit_code !== 0)
        this.log.warn(
          { pool: this.key, sandbox: sb.id, exit_code: r.exit_code, stderr: r.stderr.slice(0, 500) },
          'sandbox prepare command failed; handing it out unprepared',
        );
      else this.s.prepared += 1;
    } catch (e) {
      if (sb.deadReason) throw e;
      this.log.warn({ pool: this.key, sandbox: sb.id, err: String(e) }, 'sandbox prepare command failed; handing it out unprepared');
    }
  }

  private destroyLater(sb: DriverSandbox): void {
    this.s.destroyed += 1;
    const p = sb.destroy().finally(() => this.pendingDestroys.delete(p));
    this.pendingDestroys.add(p);
  }

  /** A ready sandbox goes to the oldest waiter, else to the idle list. */
  private offer(sb: DriverSandbox): void {
    const w = this.waiters.shift();
    if (w) {
      if (w.signal && w.onAbort) w.signal.removeEventListener('abort', w.onAbort);
      this.inUse.add(sb);
      w.resolve(sb);
      return;
    }
    if (this.closed) {
      this.destroyLater(sb);
      return;
    }
    this.idle.push(sb);
    this.opts.idleBudget?.settle(this);
    if (!this.idle.includes(sb)) return; // shed at once: the budget was full and this pool is the coldest
    // A sandbox that dies while idle leaves the pool at once.
    const off = sb.onDied(() => {
      off();
      const i = this.idle.indexOf(sb);
      if (i >= 0) {
        this.idle.splice(i, 1);
        this.refill();
      }
    });
  }

  private refill(): void {
    if (this.closed || this.retryTimer) return;
    const target = this.targetIdle();
    const want = target + this.waiters.length;
    const slots = this.creationSlots(target);
    while (this.creating < slots && this.idle.length + this.creating + this.resetting < want && this.total() < this.maxTotal) {
      // A sandbox a waiter will take is never held back; one that would wait idle needs room in the shared budget.
      const forWaiter = this.idle.length + this.creating + this.resetting < this.waiters.length;
      if (!forWaiter && this.opts.idleBudget && !this.opts.idleBudget.reserve(this)) break;
      this.creating += 1;
      void this.createOne();
    }
  }

  private async createOne(): Promise<void> {
    let sb: DriverSandbox | null = null;
    const t0 = performance.now();
    try {
      sb = await this.driver.create(this.spec);
      if (this.opts.healthCheck !== false) {
        const r = await sb.exec({ argv: ['true'], timeout_ms: 10_000 });
        if (r.exit_code !== 0) throw new Error(`health check failed: exit ${String(r.exit_code)} ${r.stderr.trim()}`);
      }
      await this.prepare(sb);
      this.s.created += 1;
      this.consecutiveFailures = 0;
      this.createMsEwma += 0.3 * (performance.now() - t0 - this.createMsEwma);
    } catch (e) {
      this.s.create_failures += 1;
      this.consecutiveFailures += 1;
      this.lastError = e as Error;
      this.log.warn({ pool: this.key, err: (e as Error).message }, 'sandbox creation failed');
      if (sb) void sb.destroy();
      sb = null;
    } finally {
      this.creating -= 1;
    }
    this.opts.onCreate?.({ image: this.spec.image, ms: performance.now() - t0, ok: sb !== null });
    if (sb) this.offer(sb);
    if (this.consecutiveFailures >= 3 && this.waiters.length > 0 && this.creating === 0) {
      // Repeated failures (missing image, daemon down): fail waiters rather than hang them forever.
      const err = new Error(`cannot create sandboxes for ${this.spec.image}: ${this.lastError?.message ?? 'unknown error'}`);
      for (const w of this.waiters.splice(0)) w.reject(err);
    }
    if (this.consecutiveFailures > 0) {
      // Back off instead of hammering a failing daemon.
      const delay = Math.min(30_000, 500 * 2 ** Math.min(6, this.consecutiveFailures));
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.refill();
      }, delay);
      this.retryTimer.unref();
      return;
    }
    this.refill();
  }

  stats(): PoolStats {
    return {
      key: this.key,
      image: this.spec.image,
      idle: this.idle.length,
      creating: this.creating,
      in_use: this.inUse.size,
      wiping: this.resetting,
      waiting: this.waiters.length,
      ...this.s,
      target_idle: this.targetIdle(),
      arrival_rate: Math.round(this.arrivalRate() * 100) / 100,
      create_ms: Math.round(this.createMsEwma),
      wipe_ms: Math.round(this.wipeMsEwma),
      burst: Math.round(this.burstLevel()),
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.sizingTimer) clearInterval(this.sizingTimer);
    this.sizingTimer = null;
    for (const w of this.waiters.splice(0)) w.reject(new SandboxPoolClosedError(this.key));
    for (const sb of this.idle.splice(0)) this.destroyLater(sb);
    for (const sb of [...this.inUse]) this.destroyLater(sb);
    this.inUse.clear();
    // Creations in flight and wipes land in offer() after close and are destroyed there.
    await Promise.all([...this.pendingWipes]);
    while (this.creating > 0) await new Promise((r) => setTimeout(r, 50));
    await Promise.all([...this.pendingDestroys]);
  }
}

export interface PoolSetOptions extends PoolOptions {
  defaults?: SandboxLimits;
  maxima?: SandboxLimits;
  limitPolicy?: LimitPolicy;
  /** Log pool stats this often (ms); 0 disables. */
  statsLogIntervalMs?: number;
  /**
   * Idle sandboxes across all pools at most (default: unbounded). Over it, the idle sandboxes of the least recently
   * acquired pools are destroyed first, and a pool in demand takes room from colder ones (IdleBudget).
   */
  maxIdleTotal?: number;
}

/** Listeners of the creations of every pool of a PoolSet (PoolSet.onCreate). */
type CreationListener = (e: SandboxCreation) => void;

/** Routes specs to pools keyed by image + limits profile (+ workspace and env); shares one idle budget among them. */
export class PoolSet implements IdleBudget {
  private readonly pools = new Map<string, SandboxPool>();
  private readonly owner = new Map<DriverSandbox, SandboxPool>();
  private readonly statsTimer: NodeJS.Timeout | null;
  private readonly log: SandboxLogger;
  private creationListeners: CreationListener[] = [];
  /** The idle cap across pools (Infinity: none). */
  readonly maxIdleTotal: number;
  /** Idle sandboxes the budget destroyed to stay under the cap or to make room for a hotter pool. */
  private budgetShed = 0;

  constructor(
    readonly driver: SandboxDriver,
    private readonly opts: PoolSetOptions = {},
  ) {
    this.log = opts.logger ?? silentLogger;
    this.maxIdleTotal = opts.maxIdleTotal === undefined ? Number.POSITIVE_INFINITY : Math.max(0, opts.maxIdleTotal);
    const every = opts.statsLogIntervalMs ?? 60_000;
    this.statsTimer = every > 0 ? setInterval(() => this.logStats(), every) : null;
    this.statsTimer?.unref();
  }

  keyOf(spec: SandboxSpec): { key: string; limits: SandboxLimits } {
    // Resolve (and validate) limits here so that a bad request fails before any pool is made.
    const limits = resolveLimits(spec.limits, this.opts.defaults ?? DEFAULT_LIMITS, this.opts.maxima ?? defaultMaxLimits(), this.opts.limitPolicy);
    const env = spec.env ? JSON.stringify(Object.entries(spec.env).sort()) : '';
    // A malformed prepare command is the requirement's fault, said here as a typed error: at run time it would
    // fail on every creation and only leave the sandboxes unprepared (prepare() hands them out anyway).
    const pr = spec.prepare;
    if (
      pr &&
      (!(pr.argv?.length || pr.script !== undefined) || (pr.argv?.length && pr.script !== undefined) || (pr.timeout_ms !== undefined && !(pr.timeout_ms > 0)))
    ) {
      throw new SandboxRequestError('prepare: a command needs exactly one of argv and script, and a positive timeout_ms if any');
    }
    // A prepared sandbox (spec.prepare) is never handed to a requirement without the same preparation.
    const prep = spec.prepare ? `|prepare:${createHash('sha256').update(JSON.stringify(spec.prepare)).digest('hex').slice(0, 16)}` : '';
    return { key: `${spec.image}|${limitsKey(limits)}|${spec.workspace ?? '/workspace'}|${spec.background ?? 'kill'}|${env}${prep}`, limits };
  }

  pool(spec: SandboxSpec): SandboxPool {
    const { key, limits } = this.keyOf(spec);
    let p = this.pools.get(key);
    if (!p) {
      const opts: PoolOptions = { ...this.opts, onCreate: (e) => this.created(e), idleBudget: this };
      p = new SandboxPool(this.driver, { ...spec, limits, pool: spec.pool ?? key }, opts, key);
      this.pools.set(key, p);
      p.start();
      this.log.info({ pool: key }, 'sandbox pool created');
    }
    return p;
  }

  /**
   * IdleBudget: room for one more sandbox meant to wait idle in `p`. When the pools' claims (idle, creating, wiping,
   * less their waiters) fill the cap, one idle sandbox of the least recently acquired pool that is colder than `p` is
   * destroyed to make room: warm-up goes to the keys in demand, and a cold key never takes room from a hotter one.
   * O(pools), run on acquire/release/creation and the 1 s sizing tick, never per step.
   */
  reserve(p: SandboxPool): boolean {
    if (this.maxIdleTotal === Number.POSITIVE_INFINITY) return true;
    let claimed = 0;
    for (const q of this.pools.values()) claimed += q.idleClaim();
    if (claimed < this.maxIdleTotal) return true;
    const victim = this.coldest((q) => q !== p && q.lastUsed < p.lastUsed);
    if (!victim) return false;
    this.shed(victim, 1, p);
    return true;
  }

  /** IdleBudget: over the cap (a wiped sandbox back, a creation whose waiter left), the coldest pools' idle go first. */
  settle(_p: SandboxPool): void {
    if (this.maxIdleTotal === Number.POSITIVE_INFINITY) return;
    let idle = 0;
    for (const q of this.pools.values()) idle += q.idleCount();
    while (idle > this.maxIdleTotal) {
      const victim = this.coldest(() => true);
      if (!victim) return;
      idle -= this.shed(victim, idle - this.maxIdleTotal, null);
    }
  }

  /** The least recently acquired pool with an idle sandbox among those `ok` admits. */
  private coldest(ok: (q: SandboxPool) => boolean): SandboxPool | null {
    let best: SandboxPool | null = null;
    for (const q of this.pools.values()) if (q.idleCount() > 0 && ok(q) && (!best || q.lastUsed < best.lastUsed)) best = q;
    return best;
  }

  private shed(victim: SandboxPool, n: number, forPool: SandboxPool | null): number {
    const k = victim.shedIdle(n);
    this.budgetShed += k;
    this.log.debug(
      { pool: victim.key, shed: k, for_pool: forPool?.key ?? null, max_idle_total: this.maxIdleTotal },
      'idle budget: shed idle sandboxes of a cold pool',
    );
    return k;
  }

  /** The idle budget now: the cap, the idle sandboxes of all pools, and how many the budget has shed so far. */
  idleBudgetStats(): { max_idle_total: number | null; idle: number; shed: number } {
    let idle = 0;
    for (const q of this.pools.values()) idle += q.idleCount();
    return { max_idle_total: Number.isFinite(this.maxIdleTotal) ? this.maxIdleTotal : null, idle, shed: this.budgetShed };
  }

  /** Listens for the creation attempts of every pool (creation latency); returns the function that stops it. */
  onCreate(l: CreationListener): () => void {
    this.creationListeners = [...this.creationListeners, l];
    return () => {
      this.creationListeners = this.creationListeners.filter((x) => x !== l);
    };
  }

  private created(e: SandboxCreation): void {
    this.opts.onCreate?.(e);
    for (const l of this.creationListeners) l(e);
  }

  /** Pre-creates the pool for a spec (e.g. for every env declaring a sandbox, at startup). */
  warm(spec: SandboxSpec): void {
    this.pool(spec);
  }

  async acquire(spec: SandboxSpec, signal?: AbortSignal): Promise<DriverSandbox> {
    const p = this.pool(spec);
    const sb = await p.acquire(signal);
    this.owner.set(sb, p);
    return sb;
  }

  async release(sb: DriverSandbox, mode: { reset?: boolean } = {}): Promise<void> {
    const p = this.owner.get(sb);
    if (!p) return;
    this.owner.delete(sb);
    await p.release(sb, mode);
  }

  stats(): PoolStats[] {
    return [...this.pools.values()].map((p) => p.stats());
  }

  logStats(): void {
    for (const s of this.stats()) this.log.info({ pool_stats: s }, 'sandbox pool');
  }

  async close(): Promise<void> {
    if (this.statsTimer) clearInterval(this.statsTimer);
    await Promise.all([...this.pools.values()].map((p) => p.close()));
  }
}
