// What every container-backed driver (Docker, Kubernetes) does the same way, declared once: the per-sandbox
// agent uid, the bound on creations in flight, the in-sandbox lease's tick count and refresh loop, and the
// container memory a sandbox's limits come to. Knows nothing of envs, sockets or a particular runtime.
import { randomBytes } from 'node:crypto';
import { agentTmpfsMb, judgeReserve } from './judge-reserve.js';
import type { SandboxLimits } from './types.js';

/** First uid of the per-sandbox agent uid range (each sandbox gets its own, so RLIMIT_NPROC counts one sandbox). */
export const DEFAULT_AGENT_UID_BASE = 2_000_000;

/**
 * Agent uids in use by one driver instance: random in a range (2^20 by default), so other instances rarely
 * pick the same; allocUnless() also asks the runtime (the Docker daemon, the Kubernetes API) whether another
 * instance's live sandbox has it.
 */
export class AgentUids {
  private readonly used = new Set<number>();
  constructor(
    private readonly base: number = DEFAULT_AGENT_UID_BASE,
    span: number = 1 << 20,
  ) {
    this.span = Math.max(1, Math.floor(span));
  }

  private readonly span: number;

  alloc(): number {
    if (this.used.size >= this.span) throw new Error(`no free agent uid: all ${this.span} from ${this.base} are in use`);
    for (;;) {
      const uid = this.base + (randomBytes(4).readUInt32LE(0) % this.span);
      if (!this.used.has(uid)) {
        this.used.add(uid);
        return uid;
      }
    }
  }

  free(uid: number): void {
    this.used.delete(uid);
  }

  /**
   * A free uid that `takenElsewhere` does not report in use (one query per candidate). Candidates found taken are
   * kept out of alloc() until the search ends, so the search cannot loop on them; with every uid of the span
   * taken, alloc() throws ("no free agent uid") rather than share one.
   */
  async allocUnless(takenElsewhere: (uid: number) => Promise<boolean>): Promise<number> {
    const taken: number[] = [];
    try {
      for (;;) {
        const uid = this.alloc();
        if (!(await takenElsewhere(uid))) return uid;
        taken.push(uid);
      }
    } finally {
      for (const u of taken) this.free(u);
    }
  }
}

/** How long a driver's close() waits for creations in flight before it destroys what is live and sweeps. */
export const CLOSE_CREATE_WAIT_MS = 30_000;

/**
 * A driver's creations in flight, so that close() lets them end (bounded) before its sweep: a container or
 * pod made after the sweep's list would outlive the server.
 */
export class InFlight {
  private readonly ps = new Set<Promise<unknown>>();

  track<T>(p: Promise<T>): Promise<T> {
    this.ps.add(p);
    const done = (): void => {
      this.ps.delete(p);
    };
    p.then(done, done);
    return p;
  }

  /** Resolves once every creation now in flight has settled, or after `ms`, whichever is first. */
  async settle(ms: number = CLOSE_CREATE_WAIT_MS): Promise<void> {
    if (this.ps.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.ps]), new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
  }
}

/** At most `max` creations in flight; the rest wait FIFO. acquire() resolves to the release function. */
export class CreateSlots {
  private active = 0;
  private readonly waiters: (() => void)[] = [];
  constructor(private readonly max: number) {}

  async acquire(): Promise<() => void> {
    if (this.active >= this.max) await new Promise<void>((r) => this.waiters.push(r));
    this.active += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active -= 1;
      this.waiters.shift()?.();
    };
  }
}

/** The in-sandbox lease watchdog ticks every 5 s: the TTL as ticks, never fewer than two. */
export function leaseTicks(ttlMs: number): number {
  return Math.max(2, Math.ceil(ttlMs / 5000));
}

/** Refreshes every live sandbox's lease on an interval (unref'd); returns the timer for close(). */
export function startLeaseRefresh(live: Map<string, { refreshLease(): void }>, intervalMs: number): NodeJS.Timeout {
  const t = setInterval(() => {
    for (const sb of live.values()) sb.refreshLease();
  }, intervalMs);
  t.unref();
  return t;
}

/**
 * Container memory in MiB: the agent's share (its processes, or the tmpfs files it can write, which are
 * memory too) plus the judge's reserve the agent cannot reach (agent processes carry oom_score_adj 1000,
 * so the OOM killer always takes one of them first, and the agent's files can never fill the reserve).
 */
export function containerMemoryMb(limits: SandboxLimits, tmpSizeMb: number): number {
  return Math.max(limits.memory_mb, agentTmpfsMb(limits, tmpSizeMb)) + judgeReserve(limits).memory_mb;
}
