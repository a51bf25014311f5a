// A connection's sessions: which ids it holds, which it closed (a second close is `{}`), the makes it
// has in flight, and their capacity slots in the server's ledger. Everything that adds or removes a
// session of a connection goes through here, so the ledger and the books cannot drift apart.
import type { ProtocolError } from '#protocol/index.js';
import type { CapacityLedger } from '../admission/capacity-ledger.js';
import type { Session } from '../session/session.js';

/** Ids of sessions closed on this connection are remembered (bounded) so a second close is `{}`. */
const MAX_CLOSED_IDS = 100_000;

/** Slots taken for sessions being made: either booked (the sessions opened) or cancelled, once. */
export interface Reservation {
  /** The sessions opened: they go to the books that hold the connection's sessions now (after a resume, the new one's). */
  book(sessions: readonly Session[]): void;
  /** The make failed or nobody is left to answer: the slots go back. */
  cancel(): void;
}

export class SessionBook {
  private readonly open = new Map<string, Session>();
  private readonly closedIds = new Set<string>();
  /** Makes (and group members) in flight: they count toward max_sessions_per_connection. */
  private pending = 0;
  /** The books a resume moved these to: reservations made here are settled there. */
  private successor: SessionBook | null = null;

  constructor(private readonly ledger: CapacityLedger) {}

  get size(): number {
    return this.open.size;
  }

  /** Open sessions and makes in flight. */
  get held(): number {
    return this.open.size + this.pending;
  }

  get(id: string): Session | undefined {
    return this.open.get(id);
  }

  has(id: string): boolean {
    return this.open.has(id);
  }

  /** This connection closed a session of that id (a later close of it is `{}`). */
  closedHere(id: string): boolean {
    return this.closedIds.has(id);
  }

  values(): IterableIterator<Session> {
    return this.open.values();
  }

  ids(): string[] {
    return [...this.open.keys()];
  }

  /** `n` slots for sessions about to be made, or the CAPACITY error of the cap they would pass. */
  reserve(n: number): Reservation | ProtocolError {
    const refused = this.ledger.take(this.held, n);
    if (refused !== null) return refused;
    this.pending += n;
    let settled = false;
    const settle = (): SessionBook => {
      if (settled) throw new Error('a reservation is settled once');
      settled = true;
      const at = this.latest();
      at.pending -= n;
      return at;
    };
    return {
      book: (sessions) => {
        const at = settle();
        // n slots taken, sessions.length booked: a group books all of its members or cancels.
        if (sessions.length !== n) this.ledger.give(n - sessions.length);
        for (const s of sessions) at.open.set(s.id, s);
      },
      cancel: () => {
        settle();
        this.ledger.give(n);
      },
    };
  }

  /** Removes a closed session, once: true if it was here. Its slot goes back to the ledger. */
  remove(s: Session): boolean {
    if (this.open.get(s.id) !== s) return false;
    this.open.delete(s.id);
    if (this.closedIds.size >= MAX_CLOSED_IDS) this.closedIds.clear();
    this.closedIds.add(s.id);
    this.ledger.give(1);
    return true;
  }

  /**
   * A resume: the sessions, the makes in flight (they count against the new connection's cap now, else a
   * client could resume a connection full of pending makes and make as many again beside them) and the
   * closed ids move to `to`. The idle clocks move by the time away, never restart (a resume is no activity).
   */
  moveTo(to: SessionBook, awayMs: number): void {
    this.successor = to;
    for (const [id, s] of this.open) {
      s.idleClockPaused(awayMs);
      to.open.set(id, s);
    }
    this.open.clear();
    to.pending += this.pending;
    this.pending = 0;
    for (const id of this.closedIds) to.closedIds.add(id);
  }

  private latest(): SessionBook {
    let b: SessionBook = this;
    while (b.successor !== null) b = b.successor;
    return b;
  }
}
