// Session resume (PROTOCOL.md §5a): the books a connection keeps so that a client whose socket
// drops can reattach its sessions from a new connection, and the server-wide table of resume tokens.
//
// ReplayLog (one per connection, only when resume_grace_ms > 0) answers, for an id the client says it
// has no reply to, one of: still running (its reply will come), answered recently (the reply is
// replayed from a bounded window: a frame written just before a drop may never have arrived),
// answered long ago (lost: it ran, it must not run again), never received (unseen: the client sends
// it again). While detached it also holds the frames produced meanwhile, bounded by the session
// queue limits. ResumeTokens maps a token's digest to the connection that holds its sessions, bound
// to the principal (the auth token's digest) that opened it; a token is spent by the resume that
// takes it, and remembered (bounded) as spent or expired so a late resume gets a precise error.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { protocolError, type ProtocolError } from '#protocol/index.js';
import { TenantBytes, TenantShare } from './tenant-bytes.js';

/** Replies kept after sending, for a resume whose client did not receive them: the most recent ones. */
export const REPLAY_WINDOW_FRAMES = 256;
export const REPLAY_WINDOW_BYTES = 8 * 1024 * 1024;
/** Ids answered and dropped from the window, remembered so a resume reports them lost, never unseen. */
const DONE_IDS_MAX = 65_536;
/** Tokens remembered after they were spent or expired (for RESUME_REFUSED / RESUME_EXPIRED details). */
const GONE_TOKENS_MAX = 10_000;

export interface Frame {
  /** The reply's request id, or null (events, id-null errors). */
  id: number | null;
  data: string | Uint8Array;
}

export function sizeOf(data: string | Uint8Array): number {
  // Strings are bounded by their UTF-16 length: close enough for a budget, and no encoding pass.
  return typeof data === 'string' ? data.length : data.byteLength;
}

/** Evicts the oldest entry of a Set used as a FIFO once it holds `max`. */
function addBounded<T>(set: Set<T>, v: T, max: number): void {
  if (set.size >= max) {
    const oldest = set.values().next();
    if (!oldest.done) set.delete(oldest.value);
  }
  set.add(v);
}

/**
 * What every connection's ReplayLog keeps in memory, server-wide: window and held bytes. Without it
 * resume turned into memory amplification: each connection kept up to REPLAY_WINDOW_BYTES of replies
 * it had already sent (list_envs needs no session: max_connections x 8 MiB), and each detached one up
 * to max_queued_bytes held (max_sessions x 64 MiB), none of it counted by max_buffered_output_bytes.
 * The logs keep the sum within that same limit (test: resume-attacks.test.ts).
 */
export class ReplayPool extends TenantBytes {}

export class ReplayLog {
  /** Ids received (after hello) whose reply has not been produced yet. */
  readonly inflight = new Set<number>();
  /**
   * Replies sent, oldest first, from `head` on: within REPLAY_WINDOW_FRAMES / REPLAY_WINDOW_BYTES (the
   * newest is always kept). Evicted by moving `head` (per reply: O(1)); compacted now and then.
   */
  private window: Frame[] = [];
  private head = 0;
  private windowBytes = 0;
  /** Ids answered whose frame left the window. */
  private readonly done = new Set<number>();
  /** Frames produced while detached, in order. */
  private held: Frame[] = [];
  private heldBytes = 0;
  /** Its bytes (window and held) in the pool, and whose they are (setTenant; '' until hello). */
  private readonly share: TenantShare;

  constructor(
    private readonly maxHeldFrames: number,
    private readonly maxHeldBytes: number,
    /** Shared by the server's connections, bounded by `poolLimit` (max_buffered_output_bytes). */
    private readonly pool: ReplayPool = new ReplayPool(),
    private readonly poolLimit = Number.POSITIVE_INFINITY,
  ) {
    this.share = new TenantShare(pool, '');
  }

  /** A request was received: its reply is owed. */
  received(id: number): void {
    this.inflight.add(id);
  }

  /** A reply left for the socket: remembered in the window. */
  sent(f: Frame): void {
    if (f.id === null || !this.inflight.delete(f.id)) return;
    const w = this.window;
    w.push(f);
    const bytes = sizeOf(f.data);
    this.windowBytes += bytes;
    this.share.add(bytes);
    // Past half the server-wide limit this connection gives up its own older replies (they become
    // lost, never unseen: nothing runs twice); the newest is always kept. Half: windows are a courtesy,
    // and must not leave the replies held for detached connections (which are owed) without room.
    while (
      w.length - this.head > 1 &&
      (w.length - this.head > REPLAY_WINDOW_FRAMES || this.windowBytes > REPLAY_WINDOW_BYTES || this.pool.total > this.poolLimit / 2)
    ) {
      const old = w[this.head] as Frame;
      w[this.head++] = undefined as unknown as Frame; // let the frame be collected
      const oldBytes = sizeOf(old.data);
      this.windowBytes -= oldBytes;
      this.share.add(-oldBytes);
      addBounded(this.done, old.id as number, DONE_IDS_MAX);
    }
    if (this.head >= REPLAY_WINDOW_FRAMES * 4) {
      this.window = w.slice(this.head);
      this.head = 0;
    }
  }

  /** The window's frames, oldest first. */
  private windowFrames(): Frame[] {
    return this.head === 0 ? this.window : this.window.slice(this.head);
  }

  /** The connection's tenant is known (after hello): what the log keeps now counts as that tenant's. */
  setTenant(tenant: string): void {
    this.share.moveTo(tenant);
  }

  /** Whose bytes the log keeps. */
  get tenant(): string {
    return this.share.tenant;
  }

  /** Bytes of the frames held while detached. */
  get heldSize(): number {
    return this.heldBytes;
  }

  /**
   * A frame produced while detached. 'limits' when it passes this connection's own bounds (the caller
   * expires), 'pool' when only the server-wide one (the caller may make room, see ResumeTokens.makeRoom).
   */
  hold(f: Frame): true | 'limits' | 'pool' {
    const bytes = sizeOf(f.data);
    if (this.held.length >= this.maxHeldFrames || this.heldBytes + bytes > this.maxHeldBytes) return 'limits';
    // Detached connections together hold no more than the server lets all connections buffer.
    if (this.pool.total + bytes > this.poolLimit) return 'pool';
    this.held.push(f);
    this.heldBytes += bytes;
    this.share.add(bytes);
    if (f.id !== null) this.inflight.delete(f.id);
    return true;
  }

  get heldCount(): number {
    return this.held.length;
  }

  /**
   * Sorts the client's pending ids and returns what to deliver: the window's frames it lists, then
   * everything held while detached, in the order produced. Empties this log (it moves to `to`).
   */
  handOver(pending: readonly number[], to: ReplayLog): { unseen: number[]; lost: number[]; frames: Frame[] } {
    const wanted = new Set(pending);
    const unseen: number[] = [];
    const lost: number[] = [];
    const inWindow = new Set<number>();
    const window = this.windowFrames();
    for (const f of window) if (f.id !== null && wanted.has(f.id)) inWindow.add(f.id);
    const heldIds = new Set<number>();
    for (const f of this.held) if (f.id !== null) heldIds.add(f.id);
    for (const id of wanted) {
      if (this.inflight.has(id) || inWindow.has(id) || heldIds.has(id)) continue;
      (this.done.has(id) ? lost : unseen).push(id);
    }
    const frames = [...window.filter((f) => f.id !== null && inWindow.has(f.id)), ...this.held];
    // Requests still running answer on the new connection, which now owes them.
    for (const id of this.inflight) to.inflight.add(id);
    this.inflight.clear();
    this.release();
    this.done.clear();
    return { unseen, lost, frames };
  }

  /** Drops everything (the connection ended for good). */
  clear(): void {
    this.inflight.clear();
    this.release();
    this.done.clear();
  }

  /** Empties the window and the held frames, and gives their bytes back to the pool. */
  private release(): void {
    this.share.set(0);
    this.window = [];
    this.head = 0;
    this.held = [];
    this.windowBytes = this.heldBytes = 0;
  }
}

/** What the token table needs of a connection. */
export interface Resumable {
  /** Closes the sessions it holds (grace passed, overflow, shutdown). */
  expire(reason: string): Promise<void>;
  /** Its resume log, while it keeps one (for makeRoom: whose held frames, how many bytes). */
  readonly replay: ReplayLog | null;
}

interface LiveEntry<C extends Resumable> {
  conn: C;
  principal: Buffer;
}

interface GoneEntry {
  spent: boolean;
  reason: string;
  sessions: string[];
}

export function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** The principal of an authenticated connection: the digest of its auth token ('' when auth is off). */
export function principalOf(authToken: string | null): Buffer {
  return digest(authToken ?? '');
}

export class ResumeTokens<C extends Resumable> {
  /** digest(token) (hex) -> the connection holding the sessions. */
  private readonly live = new Map<string, LiveEntry<C>>();
  private readonly gone = new Map<string, GoneEntry>();
  /** Connections whose socket dropped and whose sessions wait for a resume. */
  readonly detached = new Set<C>();
  /** Bytes all connections' ReplayLogs keep (windows and held frames). */
  readonly pool = new ReplayPool();

  /** A new unguessable token for `conn`, bound to `principal`. Returns the token and its key. */
  issue(conn: C, principal: Buffer): { token: string; key: string } {
    const token = `r_${randomBytes(24).toString('base64url')}`;
    const key = digest(token).toString('hex');
    this.live.set(key, { conn, principal });
    return { token, key };
  }

  /** The token stops being valid (the connection ended, or resumed under a new token). */
  revoke(key: string | null, why?: { spent: boolean; reason: string; sessions: string[] }): void {
    if (key === null) return;
    this.live.delete(key);
    if (why) {
      if (this.gone.size >= GONE_TOKENS_MAX) {
        const oldest = this.gone.keys().next();
        if (!oldest.done) this.gone.delete(oldest.value);
      }
      this.gone.set(key, why);
    }
  }

  /** Who holds the token, without spending it (a resume with one's own token is refused unspent). */
  peek(token: string): C | undefined {
    return this.live.get(digest(token).toString('hex'))?.conn;
  }

  /**
   * Spends `token` for `principal`: the connection holding its sessions, or the typed error. Synchronous
   * from lookup to removal, so of two resumes with one token exactly one gets the connection.
   */
  claim(token: string, principal: Buffer): { conn: C; key: string } | ProtocolError {
    const key = digest(token).toString('hex');
    const e = this.live.get(key);
    if (e === undefined) {
      const g = this.gone.get(key);
      if (g?.spent) return refused('the token was already used by another resume');
      const reason = g ? g.reason : 'no sessions are held for this token (unknown, expired, or the server restarted)';
      return protocolError('RESUME_EXPIRED', { reason }, g ? { reason, sessions: g.sessions } : { reason });
    }
    // Digests of equal length: the comparison time says nothing about the principal.
    if (!timingSafeEqual(e.principal, principal)) return refused('the token was issued to another principal');
    this.live.delete(key);
    return { conn: e.conn, key };
  }

  /**
   * The pool is too full for `bytes` more held for `tenant`: takes room back from the tenant holding the
   * most, when that is another tenant holding more than `tenant` would with the frame, by expiring its
   * detached connections (largest held first; their held frames are freed at once). True once the frame
   * fits within `limit`; false when it cannot fit without taking from a tenant holding no more than this
   * one (the caller's connection then expires, as it did before tenants were counted). So one tenant
   * filling the pool loses its own resumes, not another tenant's.
   */
  makeRoom(tenant: string, bytes: number, limit: number, reason: string): boolean {
    const pool = this.pool;
    while (pool.total + bytes > limit) {
      let top = '';
      let topBytes = 0;
      for (const slot of pool.tenants.values()) {
        if (slot.bytes > topBytes) {
          top = slot.tenant;
          topBytes = slot.bytes;
        }
      }
      if (top === tenant || topBytes <= pool.of(tenant) + bytes) return false;
      let victim: C | null = null;
      for (const c of this.detached) {
        const r = c.replay;
        if (r === null || r.tenant !== top || r.heldSize === 0) continue;
        if (victim === null || r.heldSize > (victim.replay as ReplayLog).heldSize) victim = c;
      }
      // The top tenant's bytes are windows of live connections (they shrink by themselves): nothing to take.
      if (victim === null) return false;
      const before = pool.total;
      void victim.expire(reason);
      if (pool.total >= before) return false; // it kept its bytes (already ending): no progress to make
    }
    return true;
  }

  /** Every detached connection's sessions are closed (server shutdown). */
  expireAll(reason: string): Promise<void> {
    return Promise.all([...this.detached].map((c) => c.expire(reason))).then(() => undefined);
  }
}

export function refused(reason: string): ProtocolError {
  return protocolError('RESUME_REFUSED', { reason }, { reason });
}

export function expired(reason: string): ProtocolError {
  return protocolError('RESUME_EXPIRED', { reason }, { reason });
}

export function resumeDisabled(): ProtocolError {
  const reason = 'this server does not offer resume (resume_grace_ms is 0)';
  return protocolError('RESUME_EXPIRED', { reason }, { reason });
}
