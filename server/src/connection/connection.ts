// One WebSocket connection: decode, dispatch, session requests and batches, replies. It composes the
// parts that each own one concern: Transport (socket, writes, byte budgets, deadlines, heartbeat),
// Handshake (hello, identity), SessionBook (its sessions and their capacity slots), SessionOpener (make,
// group), ResumeLink (resume token, replay log, drop and hand-over). A session's queue is the session's.
// The step path is kept tight: one decode, a hand-checked fast path instead of the generic validator, a
// Map lookup, the session's queue, the env call, one encodability check, one encode.
import type { Socket } from 'node:net';
import type { RawData, WebSocket } from 'ws';
import {
  CLOSE_CODES,
  decodeFrame,
  encodeCheckedFrame,
  encodeFrame,
  extractRequestId,
  protocolError as err,
  refusedRequestId,
  validateRequest,
  type BatchItem,
  type HelloRequest,
  type Request,
  type ResumeRequest,
  type StepRequest,
} from '#protocol/index.js';
import { ProtocolError, reasonOf, sessionClosed } from '../errors.js';
import type { ConnectionHandle, ServerCore } from '../server-core.js';
import type { BatchCollector, Job, JobOwner, Session, SessionRequest, SessionResult } from '../session/session.js';
import { Handshake } from './handshake.js';
import { ResumeLink, type LinkHost } from './resume-link.js';
import { SessionBook } from './session-book.js';
import { drainingRefusal, SessionOpener, type OpenerHost } from './session-opener.js';
import { Transport } from '../transport/transport.js';

const UINT32_MAX = 0xffffffff;

function validId(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= UINT32_MAX;
}

/**
 * The hot path: `{"id", "type": "step", "session", "action"}` with nothing else, i.e. exactly what
 * request-step.json accepts. Anything that is not exactly this shape goes through the generic
 * (precompiled) validator.
 */
function isPlainStep(msg: unknown): msg is StepRequest {
  if (typeof msg !== 'object' || msg === null) return false;
  const m = msg as Record<string, unknown>;
  if (m.type !== 'step' || !validId(m.id) || typeof m.session !== 'string' || m.action === undefined) return false;
  let n = 0;
  for (const _k in m) n++;
  return n === 4;
}

type ServerCloseCode = 'TIMEOUT' | 'SANDBOX_ERROR' | 'SHUTTING_DOWN' | 'PREEMPTED';

/** The server core as a connection sees it: its resume tokens hold connections' links. */
export type ConnectionCore = ServerCore<ResumeLink<Connection>>;

export class Connection implements ConnectionHandle, LinkHost, JobOwner {
  /** Unique within the server process (episode events name it). */
  readonly id: string;
  readonly book: SessionBook;
  private readonly transport: Transport;
  private readonly handshake: Handshake;
  private readonly link: ResumeLink<Connection>;
  private readonly opener: SessionOpener;
  /** The `shutdown` event was sent (a drain announces it before the shutdown that closes the socket). */
  private shutdownAnnounced = false;
  /** Encoding of the last request: used for frames the server originates (events). */
  private lastBinary = false;
  /**
   * Session requests and batch items accepted (enqueue) and not yet answered (reply). While any is,
   * or a make is, a frame is held for the others' replies so a burst leaves in one write; the frame
   * that finds none left writes at once (write-coalescer.ts).
   */
  private outstanding = 0;

  constructor(
    ws: WebSocket,
    /** The socket ws was upgraded on (the upgrade request's): the write coalescer corks it. */
    socket: Socket,
    private readonly core: ConnectionCore,
    authorization: string | undefined,
  ) {
    this.id = core.nextConnectionId();
    this.book = new SessionBook(core.capacity);
    this.handshake = new Handshake({ tokens: core.tokens, helloResult: core.helloResult, scheduler: core.sandbox?.scheduler ?? null }, this.id);
    this.link = new ResumeLink(this, core.resume, { config: core.config, log: core.log });
    this.transport = new Transport(
      ws,
      socket,
      { config: core.config, output: core.output, log: core.log, tenant: `conn:${this.id}`, sessions: () => this.book.size },
      {
        message: (data, isBinary) => this.onMessage(data, isBinary),
        closed: (code) => this.onClose(code),
        refuse: (e, binary) => {
          this.sendError(null, e, binary ?? this.lastBinary);
          // The server ended it for a reason the client must act on: nothing to resume.
          this.link.end();
        },
      },
    );
    this.opener = new SessionOpener(core, this.openerHost());
    core.addConnection(this, this.transport.address);
    core.log.debug({ connections: core.connections.size }, 'connection opened');
    if (core.shuttingDown) {
      this.sendError(null, err('SHUTTING_DOWN'), false);
      this.transport.close(CLOSE_CODES.SHUTTING_DOWN, 'server is shutting down');
      return;
    }
    if (!this.handshake.authorizeHeader(authorization)) this.reject('invalid bearer token in Authorization header', null, false);
  }

  /** The connection that now holds what this one held (itself unless a resume took it over). */
  private latest(): Connection {
    return this.link.latest().host;
  }

  private openerHost(): OpenerHost {
    return {
      id: this.id,
      book: this.book,
      identity: this.handshake,
      gone: () => {
        const owner = this.latest();
        return owner.link.ended || (owner.transport.isStopped && !owner.link.detached);
      },
      reply: (id, result, bin) => this.sendResult(id, result, bin),
      fail: (id, e, bin) => this.sendError(id, e, bin),
      event: (name, session, details) => this.latest().sendEvent(name, session, details),
      serverClose: (sid, reason, code) => this.serverClose(sid, reason, code),
    };
  }

  // ---- what the server core reads (ConnectionHandle) ----

  socketBytes(): { read: number; written: number } {
    return this.transport.socketBytes();
  }

  runningEpisodes(): number {
    let n = 0;
    for (const s of this.book.values()) if (s.busy || s.state === 'running') n++;
    return n;
  }

  queuedRequests(): number {
    let n = 0;
    for (const s of this.book.values()) n += s.waiting;
    return n;
  }

  checkUnfinishedMessage(now: number, timeoutMs: number): void {
    this.transport.checkUnfinishedMessage(now, timeoutMs);
  }

  heartbeat(): void {
    if (this.transport.heartbeat()) this.core.log.info({ sessions: this.book.size }, 'connection missed a heartbeat; terminating');
  }

  reapIdle(cutoff: number, idleMs: number): void {
    for (const s of this.book.values()) {
      if (s.isIdleSince(cutoff)) void this.serverClose(s.id, `idle for ${idleMs} ms`, 'TIMEOUT');
    }
  }

  // ---- inbound ----

  private onMessage(data: RawData, isBinary: boolean): void {
    let msg: unknown;
    const bytes = (data as Uint8Array).length;
    try {
      msg = decodeFrame(data as Uint8Array, isBinary, { maxBytes: this.core.config.max_message_bytes });
    } catch (e) {
      this.onDecodeError(e, isBinary);
      return;
    }
    this.lastBinary = isBinary;
    try {
      // Fast path only for sessions we issued (their ids are schema-valid by construction); anything
      // else goes through the validator so the error is exactly what the schema says.
      if (isPlainStep(msg) && this.handshake.handshaken && this.book.has(msg.session)) {
        if (this.link.replay !== null) this.link.replay.received(msg.id);
        this.enqueue(msg, msg.id, isBinary, null, 0, bytes);
        return;
      }
      const v = validateRequest(msg);
      if (!v.ok) {
        this.sendError(extractRequestId(msg), v.error, isBinary);
        return;
      }
      this.dispatch(v.msg, isBinary, bytes);
    } catch (e) {
      this.core.log.error({ err: e }, 'internal error handling a request');
      this.sendError(extractRequestId(msg), err('INTERNAL', { reason: reasonOf(e) }), isBinary);
    }
  }

  private onDecodeError(e: unknown, isBinary: boolean): void {
    if (e instanceof ProtocolError) {
      // A refused value inside a readable frame is answered with the frame's id (PROTOCOL.md §2).
      this.sendError(refusedRequestId(e), e, isBinary);
      if (e.code === 'TOO_LARGE') {
        // The server ends it: a goodbye (§5a), even if the client then drops instead of answering the
        // close frame (1006), which used to detach the connection and keep its sessions for a resume.
        this.link.end();
        this.transport.close(CLOSE_CODES.TOO_LARGE, 'message too large');
      }
      return;
    }
    this.sendError(null, err('PARSE_ERROR', { reason: reasonOf(e) }), isBinary);
  }

  /** A validated request: its type says which fields it has. */
  private dispatch(m: Request, bin: boolean, bytes: number): void {
    switch (m.type) {
      case 'ping':
        return this.sendResult(m.id, m.t === undefined ? {} : { t: m.t }, bin);
      case 'hello':
        return this.hello(m, bin);
    }
    if (!this.handshake.handshaken) return this.sendError(m.id, err('HANDSHAKE_REQUIRED'), bin);
    if (m.type === 'resume') return this.resume(m, bin);
    // A reply is owed from here on: a resume must know whether this id was received.
    if (this.link.replay !== null) this.link.replay.received(m.id);
    switch (m.type) {
      case 'step':
      case 'reset':
      case 'close':
        return this.enqueue(m, m.id, bin, null, 0, bytes);
      case 'batch':
        return this.batch(m.id, m.requests, bin, bytes);
      case 'list_envs':
        return this.sendResult(m.id, { envs: this.core.registry.specs() }, bin);
      case 'make':
        return void this.opener.make(m, bin, bytes);
      case 'group':
        return void this.opener.group(m, bin);
      default: {
        // Unreachable: validateRequest accepts no other type, and a request schema added without a
        // case here is a type error on this line. Thrown, it would be answered as INTERNAL.
        const unhandled: never = m;
        throw new Error(`no handler for request ${JSON.stringify(unhandled)}`);
      }
    }
  }

  private hello(m: HelloRequest, bin: boolean): void {
    const h = this.handshake.hello(m, () => this.link.issue(this.handshake.principal));
    if (!h.ok) {
      this.sendError(m.id, h.error, bin);
      if (h.unauthorized) this.closeWith(CLOSE_CODES.UNAUTHORIZED, 'unauthorized');
      return;
    }
    // The pre-auth budget and deadline end here.
    this.core.pendingHandshakes--;
    this.transport.handshakeDone();
    // Whose bytes this connection's unsent replies and resume log are (max_buffered_output_bytes per tenant).
    const tenant = this.handshake.tenant();
    this.transport.setTenant(tenant);
    this.link.replay?.setTenant(tenant);
    this.sendResult(m.id, h.result, bin);
  }

  private reject(reason: string, id: number | null, bin: boolean): void {
    this.sendError(id, err('UNAUTHORIZED', { reason }, { reason }), bin);
    this.closeWith(CLOSE_CODES.UNAUTHORIZED, 'unauthorized');
  }

  /** Close with `code` for a reason the client must act on: nothing to resume. */
  private closeWith(code: number, reason: string): void {
    this.link.end();
    this.transport.closeWith(code, reason);
  }

  private resume(m: ResumeRequest, bin: boolean): void {
    const r = this.link.resume(m, this.handshake.principal, this.core.shuttingDown);
    if (!r.ok) return this.sendError(m.id, r.error, bin);
    this.sendResult(m.id, r.result, bin);
    r.deliver();
  }

  // ---- session requests ----

  private enqueue(item: SessionRequest, id: number, bin: boolean, batch: BatchCollector | null, index: number, bytes: number): void {
    // Every enqueue ends in exactly one reply (below, closeNow or the session's settle), which counts it down.
    this.outstanding++;
    const s = this.book.get(item.session);
    if (s === undefined) {
      // A second close of a session this connection closed is {}; anything else names no session.
      const closed = this.book.closedHere(item.session);
      const e = closed && item.type === 'close' ? null : closed ? sessionClosed(item.session) : err('UNKNOWN_SESSION', { session: item.session });
      this.reply({ owner: this, item, id, binary: bin, batch, index, bytes: 0 }, {}, e);
      return;
    }
    s.touch();
    const job: Job = { owner: this, item, id, binary: bin, batch, index, bytes };
    const limits = this.core.opLimits;
    if (item.type === 'close') {
      // A standalone close that finds a request running and none waiting abandons the running one
      // instead of waiting behind it (PROTOCOL.md §3). Requests pipelined before the close still run
      // first, in order (§5), and a close inside a batch keeps its place among the batch's items.
      if (s.busy && s.waiting === 0 && batch === null) return this.closeNow(s, job);
    } else {
      // A draining server lets running episodes finish but starts none.
      const full = item.type === 'reset' && this.core.draining ? drainingRefusal() : s.queueFull(bytes, limits);
      if (full) return this.reply(job, {}, full);
    }
    s.submit(job, limits);
  }

  /** A job of a session's queue is done (JobOwner): a close that succeeded removes the session, then the reply. */
  settle(s: Session, job: Job, result: SessionResult, error: ProtocolError | null): void {
    if (job.item.type === 'close' && !error) this.forget(s, 'closed by client');
    this.reply(job, result, error);
  }

  /**
   * Close while a request runs: the session is closed at once (the env's signal aborts, the running
   * call is abandoned and answered UNKNOWN_SESSION/closed, its sandboxes are released), the requests
   * waiting behind it are answered the same way by the session's queue, and the close is answered when
   * the session's close is done (bounded by Session.close's own deadline).
   */
  private closeNow(s: Session, job: Job): void {
    this.forget(s, 'closed by client');
    void s.close().then(() => this.reply(job, {}, null));
  }

  private batch(id: number, items: BatchItem[], bin: boolean, bytes: number): void {
    const max = this.core.config.max_batch;
    if (items.length > max) {
      const reason = `batch of ${items.length} items exceeds max_batch (${max})`;
      this.sendError(id, err('INVALID_MESSAGE', { reason }, { reason, max_batch: max }), bin);
      return;
    }
    const collector: BatchCollector = { id, binary: bin, results: new Array(items.length), remaining: items.length };
    // Items are enqueued synchronously in order, so items of one session run in order.
    // Queue bytes: the frame's size shared among its items.
    const share = Math.ceil(bytes / items.length);
    items.forEach((item, i) => this.enqueue(item, id, bin, collector, i, share));
  }

  /**
   * The reply to a session request: its own frame, or its slot of a batch. `result` is a checked
   * session result (Session.run); `error`, when set, replaces it.
   */
  private reply(job: Job, result: SessionResult, error: ProtocolError | null): void {
    this.outstanding--;
    const b = job.batch;
    if (b === null) {
      if (error) this.sendError(job.id, error, job.binary);
      else this.send({ id: job.id, type: 'result', result }, job.binary, true);
      return;
    }
    b.results[job.index] = error ? { type: 'error', error: error.toWire() } : { type: 'result', result };
    // Every slot is a checked session result or an error the server built from strings and numbers.
    if (--b.remaining === 0) this.send({ id: b.id, type: 'result', result: { results: b.results } }, b.binary, true);
  }

  /** Remove a closed session from this connection's books (once), and tell the episode observers. */
  private forget(s: Session, why: string, code?: ServerCloseCode): void {
    if (this.link.movedOn) return this.latest().forget(s, why, code);
    if (!this.book.remove(s)) return;
    s.logger.info({ reason: why }, 'session closed');
    const obs = this.core.observers;
    if (obs.active) {
      const e = { session_id: s.id, env_id: s.env.def.id, episode_id: s.openEpisodeId, reason: why, t: Date.now() };
      // A preempted episode is abandoned (never scored, PROTOCOL.md §11a): the observers get no code for it.
      obs.close(code === undefined || code === 'PREEMPTED' ? e : { ...e, code });
    }
  }

  /**
   * Server-initiated close (idle, sandbox died, shutdown): event + close. A request still running is
   * answered with `code` (SHUTTING_DOWN, SANDBOX_ERROR: what the client should act on), not as closed.
   */
  serverClose(sessionId: string, reason: string, code: ServerCloseCode): Promise<void> {
    if (this.link.movedOn) return this.latest().serverClose(sessionId, reason, code);
    const s = this.book.get(sessionId);
    if (!s) return Promise.resolve();
    this.forget(s, reason, code);
    // A detached connection holds the event for the resume.
    if (!this.link.ended && (!this.transport.isStopped || this.link.detached)) this.sendEvent('session_closed', s.id, { reason, code });
    return s.close(err(code, { reason, op: 'step' }, { reason }));
  }

  // ---- outbound ----

  /**
   * Encodes and writes one frame. `checked`: every value in it has been checked already (Session.run
   * checks env results; the rest are the server's own strings and numbers), so it is encoded without
   * walking it again; any other frame is checked here, once.
   */
  private send(frame: { id?: number | null; type: string; [field: string]: unknown }, bin: boolean, checked = false): void {
    // Handed over by a resume: the reply goes where the sessions went.
    if (this.link.movedOn) return this.latest().send(frame, bin, checked);
    const open = this.transport.open;
    const replay = this.link.replay;
    // A dropped socket of a resumable connection: the frame is held for the resume.
    if (!open && (replay === null || this.link.ended || !this.handshake.handshaken)) return;
    let data: string | Uint8Array;
    try {
      data = checked ? encodeCheckedFrame(frame, bin) : encodeFrame(frame, bin);
    } catch (e) {
      // Unreachable for checked results; a bug if it happens, so say so instead of crashing.
      this.core.log.error({ err: e }, 'could not encode a reply');
      data = encodeFrame(err('INTERNAL', { reason: 'reply could not be encoded' }).toFrame(frame.id ?? null), bin);
    }
    const id = typeof frame.id === 'number' ? frame.id : null;
    if (!open) return this.link.hold({ id, data });
    // More frames follow this turn: requests of this connection are still running, or the socket chunk holds more.
    this.transport.write(data, this.outstanding > 0 || this.book.held > this.book.size || this.transport.moreInChunk());
    if (replay !== null && id !== null) replay.sent({ id, data });
  }

  private sendResult(id: number, result: object, bin: boolean): void {
    this.send({ id, type: 'result', result }, bin);
  }

  private sendError(id: number | null, e: ProtocolError, bin: boolean): void {
    this.send(e.toFrame(id), bin);
  }

  private sendEvent(event: string, session: string | undefined, details: Record<string, unknown>): void {
    this.send(session === undefined ? { type: 'event', event, details } : { type: 'event', event, details, session }, this.lastBinary);
  }

  // ---- the resume link's side (LinkHost) ----

  holdsSessions(): boolean {
    return this.book.held > 0;
  }

  sessionIds(): string[] {
    return this.book.ids();
  }

  write(data: string | Uint8Array): void {
    this.transport.write(data);
  }

  closeAllSessions(reason: string): Promise<void> {
    return Promise.all(
      [...this.book.values()].map((s) => {
        this.forget(s, reason);
        return s.close();
      }),
    ).then(() => undefined);
  }

  moveTo(to: Connection, awayMs: number): void {
    this.transport.stop();
    this.book.moveTo(to.book, awayMs);
    // Still open (the client saw the drop before the server did): this socket is done.
    this.transport.closeIfOpen(CLOSE_CODES.NORMAL, 'resumed on another connection');
  }

  // ---- lifecycle ----

  private onClose(code: number): void {
    this.core.removeConnection(this, this.transport.address, this.handshake.handshaken);
    this.core.log.debug({ sessions: this.book.size, code }, 'connection closed');
    if (this.link.mayDetach(code, this.handshake.handshaken, this.core.shuttingDown)) return this.link.detach(this.book.size);
    this.link.goodbye();
    for (const s of [...this.book.values()]) {
      this.forget(s, 'connection closed');
      void s.close();
    }
  }

  /** The `shutdown` event, once: at the start of a drain (with its grace) or at shutdown. */
  announceShutdown(graceMs?: number): void {
    if (this.shutdownAnnounced) return;
    this.shutdownAnnounced = true;
    if (graceMs === undefined) this.sendEvent('shutdown', undefined, { code: 'SHUTTING_DOWN', reason: 'server is shutting down' });
    else
      this.sendEvent('shutdown', undefined, {
        code: 'SHUTTING_DOWN',
        reason: 'server is draining: running episodes may finish, no new sessions or episodes',
        grace_ms: graceMs,
      });
  }

  async shutdown(): Promise<void> {
    const sessions = [...this.book.values()];
    this.announceShutdown();
    await Promise.all(sessions.map((s) => this.serverClose(s.id, 'server is shutting down', 'SHUTTING_DOWN')));
    this.sendError(null, err('SHUTTING_DOWN'), this.lastBinary);
    this.transport.stop();
    this.transport.close(CLOSE_CODES.SHUTTING_DOWN, 'server is shutting down');
  }
}
