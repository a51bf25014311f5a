// Per-connection write coalescing and outbound backpressure.
//
// Why: `ws.send` ends in one `socket.write` -> one `writev`/`write` syscall per reply. With pipelined
// requests (or many sessions on one connection) a burst of replies is produced in one event-loop turn,
// and the syscalls were 37–44% of the server's CPU. Corking the underlying net.Socket on the first
// reply of a turn and uncorking it once at the end of that turn sends the whole burst in one writev.
//
// When to uncork: in `setImmediate`, i.e. the check phase of the SAME event-loop iteration. A
// microtask is too early: the replies of one session's queue are several promise hops apart (each
// `await` in drain/runOp), so a microtask flush would run after the first reply of a burst and
// coalesce almost nothing. `setImmediate` adds no latency to a lone reply either: while an immediate
// is pending libuv polls with a zero timeout, so the flush runs right after the I/O callbacks of the
// current iteration (measured: sequential step p50 unchanged, see bench/ws-overhead.bench.ts).
//
// Only frames sent while more are known to follow in this turn are held (`send(data, true)`: the
// connection still has requests running or unread frames in the socket chunk it is parsing). The last
// frame of a burst flushes what was held, at once, and a lone reply (one request in flight, the
// sequential client) is written directly: no cork, no immediate, no extra turn of the loop. The
// `setImmediate` flush stays as the bound for a burst whose remaining requests are slow (a sandbox
// command of another session): what was held never waits past the end of the turn.
//
// Backpressure policy (a client that does not read its replies):
//   - above `highWaterBytes` of unsent bytes (the socket's buffer + ws's own queue, i.e.
//     `ws.bufferedAmount`) we stop READING from that client (`ws.pause()`): it cannot make the server
//     produce more replies, and requests already read finish and queue their (bounded) replies;
//     reading resumes on the socket's 'drain' (buffer fully flushed to the kernel).
//   - when reads are ALREADY paused and the unsent bytes still pass `hardLimitBytes` (reachable only
//     through replies to requests read before the pause: one socket read can carry a thousand small
//     requests with large replies, e.g. list_envs or batch), the connection is terminated: a close
//     frame could not get through a full buffer anyway, and its sessions are closed by the normal
//     close path. A single large reply to a client that was keeping up only pauses reads: it never
//     terminates by itself. So the server holds at most hardLimitBytes + one reply per connection.
//   - a client that stops reading entirely also stops answering pings, so the heartbeat terminates
//     it within two heartbeat intervals; while paused its memory is bounded by the limits above.
//   - server-wide, an OutputBudget sums what every connection holds unsent (as last seen on a send or
//     a 'drain'), per tenant too (tenant-bytes.ts). When the sum passes its limit, a connection that is
//     itself above the high-water mark (a slow reader) is terminated on its next send if its tenant
//     holds at least an even share of the total: many slow readers together cannot hold more than about
//     limit + connections x highWaterBytes, clients that keep up are untouched, and one tenant filling
//     the budget gets its own readers cut off, never another tenant's (whose share is below its own).
import type { WebSocket } from 'ws';
import { TenantBytes, TenantShare } from './tenant-bytes.js';

/** Unsent bytes of all connections together, and per tenant (shared by every coalescer of one server). */
export class OutputBudget extends TenantBytes {
  /** Connections terminated because the total passed the limit. */
  overflows = 0;
  constructor(readonly limitBytes: number) {
    super();
  }
}

/** Unsent bytes above which we stop reading from the client. */
export const DEFAULT_HIGH_WATER_BYTES = 4 * 1024 * 1024;
/** Unsent bytes above which the connection is terminated. */
export const DEFAULT_HARD_LIMIT_BYTES = 64 * 1024 * 1024;

export interface WriteCoalescerOptions {
  highWaterBytes?: number;
  hardLimitBytes?: number;
  /** Called once when the hard limit (or the global budget) terminates the connection (for logging). */
  onOverflow?: (bufferedBytes: number) => void;
  /** The server-wide budget this connection's unsent bytes count against. */
  budget?: OutputBudget;
  /** Whose bytes they are in the budget until setTenant() (default: the connection alone). */
  tenant?: string;
}

/**
 * The part of net.Socket we use: the socket the WebSocket was upgraded on (the HTTP upgrade request's
 * `socket`, which ws then writes to), handed in by whoever accepted the upgrade.
 */
interface RawSocket {
  cork(): void;
  uncork(): void;
  readonly writableCorked: number;
  readonly writableNeedDrain: boolean;
  readonly destroyed: boolean;
  once(event: 'drain', fn: () => void): unknown;
  removeListener(event: 'drain', fn: () => void): unknown;
}

const OPEN = 1;

export class WriteCoalescer {
  /** True between the cork of a turn and its uncork. */
  private corked = false;
  /** True while reading is paused for backpressure. */
  private pausedForBackpressure = false;
  private terminated = false;
  /** What this connection currently counts in the budget, and for whom (setTenant); null without a budget. */
  private readonly share: TenantShare | null;
  /** A 'drain' listener is registered (to resume reads and/or to update the budget). */
  private awaitingDrain = false;
  private readonly highWater: number;
  private readonly hardLimit: number;
  /** The end-of-turn flush of what is held (cleared when the last frame of the burst flushes first). */
  private immediate: NodeJS.Immediate | null = null;
  private readonly flushBound = () => {
    this.immediate = null;
    this.flush();
  };
  private readonly onDrainBound = () => this.onDrain();

  constructor(
    private readonly ws: WebSocket,
    private readonly sock: RawSocket,
    private readonly opts: WriteCoalescerOptions = {},
  ) {
    this.highWater = opts.highWaterBytes ?? DEFAULT_HIGH_WATER_BYTES;
    this.share = opts.budget ? new TenantShare(opts.budget, opts.tenant ?? '') : null;
    this.hardLimit = Math.max(opts.hardLimitBytes ?? DEFAULT_HARD_LIMIT_BYTES, this.highWater);
    // Release everything we hold when the socket goes away (close or terminate): an uncork on a
    // destroyed socket is a no-op, but a pending 'drain' listener must not keep closures alive.
    ws.once('close', () => this.dispose());
  }

  /** True while reads are paused because the client is not reading its replies. */
  get paused(): boolean {
    return this.pausedForBackpressure;
  }

  /**
   * Queue one frame. Frames keep their order (one socket, one writer). `more`: more frames follow in
   * this event-loop turn, so this one is held and leaves with them in one write (at the latest at the
   * end of the turn); otherwise it leaves now, together with whatever was held. Returns false when the
   * frame was dropped because the connection is not open (as `ws.send` would drop it, without the
   * error callback).
   */
  send(data: string | Uint8Array, more = true): boolean {
    const ws = this.ws;
    if (ws.readyState !== OPEN || this.terminated) return false;
    if (more && !this.corked) {
      const sock = this.sock;
      if (!sock.destroyed) {
        this.corked = true;
        sock.cork();
        this.immediate = setImmediate(this.flushBound);
      }
    }
    // Write errors surface as the socket's 'error'/'close' (handled by ws -> Connection.onClose); a
    // callback per frame would cost an allocation per reply for nothing.
    ws.send(data);
    // The last frame of a burst: everything held leaves now, in one write.
    if (!more && this.corked) this.flush();
    const buffered = ws.bufferedAmount;
    const budget = this.opts.budget;
    if (budget) {
      this.account(buffered);
      if (budget.total > budget.limitBytes && buffered > this.highWater && budget.atLeastEvenShare((this.share as TenantShare).tenant)) {
        budget.overflows++;
        this.overflow(buffered);
        return true;
      }
    }
    if (buffered > this.highWater) this.backpressure(buffered);
    return true;
  }

  /** The connection's tenant is known (after hello): what it holds now counts as that tenant's. */
  setTenant(tenant: string): void {
    this.share?.moveTo(tenant);
  }

  /** Records this connection's unsent bytes in the budget, and asks to hear when they drain. */
  private account(buffered: number): void {
    const share = this.share;
    if (share === null) return;
    share.set(buffered);
    if (buffered > 0 && !this.awaitingDrain && this.sock.writableNeedDrain) {
      this.awaitingDrain = true;
      this.sock.once('drain', this.onDrainBound);
    }
  }

  private overflow(buffered: number): void {
    if (this.terminated) return;
    this.terminated = true;
    this.opts.onOverflow?.(buffered);
    this.dispose();
    this.ws.terminate();
  }

  /** Write out everything held for this turn (also safe to call at any time, e.g. before close). */
  flush(): void {
    if (!this.corked) return;
    this.corked = false;
    if (this.immediate !== null) {
      clearImmediate(this.immediate);
      this.immediate = null;
    }
    const sock = this.sock;
    // Uncork exactly the one cork we took; ws's own nested cork/uncork pairs are balanced.
    if (sock.writableCorked > 0) sock.uncork();
    // What the kernel took is no longer held: the budget sees this turn's remainder (usually 0).
    if (this.share !== null && this.share.held > 0) this.account(this.ws.bufferedAmount);
  }

  private backpressure(buffered: number): void {
    if (this.pausedForBackpressure && buffered > this.hardLimit) return this.overflow(buffered);
    // 'drain' only fires after a write was refused (buffer above the socket's own high-water mark);
    // pausing without it would never resume, so wait for the next send to cross that mark.
    if (this.pausedForBackpressure || !this.sock.writableNeedDrain) return;
    this.pausedForBackpressure = true;
    this.ws.pause();
    if (!this.awaitingDrain) {
      this.awaitingDrain = true;
      this.sock.once('drain', this.onDrainBound);
    }
  }

  private onDrain(): void {
    this.awaitingDrain = false;
    if (this.share !== null) this.account(this.ws.bufferedAmount);
    if (!this.pausedForBackpressure) return;
    this.pausedForBackpressure = false;
    if (this.ws.readyState === OPEN) this.ws.resume();
  }

  private dispose(): void {
    this.flush();
    if (this.awaitingDrain) this.sock.removeListener('drain', this.onDrainBound);
    this.awaitingDrain = false;
    this.pausedForBackpressure = false;
    // Whatever is still unsent goes with the socket.
    this.share?.set(0);
  }
}
