// The resume link of a connection (PROTOCOL.md §5a): its resume token, the replay log of its replies,
// the detached state after a drop (grace timer, frames held meanwhile), expiry, and the hand-over of
// its sessions to the connection that resumes it. The token table (resume.ts) holds links; a link
// reaches its connection only through LinkHost.
import { protocolError as err, ProtocolError, type ResumeRequest } from '#protocol/index.js';
import type { ServerConfig } from '../config.js';
import { expired, refused, ReplayLog, resumeDisabled, sizeOf, type Frame, type Resumable, type ResumeTokens } from '../transport/resume.js';

/** The close code a socket gets when it ended without a close frame (RFC 6455 §7.1.5): a drop. */
const ABNORMAL_CLOSURE = 1006;

/** What a link needs of its connection. */
export interface LinkHost {
  /** Sessions or makes in flight (a drop of a connection holding nothing is a goodbye). */
  holdsSessions(): boolean;
  /** Closes every session it holds (no resume will come), for `reason`. */
  closeAllSessions(reason: string): Promise<void>;
  /** A resume took this connection's sessions: they, its makes in flight and its closed ids move to `to`. */
  moveTo(to: this, awayMs: number): void;
  /** Ids of the sessions it holds (the resume result). */
  sessionIds(): string[];
  /** Writes an encoded frame to its socket. */
  write(data: string | Uint8Array): void;
}

export interface LinkOptions {
  readonly config: Pick<ServerConfig, 'resume_grace_ms' | 'max_queued_requests' | 'max_queued_bytes' | 'max_buffered_output_bytes'>;
  readonly log: { info(o: object, m: string): void; debug(o: object, m: string): void };
}

/** A resume's answer: the result to send (the owed frames follow it), or the error. */
export type ResumeOutcome = { ok: true; result: Record<string, unknown>; deliver: () => void } | { ok: false; error: ProtocolError };

export class ResumeLink<H extends LinkHost> implements Resumable {
  /** Ids owed a reply, recent replies and frames held while detached; null when resume_grace_ms is 0. */
  readonly replay: ReplayLog | null;
  /** Key of this connection's live resume token in the table. */
  private key: string | null = null;
  /** The socket dropped and the sessions wait for a resume (the grace timer runs). */
  private detachedNow = false;
  /** When the socket dropped (Date.now()); the idle clocks of the sessions pause from here to the resume. */
  private detachedAt = 0;
  private graceTimer: NodeJS.Timeout | null = null;
  /** No resume can take this connection's sessions any more: closed on purpose, expired or handed over. */
  private endedNow = false;
  /** The link that resumed this one: replies of requests still running here follow the sessions there. */
  private successor: ResumeLink<H> | null = null;

  constructor(
    readonly host: H,
    private readonly tokens: ResumeTokens<ResumeLink<H>>,
    private readonly opts: LinkOptions,
  ) {
    const c = opts.config;
    // All connections' replay logs together stay within max_buffered_output_bytes (resume.ts ReplayPool).
    this.replay = c.resume_grace_ms > 0 ? new ReplayLog(c.max_queued_requests, c.max_queued_bytes, tokens.pool, c.max_buffered_output_bytes) : null;
  }

  get ended(): boolean {
    return this.endedNow;
  }

  get detached(): boolean {
    return this.detachedNow;
  }

  /** Handed over: the link (and connection) that holds what this one held. */
  get movedOn(): boolean {
    return this.successor !== null;
  }

  /** The link that now holds what this one held (itself unless a resume took it over). */
  latest(): ResumeLink<H> {
    let l: ResumeLink<H> = this;
    while (l.successor !== null) l = l.successor;
    return l;
  }

  /** The server ended the connection for a reason the client must act on: nothing to resume. */
  end(): void {
    this.endedNow = true;
  }

  /** hello: the connection's first resume token (null when the server offers no resume). */
  issue(principal: Buffer): string | null {
    if (this.replay === null) return null;
    const issued = this.tokens.issue(this, principal);
    this.key = issued.key;
    return issued.token;
  }

  /**
   * A drop, not a goodbye: the socket ended without a close frame from the client (1006: a cut
   * connection, a dead peer, a missed heartbeat), after hello, while it held something a resume could
   * return. Any close frame, whatever its code, is the client saying it is done.
   */
  mayDetach(code: number | undefined, handshaken: boolean, shuttingDown: boolean): boolean {
    const r = this.replay;
    if (r === null || this.endedNow || !handshaken || shuttingDown) return false;
    if (code !== ABNORMAL_CLOSURE) return false;
    return this.host.holdsSessions() || r.inflight.size > 0 || r.heldCount > 0;
  }

  detach(sessions: number): void {
    this.detachedNow = true;
    this.detachedAt = Date.now();
    this.tokens.detached.add(this);
    const grace = this.opts.config.resume_grace_ms;
    this.graceTimer = setTimeout(() => void this.expire(`the grace period of ${grace} ms passed without a resume`), grace);
    this.graceTimer.unref();
    this.opts.log.info({ sessions, grace_ms: grace }, 'connection dropped; sessions held for a resume');
  }

  /** The socket closed for good (no detach): the token dies with it. */
  goodbye(): void {
    this.endedNow = true;
    this.tokens.revoke(this.key);
    this.key = null;
    this.replay?.clear();
  }

  /** A frame produced while the socket is gone; past the session queue limits the sessions are closed. */
  hold(f: Frame): void {
    const r = this.replay as ReplayLog;
    let held = r.hold(f);
    if (held === true) return;
    const c = this.opts.config;
    // Server-wide room taken back from a tenant holding more than this one (resume.ts makeRoom).
    if (
      held === 'pool' &&
      this.tokens.makeRoom(
        r.tenant,
        sizeOf(f.data),
        c.max_buffered_output_bytes,
        `the replies held for the resume passed max_buffered_output_bytes (${c.max_buffered_output_bytes}) server-wide, of which this client's tenant held the most when another tenant's reply needed room`,
      )
    ) {
      held = r.hold(f);
      if (held === true) return;
    }
    void this.expire(
      `the replies held for the resume passed the limits (max_queued_requests ${c.max_queued_requests}, max_queued_bytes ${c.max_queued_bytes}, or max_buffered_output_bytes ${c.max_buffered_output_bytes} server-wide)`,
    );
  }

  /**
   * No resume will come (grace passed, held replies overflowed, shutdown): the sessions are closed,
   * their sandboxes released, and a later resume with the token gets RESUME_EXPIRED saying why.
   */
  expire(reason: string): Promise<void> {
    if (this.endedNow) return Promise.resolve();
    this.endedNow = true;
    this.detachedNow = false;
    this.tokens.detached.delete(this);
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    const sessions = this.host.sessionIds();
    this.tokens.revoke(this.key, { spent: false, reason, sessions });
    this.key = null;
    this.replay?.clear();
    this.opts.log.info({ sessions: sessions.length, reason }, 'no resume: sessions closed');
    return this.host.closeAllSessions(reason);
  }

  /**
   * resume: takes the sessions of the connection the token names (detached, or still open when the
   * client saw the drop first), answers which pending ids were never received, then delivers the
   * replies owed, in the order they were produced, each once.
   */
  resume(m: ResumeRequest, principal: Buffer, shuttingDown: boolean): ResumeOutcome {
    const r = this.replay;
    if (r === null) return { ok: false, error: resumeDisabled() };
    // During a shutdown a connection whose sessions are being closed has none left on its books, and
    // could take a detached connection's: they would escape both its shutdown and expireAll, closed
    // (unawaited) only when the socket goes, after the server said it was done (resume-attacks.test.ts).
    if (shuttingDown) return { ok: false, error: err('SHUTTING_DOWN') };
    if (this.host.holdsSessions()) return { ok: false, error: refused('this connection already holds sessions; resume on a new connection') };
    // Checked before claiming, so presenting one's own token does not spend it.
    const holder = this.tokens.peek(m.token);
    if (holder === this) return { ok: false, error: refused("the token is this connection's own") };
    // The server closed that connection (its token lives until the socket is gone): nothing to take.
    if (holder?.ended) return { ok: false, error: expired('the server closed that connection') };
    const claimed = this.tokens.claim(m.token, principal);
    if (claimed instanceof ProtocolError) {
      this.opts.log.debug({ code: claimed.code }, 'resume refused');
      return { ok: false, error: claimed };
    }
    this.tokens.revoke(claimed.key, { spent: true, reason: 'spent', sessions: [] });
    const owed = claimed.conn.handOver(this, m.pending ?? []);
    // One live token per connection: the one its hello returned is spent too.
    this.tokens.revoke(this.key, { spent: true, reason: 'replaced', sessions: [] });
    const issued = this.tokens.issue(this, principal);
    this.key = issued.key;
    const sessions = this.host.sessionIds();
    return {
      ok: true,
      result: { resume_token: issued.token, sessions, unseen: owed.unseen, lost: owed.lost },
      deliver: () => {
        for (const f of owed.frames) {
          this.host.write(f.data);
          if (f.id !== null) {
            r.received(f.id);
            r.sent(f);
          }
        }
        this.opts.log.info(
          { sessions: sessions.length, delivered: owed.frames.length, unseen: owed.unseen.length, lost: owed.lost.length },
          'connection resumed',
        );
      },
    };
  }

  /** The resume side of `resume`: this connection's sessions and what it owes move to `to`. */
  private handOver(to: ResumeLink<H>, pending: readonly number[]): { unseen: number[]; lost: number[]; frames: Frame[] } {
    // Time away counts only for a connection that was detached: one still open (the client saw the drop
    // first) was never away, and its detachedAt is 0 (the idle clocks used to jump by Date.now(), so its
    // sessions were never reaped for idleness again).
    const awayMs = this.detachedNow ? Math.max(0, Date.now() - this.detachedAt) : 0;
    this.endedNow = true;
    this.successor = to;
    this.detachedNow = false;
    this.tokens.detached.delete(this);
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    this.key = null;
    this.host.moveTo(to.host, awayMs);
    return (this.replay as ReplayLog).handOver(pending, to.replay as ReplayLog);
  }
}
