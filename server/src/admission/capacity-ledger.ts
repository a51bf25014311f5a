// Session capacity: max_sessions server-wide and max_sessions_per_connection, counted in this one
// object. A slot is taken when a make or group is accepted, before its first await (so concurrent makes
// cannot overshoot the caps), and given back once: when its make fails, or when its session closes.
import { protocolError, type ProtocolError } from '#protocol/index.js';

/** Suggested wait before retrying a make refused for capacity (also a full session queue). */
export const CAPACITY_RETRY_MS = 1000;

export class CapacityLedger {
  /** Open sessions server-wide, including makes in flight. */
  private used = 0;

  constructor(
    private readonly maxSessions: number,
    private readonly maxPerConnection: number,
  ) {}

  /** Open sessions server-wide, including makes in flight (the sandgym_sessions gauge). */
  get sessions(): number {
    return this.used;
  }

  /**
   * Takes `n` slots for a connection that holds `held` (open sessions and makes in flight), or returns
   * the CAPACITY error saying which cap `n` more would pass (nothing is taken then).
   */
  take(held: number, n: number): ProtocolError | null {
    let limit: 'max_sessions_per_connection' | 'max_sessions' | null = null;
    if (held + n > this.maxPerConnection) limit = 'max_sessions_per_connection';
    else if (this.used + n > this.maxSessions) limit = 'max_sessions';
    if (limit === null) {
      this.used += n;
      return null;
    }
    // One session: the cap reached (the reason a make always gave); more: the group that would pass it.
    const reason =
      n === 1
        ? limit === 'max_sessions'
          ? `server max_sessions (${this.maxSessions}) reached`
          : `max_sessions_per_connection (${this.maxPerConnection}) reached`
        : `a group of ${n} would pass ${limit}`;
    return protocolError('CAPACITY', { reason }, { reason, retry_after_ms: CAPACITY_RETRY_MS, limit });
  }

  /** Gives back `n` slots (a make that failed, a session that closed). */
  give(n: number): void {
    this.used -= n;
  }
}
