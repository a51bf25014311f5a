// One WebSocket connection: decode, handshake, dispatch, per-session queues, batch, replies.
// The step path is kept tight: one decode, a hand-checked fast path instead of the generic
// validator, a Map lookup, a space check, the env call, one encodability check, one encode.
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import type { WebSocket, RawData } from 'ws';
import {
  CLOSE_CODES,
  decodeFrame,
  encodeCheckedFrame,
  encodeFrame,
  extractRequestId,
  PROTOCOL_VERSIONS,
  clipPath,
  protocolError as err,
  refusedRequestId,
  validateRequest,
  type BatchItem,
  type GroupRequest,
  type HelloRequest,
  type MakeRequest,
  type Request,
  type ResumeRequest,
  type StepRequest,
} from '../../protocol/src/index.js';
import { ProtocolError, reasonOf, sessionClosed } from './errors.js';
import { DEFAULT_HARD_LIMIT_BYTES, WriteCoalescer } from './write-coalescer.js';
import { expired, principalOf, refused, ReplayLog, resumeDisabled, sizeOf, type Frame, type Resumable } from './resume.js';
import type { ServerCore } from './server-core.js';
import type { SchedulerDriver, SchedulingAsk } from './scheduler-driver.js';
import { Session, type BatchCollector, type Job, type SessionRequest, type SessionResult } from './session.js';
import { SessionAdmission } from './session-admission.js';
import { AdmissionRefused } from './errors.js';

/** Suggested wait before retrying a make refused for capacity. */
const CAPACITY_RETRY_MS = 1000;
/** A make or reset on a draining server (SIGTERM with drain_grace_ms): the episode belongs elsewhere. */
function drainingRefusal(): ProtocolError {
  const reason = 'server is draining: no new sessions or episodes';
  return err('CAPACITY', { reason }, { reason, limit: 'draining', retry_after_ms: CAPACITY_RETRY_MS });
}
/** Ids of sessions closed on this connection are remembered (bounded) so a second close is `{}`. */
const MAX_CLOSED_IDS = 100_000;

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

/** Frames of a make at most this big have their kwargs logged whole at info; larger ones by key only. */
const MAX_LOGGED_KWARGS_FRAME = 2048;
/** At most this many kwargs keys (each clipped) in a make's log line. */
const MAX_LOGGED_KWARGS_KEYS = 16;

/** A summary of kwargs for the info log: bounded whatever the client sent. */
function kwargsForLog(kwargs: Record<string, unknown>, frameBytes: number): Record<string, unknown> {
  if (frameBytes <= MAX_LOGGED_KWARGS_FRAME) return { kwargs };
  const keys = Object.keys(kwargs);
  return { kwargs_keys: keys.slice(0, MAX_LOGGED_KWARGS_KEYS).map((k) => (k.length > 64 ? `${k.slice(0, 63)}…` : k)), kwargs_key_count: keys.length, frame_bytes: frameBytes };
}

/**
 * ws's frame parser state, read to tell whether a message is partly received (a frame whose payload
 * is still arriving, or a fragmented message without its final frame). ws has no public API for it;
 * the shape is checked, and the server-hardening tests fail if a ws upgrade changes it.
 */
interface ReceiverState {
  _state: number;
  _fragmented: number;
  /** Bytes of the socket chunk being parsed that are not yet a message (read as a hint only). */
  _bufferedBytes?: number;
}

function receiverOf(ws: WebSocket): ReceiverState | null {
  const r = (ws as unknown as { _receiver?: Partial<ReceiverState> })._receiver;
  return r && typeof r._state === 'number' && typeof r._fragmented === 'number' ? (r as ReceiverState) : null;
}

/** The close code a socket gets when it ended without a close frame (RFC 6455 §7.1.5): a drop. */
const ABNORMAL_CLOSURE = 1006;

/** ws's receiver state between frames (GET_INFO). */
const RECEIVER_IDLE = 0;

export class Connection implements Resumable {
  readonly sessions = new Map<string, Session>();
  /** The `shutdown` event was sent (a drain announces it before the shutdown that closes the socket). */
  private shutdownAnnounced = false;
  /** Unique within the server process (episode events name it). */
  readonly id: string;
  private readonly closedIds = new Set<string>();
  private handshaken = false;
  private authed: boolean;
  /** Encoding of the last request: used for frames the server originates (events). */
  private lastBinary = false;
  private alive = true;
  private closed = false;
  /** Makes in flight on this connection (count toward the per-connection cap). */
  private pendingMakes = 0;
  /**
   * Session requests and batch items accepted (enqueue) and not yet answered (reply). While any is,
   * or a make is, a frame is held for the others' replies so a burst leaves in one write; the frame
   * that finds none left writes at once (write-coalescer.ts).
   */
  private outstanding = 0;
  /** All outbound frames go through it: one socket write per event-loop turn, and backpressure. */
  private readonly out: WriteCoalescer;
  private readonly address: string;
  /** Bytes received before hello succeeded (handshake_max_bytes); -1 once it has. */
  private preHelloBytes = 0;
  private handshakeTimer: NodeJS.Timeout | null = null;
  /** Messages completed (data frames): tells one unfinished message from the next. */
  private messagesIn = 0;
  /** When an unfinished message was first seen (0 = none), and messagesIn then. */
  private unfinishedSince = 0;
  private unfinishedAt = 0;
  private readonly receiver: ReceiverState | null;
  private readonly onSocketData = (chunk: Buffer) => this.countPreHello(chunk.length);
  // ---- session resume (PROTOCOL.md §5a) ----
  /** Ids owed a reply, recent replies and frames held while detached; null when resume_grace_ms is 0. */
  readonly replay: ReplayLog | null;
  /** Digest of the token this connection authenticated with: its resume tokens are bound to it. */
  private principal = principalOf(null);
  /** hello's client_group: the fairness key on a server without tokens (PROTOCOL.md §6a). */
  private clientGroup: string | undefined;
  /** Key of this connection's live resume token in core.resume. */
  private resumeKey: string | null = null;
  /** The socket dropped and the sessions wait for a resume (the grace timer runs). */
  private detached = false;
  /** When the socket dropped (Date.now()); the idle clocks of the sessions pause from here to the resume. */
  private detachedAt = 0;
  private graceTimer: NodeJS.Timeout | null = null;
  /** No resume can take this connection's sessions any more: closed on purpose, expired or handed over. */
  private ended = false;
  /** The connection that resumed this one: replies of requests still running here follow the sessions there. */
  private successor: Connection | null = null;

  constructor(
    private readonly ws: WebSocket,
    /** The socket ws was upgraded on (the upgrade request's): the write coalescer corks it. */
    private readonly socket: Socket,
    private readonly core: ServerCore,
    authorization: string | undefined,
  ) {
    this.authed = !core.tokens.enabled;
    const c = core.config;
    // All connections' replay logs together stay within max_buffered_output_bytes (resume.ts ReplayPool).
    this.replay = c.resume_grace_ms > 0 ? new ReplayLog(c.max_queued_requests, c.max_queued_bytes, core.resume.pool, c.max_buffered_output_bytes) : null;
    this.id = core.nextConnectionId();
    this.out = new WriteCoalescer(ws, socket, {
      // Room for a few of the largest frames the server accepts, and never below the default.
      hardLimitBytes: Math.max(DEFAULT_HARD_LIMIT_BYTES, 4 * core.config.max_message_bytes),
      onOverflow: (bytes) =>
        core.log.warn({ buffered_bytes: bytes, server_buffered_bytes: core.output.total, sessions: this.sessions.size }, 'client is not reading its replies; terminating the connection'),
      budget: core.output,
      // Until hello says whose it is (tenant()): the connection alone.
      tenant: `conn:${this.id}`,
    });
    this.address = socket.remoteAddress ?? '';
    this.receiver = receiverOf(ws);
    core.addConnection(this, this.address);
    // Counted on the socket, before ws buffers anything: a frame announced as 15 MB, or fragments
    // that never end, are cut off at the budget instead of being held until they complete.
    socket.prependListener('data', this.onSocketData);
    const hto = core.config.handshake_timeout_ms;
    this.handshakeTimer = setTimeout(() => this.connectionTimeout('hello', hto), hto);
    this.handshakeTimer.unref();
    ws.on('message', (data: RawData, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('close', (code: number) => this.onClose(code));
    core.log.debug({ connections: core.connections.size }, 'connection opened');
    if (core.shuttingDown) {
      this.sendError(null, err('SHUTTING_DOWN'), false);
      ws.close(CLOSE_CODES.SHUTTING_DOWN, 'server is shutting down');
      return;
    }
    if (core.tokens.enabled && authorization !== undefined) {
      if (core.tokens.check(authorization)) {
        this.authed = true;
        this.principal = principalOf(authorization);
      } else this.reject('invalid bearer token in Authorization header', null, false);
    }
  }

  /** Bytes this connection's socket has read and written (for /metrics, summed on demand). */
  socketBytes(): { read: number; written: number } {
    return { read: this.socket.bytesRead, written: this.socket.bytesWritten };
  }

  // ---- pre-auth budget and message deadline ----

  private countPreHello(n: number): void {
    if (this.preHelloBytes < 0) return;
    this.preHelloBytes += n;
    const max = this.core.config.handshake_max_bytes;
    if (this.preHelloBytes <= max) return;
    if (this.closed) {
      // Still sending after being told to stop: drop the socket instead of reading on.
      this.ws.terminate();
      return;
    }
    this.core.log.debug({ bytes: this.preHelloBytes, limit: max }, 'handshake byte budget exceeded');
    this.sendError(null, err('TOO_LARGE', { max_message_bytes: max }, { max_message_bytes: max, limit: 'handshake_max_bytes' }), false);
    this.closeWith(CLOSE_CODES.TOO_LARGE, 'too many bytes before hello');
  }

  private connectionTimeout(what: 'hello' | 'message', timeoutMs: number): void {
    if (this.closed) return;
    this.core.log.debug({ what, timeout_ms: timeoutMs }, 'connection timed out');
    this.sendError(null, err('CONNECTION_TIMEOUT', { what, timeout_ms: timeoutMs }, { what, timeout_ms: timeoutMs }), this.lastBinary);
    this.closeWith(CLOSE_CODES.CONNECTION_TIMEOUT, `${what} timeout`);
  }

  /** Close with `code` and stop handling frames; a peer that never answers the close is dropped soon after. */
  private closeWith(code: number, reason: string): void {
    this.closed = true;
    // The server ended it for a reason the client must act on: nothing to resume.
    this.ended = true;
    this.out.flush();
    this.ws.close(code, reason);
    setTimeout(() => this.ws.terminate(), 2000).unref();
  }

  /**
   * Called by the server a few times per message_timeout_ms: a message (one frame's payload, or a
   * fragmented message's frames) still unfinished after the deadline ends the connection. Time spent
   * with reads paused for backpressure (the server's choice, not the client's) does not count.
   */
  checkUnfinishedMessage(now: number, timeoutMs: number): void {
    const r = this.receiver;
    if (r === null || this.closed) return;
    const unfinished = (r._state !== RECEIVER_IDLE || r._fragmented !== 0) && !this.out.paused;
    if (!unfinished) {
      this.unfinishedSince = 0;
      return;
    }
    if (this.unfinishedSince === 0 || this.unfinishedAt !== this.messagesIn) {
      this.unfinishedSince = now;
      this.unfinishedAt = this.messagesIn;
      return;
    }
    if (now - this.unfinishedSince >= timeoutMs) this.connectionTimeout('message', timeoutMs);
  }

  // ---- inbound ----

  private onMessage(data: RawData, isBinary: boolean): void {
    this.alive = true;
    this.messagesIn++;
    if (this.closed) return;
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
      if (isPlainStep(msg) && this.handshaken && this.sessions.has(msg.session)) {
        if (this.replay !== null) this.replay.received(msg.id);
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
        this.ended = true;
        this.ws.close(CLOSE_CODES.TOO_LARGE, 'message too large');
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
    if (!this.handshaken) return this.sendError(m.id, err('HANDSHAKE_REQUIRED'), bin);
    if (m.type === 'resume') return this.resume(m, bin);
    // A reply is owed from here on: a resume must know whether this id was received.
    if (this.replay !== null) this.replay.received(m.id);
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
        return void this.make(m, bin, bytes);
      case 'group':
        return void this.group(m, bin, bytes);
      default: {
        // Unreachable: validateRequest accepts no other type, and a request schema added without a
        // case here is a type error on this line. Thrown, it would be answered as INTERNAL.
        const unhandled: never = m;
        throw new Error(`no handler for request ${JSON.stringify(unhandled)}`);
      }
    }
  }

  private hello(m: HelloRequest, bin: boolean): void {
    const id = m.id;
    if (this.handshaken) {
      this.sendError(id, err('INVALID_MESSAGE', { reason: 'hello already received' }, { reason: 'hello already received' }), bin);
      return;
    }
    if (!this.authed) {
      const token = m.token;
      if (typeof token === 'string' && this.core.tokens.check(token)) {
        this.authed = true;
        this.principal = principalOf(token);
      } else {
        this.reject(token === undefined ? 'a bearer token is required' : 'invalid token', id, bin);
        return;
      }
    }
    // The highest major both sides speak; none in common leaves the connection open for another hello.
    let version = 0;
    for (const v of m.versions) if (v > version && PROTOCOL_VERSIONS.includes(v)) version = v;
    if (version === 0) {
      const supported = [...PROTOCOL_VERSIONS];
      this.sendError(id, err('UNSUPPORTED_VERSION', { supported }, { supported }), bin);
      return;
    }
    this.handshaken = true;
    // The pre-auth budget and deadline end here.
    this.core.pendingHandshakes--;
    this.preHelloBytes = -1;
    this.socket.removeListener('data', this.onSocketData);
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = null;
    const hello = this.core.helloResult;
    let result = version === hello.version ? hello : { ...hello, version };
    this.clientGroup = m.client_group;
    // Whose bytes this connection's unsent replies and resume log are (max_buffered_output_bytes per tenant).
    const tenant = this.tenant();
    this.out.setTenant(tenant);
    this.replay?.setTenant(tenant);
    const drv = this.scheduler();
    if (drv !== null) {
      // Per connection: the classes depend on the token's grant.
      const { allowed, dflt } = drv.classesOf(this.schedClient(drv).grant);
      result = {
        ...result,
        capabilities: { ...result.capabilities, scheduling: true },
        limits: { ...result.limits, max_queue_timeout_ms: drv.config.max_queue_timeout_ms, max_group_size: drv.maxGroupSize, priority_classes: allowed, default_priority: dflt },
      };
    }
    if (this.replay !== null) {
      const issued = this.core.resume.issue(this, this.principal);
      this.resumeKey = issued.key;
      result = { ...result, resume_token: issued.token };
    }
    this.sendResult(id, result, bin);
  }

  private reject(reason: string, id: number | null, bin: boolean): void {
    this.sendError(id, err('UNAUTHORIZED', { reason }, { reason }), bin);
    this.closeWith(CLOSE_CODES.UNAUTHORIZED, 'unauthorized');
  }

  // ---- make ----

  /** A make refused or failed: its error reply, told to the episode observers first (no session exists). */
  private makeFailed(id: number, envId: string, e: ProtocolError, bin: boolean, t0: number): void {
    const obs = this.core.observers;
    if (obs.active) obs.error({ session_id: null, env_id: envId, episode_id: null, op: 'make', error: e, duration_ms: performance.now() - t0, t: Date.now() });
    this.sendError(id, e, bin);
  }

  private async make(m: MakeRequest, bin: boolean, frameBytes: number): Promise<void> {
    const t0 = performance.now();
    const { id, env_id: envId } = m;
    const kwargs = m.kwargs ?? {};
    const core = this.core;
    const entry = core.registry.get(envId);
    if (!entry) return this.makeFailed(id, envId, err('UNKNOWN_ENV', { env_id: envId }, { env_id: envId }), bin, t0);
    if (core.draining) return this.makeFailed(id, envId, drainingRefusal(), bin, t0);
    const perConn = core.config.max_sessions_per_connection;
    if (this.sessions.size + this.pendingMakes >= perConn) {
      const reason = `max_sessions_per_connection (${perConn}) reached`;
      return this.makeFailed(id, envId, err('CAPACITY', { reason }, { reason, retry_after_ms: CAPACITY_RETRY_MS, limit: 'max_sessions_per_connection' }), bin, t0);
    }
    if (core.sessionCount >= core.config.max_sessions) {
      const reason = `server max_sessions (${core.config.max_sessions}) reached`;
      return this.makeFailed(id, envId, err('CAPACITY', { reason }, { reason, retry_after_ms: CAPACITY_RETRY_MS, limit: 'max_sessions' }), bin, t0);
    }
    if (entry.validateKwargs && !entry.validateKwargs(kwargs)) {
      // details.path is a JSON Pointer into kwargs ("" = kwargs itself).
      const e = entry.validateKwargs.errors?.[0];
      // Property names are the client's text: clipped, never echoed whole (PROTOCOL.md §2).
      const extra = e?.keyword === 'additionalProperties' ? clipPath(`/${String((e.params as { additionalProperty?: string }).additionalProperty)}`) : '';
      const path = clipPath(`${e?.instancePath ?? ''}${extra}`);
      const reason = e ? `${e.message ?? 'invalid'}${extra ? ` ('${extra.slice(1)}')` : ''}` : 'invalid kwargs';
      return this.makeFailed(id, envId, err('INVALID_ARGUMENT', { path: path || '/', reason }, { path, reason }), bin, t0);
    }
    if (entry.def.sandbox && !core.sandbox) {
      const reason = `env '${envId}' needs a sandbox and this server has no sandbox driver configured`;
      return this.makeFailed(id, envId, err('UNSUPPORTED', { reason }, { reason }), bin, t0);
    }
    const cannot = entry.def.sandbox && core.sandbox ? core.sandbox.unsupported(entry.def.sandbox) : null;
    if (cannot) {
      const reason = `env '${envId}' cannot be served here: ${cannot}`;
      return this.makeFailed(id, envId, err('UNSUPPORTED', { reason }, { reason }), bin, t0);
    }
    const sessionId = 's_' + randomBytes(18).toString('base64url');
    let admission: SessionAdmission | null;
    try {
      admission = this.admissionFor(sessionId, entry.def.sandbox !== undefined, m);
    } catch (e) {
      if (e instanceof AdmissionRefused) return this.makeFailed(id, envId, e.error, bin, t0);
      throw e;
    }
    // Reserve the slot before the first await so concurrent makes cannot overshoot the caps.
    core.sessionCount++;
    this.pendingMakes++;
    const opened = await Session.open(sessionId, entry, kwargs, core, (reason) => this.serverClose(sessionId, reason, 'SANDBOX_ERROR'), admission);
    // The reservation moved with a resume (handOver): it is given back where it is now.
    this.latest().pendingMakes--;
    if (opened instanceof ProtocolError) {
      core.sessionCount--;
      return this.makeFailed(id, envId, opened, bin, t0);
    }
    // The sessions may have moved to a connection that resumed this one while the env was created.
    const owner = this.latest();
    if (owner.ended || (owner.closed && !owner.detached)) {
      // The connection went away (with nothing to resume) while the env was being created.
      core.sessionCount--;
      void opened.close();
      return;
    }
    owner.sessions.set(sessionId, opened);
    if (core.observers.active) core.observers.open({ session_id: sessionId, env_id: envId, kwargs, connection_id: this.id, principal: this.tenant(), t: Date.now() });
    // Whole kwargs only when small: a 15 MB kwargs must not become a 15 MB log line.
    opened.logger.info(kwargsForLog(kwargs, frameBytes), 'session made');
    if (frameBytes > MAX_LOGGED_KWARGS_FRAME) opened.logger.debug({ kwargs }, 'session kwargs');
    owner.sendResult(id, { session: sessionId, env_spec: entry.spec }, bin);
  }

  /**
   * Who a session belongs to, for the observers (the archive's per-tenant cap): the token's digest on a
   * server with tokens, else the hello's client_group or this connection (the scheduler's fairness key).
   */
  private tenant(): string {
    return this.core.tokens.enabled ? `token:${this.principal.toString('hex').slice(0, 16)}` : `conn:${this.clientGroup ?? this.id}`;
  }

  // ---- scheduling (PROTOCOL.md §6a) ----

  private scheduler(): SchedulerDriver | null {
    return this.core.sandbox?.scheduler ?? null;
  }

  /** This connection's client key and grant: its token's with tokens, else its client_group or itself. */
  private schedClient(drv: SchedulerDriver) {
    return drv.clientOf(this.core.tokens.enabled ? this.principal.toString('hex') : null, this.clientGroup, this.id);
  }

  /**
   * The session's side of the admission queue (a sandboxed env on a server with a scheduler), with make's
   * fields as its defaults; null otherwise. Throws AdmissionRefused (INVALID_ARGUMENT) for a class the
   * token was not granted, also for an env that needs no sandbox: the same request is refused the same way.
   */
  private admissionFor(sessionId: string, sandboxed: boolean, ask: SchedulingAsk, group: SessionAdmission['group'] = null): SessionAdmission | null {
    const drv = this.scheduler();
    if (drv === null) return null;
    const { client, grant } = this.schedClient(drv);
    const base = drv.resolve(grant, ask);
    if (!sandboxed) return null;
    return new SessionAdmission(drv, client, grant, base, this.admissionSink(sessionId), group);
  }

  private admissionSink(sessionId: string) {
    return {
      event: (name: 'queued' | 'admitted', details: Record<string, unknown>) => this.latest().sendEvent(name, sessionId, details),
      preempt: (reason: string) => void this.serverClose(sessionId, reason, 'PREEMPTED'),
    };
  }

  /**
   * group: `size` sessions of one env admitted as one unit. The units are admitted first (all at once,
   * never part), then the sessions are made; each member holds its unit until it closes, and the last
   * close sends group_complete. A member that fails to make releases its unit; the others are closed and
   * the group is answered with that error (all or nothing).
   */
  private async group(m: GroupRequest, bin: boolean, _frameBytes: number): Promise<void> {
    const t0 = performance.now();
    const core = this.core;
    const drv = this.scheduler();
    const { id, env_id: envId, size } = m;
    const entry = core.registry.get(envId);
    if (drv === null) {
      const reason = 'this server has no admission scheduler (capabilities.scheduling is false)';
      return this.makeFailed(id, envId, err('UNSUPPORTED', { reason }, { reason }), bin, t0);
    }
    if (!entry) return this.makeFailed(id, envId, err('UNKNOWN_ENV', { env_id: envId }, { env_id: envId }), bin, t0);
    if (!entry.def.sandbox) {
      const reason = `env '${envId}' needs no sandbox: make its sessions one by one`;
      return this.makeFailed(id, envId, err('INVALID_ARGUMENT', { path: '/env_id', reason }, { path: '/env_id', reason }), bin, t0);
    }
    if (size > drv.maxGroupSize) {
      const reason = `a group of ${size} exceeds limits.max_group_size (${drv.maxGroupSize})`;
      return this.makeFailed(id, envId, err('INVALID_ARGUMENT', { path: '/size', reason }, { path: '/size', reason, max_group_size: drv.maxGroupSize }), bin, t0);
    }
    const perConn = core.config.max_sessions_per_connection;
    if (this.sessions.size + this.pendingMakes + size > perConn || core.sessionCount + size > core.config.max_sessions) {
      const limit = this.sessions.size + this.pendingMakes + size > perConn ? 'max_sessions_per_connection' : 'max_sessions';
      const reason = `a group of ${size} would pass ${limit}`;
      return this.makeFailed(id, envId, err('CAPACITY', { reason }, { reason, retry_after_ms: CAPACITY_RETRY_MS, limit }), bin, t0);
    }
    const kwargs = m.kwargs ?? {};
    if (entry.validateKwargs && !entry.validateKwargs(kwargs)) {
      const reason = entry.validateKwargs.errors?.[0]?.message ?? 'invalid kwargs';
      return this.makeFailed(id, envId, err('INVALID_ARGUMENT', { path: '/kwargs', reason }, { path: '/kwargs', reason }), bin, t0);
    }
    const cannot = core.sandbox ? core.sandbox.unsupported(entry.def.sandbox) : null;
    if (cannot) {
      const reason = `env '${envId}' cannot be served here: ${cannot}`;
      return this.makeFailed(id, envId, err('UNSUPPORTED', { reason }, { reason }), bin, t0);
    }
    const { client, grant } = this.schedClient(drv);
    let params;
    try {
      params = drv.resolve(grant, m);
    } catch (e) {
      if (e instanceof AdmissionRefused) return this.makeFailed(id, envId, e.error, bin, t0);
      throw e;
    }
    // Reserved like makes, before the first await, so concurrent requests cannot overshoot the caps.
    core.sessionCount += size;
    this.pendingMakes += size;
    const unreserve = (n: number): void => {
      core.sessionCount -= n;
      this.latest().pendingMakes -= n; // wherever a resume moved the reservation
    };
    const gid = 'g_' + randomBytes(12).toString('base64url');
    const ids = Array.from({ length: size }, () => 's_' + randomBytes(18).toString('base64url'));
    // Preempting a group reclaims all of it: every member is closed with PREEMPTED.
    const holder = { preempt: (forId: string) => ids.forEach((sid) => void this.serverClose(sid, `preempted: the group's sandboxes were reclaimed for higher-priority work (${forId})`, 'PREEMPTED')) };
    const gone = new AbortController();
    const stop = setInterval(() => {
      const owner = this.latest();
      if (owner.ended || (owner.closed && !owner.detached)) gone.abort();
    }, 500);
    stop.unref();
    try {
      await drv.request(
        { id: gid, client, cls: params.cls, queueTimeoutMs: params.queueTimeoutMs, units: size, preemptible: params.preemptible },
        {
          queued: (p, cls) => this.latest().sendEvent('queued', undefined, { request: id, position: p.position, units_ahead: p.units_ahead, estimated_wait_ms: p.estimated_wait_ms, priority: cls }),
          admitted: (waited) => this.latest().sendEvent('admitted', undefined, { request: id, waited_ms: waited }),
          preempt: holder.preempt,
        },
        gone.signal,
      );
    } catch (e) {
      unreserve(size);
      if (e instanceof AdmissionRefused) return this.makeFailed(id, envId, e.error, bin, t0);
      return; // the connection went away while the group waited: nobody to answer
    } finally {
      clearInterval(stop);
    }
    let answered = false;
    // Only for a group that was answered: a group refused half-made completes silently.
    const onLast = () => {
      if (answered) this.latest().sendEvent('group_complete', undefined, { group: gid, sessions: ids });
    };
    const opened = await Promise.all(
      ids.map((sid, member) => {
        const adm = new SessionAdmission(drv, client, grant, params, this.admissionSink(sid), { id: gid, member, onLast });
        return Session.open(sid, entry, kwargs, core, (reason) => this.serverClose(sid, reason, 'SANDBOX_ERROR'), adm);
      }),
    );
    unreserve(size);
    const owner = this.latest();
    const failed = opened.find((o): o is ProtocolError => o instanceof ProtocolError);
    if (failed || owner.ended || (owner.closed && !owner.detached)) {
      // All or nothing: the members that opened are closed (their units go back with them).
      for (const o of opened) if (o instanceof Session) void o.close();
      if (failed) this.makeFailed(id, envId, failed, bin, t0);
      return;
    }
    core.sessionCount += size;
    for (const s of opened as Session[]) {
      owner.sessions.set(s.id, s);
      if (core.observers.active) core.observers.open({ session_id: s.id, env_id: envId, kwargs, connection_id: this.id, principal: this.tenant(), t: Date.now() });
    }
    answered = true;
    core.log.info({ group: gid, size, env: envId, cls: params.cls }, 'group made');
    owner.sendResult(id, { group: gid, sessions: ids, env_spec: entry.spec }, bin);
  }

  // ---- session queues ----

  private enqueue(item: SessionRequest, id: number, bin: boolean, batch: BatchCollector | null, index: number, bytes: number): void {
    // Every enqueue ends in exactly one reply (below, closeNow or drain), which counts it down.
    this.outstanding++;
    const s = this.sessions.get(item.session);
    if (s === undefined) {
      // A second close of a session this connection closed is {}; anything else names no session.
      const closed = this.closedIds.has(item.session);
      const e = closed && item.type === 'close' ? null : closed ? sessionClosed(item.session) : err('UNKNOWN_SESSION', { session: item.session });
      this.reply({ item, id, binary: bin, batch, index, bytes: 0 }, {}, e);
      return;
    }
    s.lastActive = Date.now();
    const job: Job = { item, id, binary: bin, batch, index, bytes };
    if (item.type === 'close') {
      // A standalone close that finds a request running and none waiting abandons the running one
      // instead of waiting behind it (PROTOCOL.md §3). Requests pipelined before the close still run
      // first, in order (§5), and a close inside a batch keeps its place among the batch's items.
      if (s.busy && s.queue.length === 0 && batch === null) return this.closeNow(s, job);
    } else {
      // A draining server lets running episodes finish but starts none.
      const full = item.type === 'reset' && this.core.draining ? drainingRefusal() : this.queueFull(s, bytes);
      if (full) return this.reply(job, {}, full);
    }
    s.queuedBytes += bytes;
    s.queue.push(job);
    if (!s.busy) void this.drain(s);
  }

  /** CAPACITY when one more waiting request of `bytes` would pass the session's queue limits. */
  private queueFull(s: Session, bytes: number): ProtocolError | null {
    const c = this.core.config;
    let limit: string | null = null;
    let max = 0;
    if (s.queue.length >= c.max_queued_requests) [limit, max] = ['max_queued_requests', c.max_queued_requests];
    else if (s.queue.length > 0 && s.queuedBytes + bytes > c.max_queued_bytes) [limit, max] = ['max_queued_bytes', c.max_queued_bytes];
    if (limit === null) return null;
    const reason = `session queue ${limit} (${max}) reached`;
    return err('CAPACITY', { reason }, { reason, limit, retry_after_ms: CAPACITY_RETRY_MS });
  }

  /**
   * Close while a request runs: the session is closed at once (the env's signal aborts, the running
   * call is abandoned and answered UNKNOWN_SESSION/closed, its sandboxes are released), the requests
   * waiting behind it are answered the same way by the drain loop, and the close is answered when the
   * session's close is done (bounded by Session.close's own deadline).
   */
  private closeNow(s: Session, job: Job): void {
    this.forget(s, 'closed by client');
    void s.close().then(() => this.reply(job, {}, null));
  }

  private async drain(s: Session): Promise<void> {
    s.busy = true;
    const limits = this.core.opLimits;
    let job: Job | undefined;
    try {
      while ((job = s.queue.shift()) !== undefined) {
        s.queuedBytes -= job.bytes;
        let result: SessionResult = {};
        let error: ProtocolError | null = null;
        try {
          // A reset's scheduling fields (PROTOCOL.md §6a) apply to this episode; its events name this frame.
          if (job.item.type === 'reset' && s.admission !== null) s.admission.begin(job.id, job.item);
          // Session.run checks an env result's encodability, once; the reply is encoded without a second check.
          result = await s.run(job.item, limits, job.binary);
        } catch (e) {
          if (e instanceof ProtocolError) error = e;
          else {
            this.core.log.error({ err: e, session: s.id }, 'internal error in session op');
            error = err('INTERNAL', { reason: reasonOf(e) });
          }
        }
        if (job.item.type === 'close' && !error) this.forget(s, 'closed by client');
        s.lastActive = Date.now();
        this.reply(job, result, error);
      }
    } catch (e) {
      // Only a server bug lands here; keep the session usable rather than wedged busy.
      this.core.log.error({ err: e, session: s.id }, 'internal error draining a session queue');
    } finally {
      s.busy = false;
      if (s.queue.length > 0) void this.drain(s);
    }
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
  private forget(s: Session, why: string, code?: 'TIMEOUT' | 'SANDBOX_ERROR' | 'SHUTTING_DOWN' | 'PREEMPTED'): void {
    if (this.successor !== null) return this.latest().forget(s, why, code);
    if (this.sessions.get(s.id) !== s) return;
    this.sessions.delete(s.id);
    if (this.closedIds.size >= MAX_CLOSED_IDS) this.closedIds.clear();
    this.closedIds.add(s.id);
    this.core.sessionCount--;
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
  serverClose(sessionId: string, reason: string, code: 'TIMEOUT' | 'SANDBOX_ERROR' | 'SHUTTING_DOWN' | 'PREEMPTED'): Promise<void> {
    if (this.successor !== null) return this.latest().serverClose(sessionId, reason, code);
    const s = this.sessions.get(sessionId);
    if (!s) return Promise.resolve();
    this.forget(s, reason, code);
    // A detached connection holds the event for the resume.
    if (!this.ended && (!this.closed || this.detached)) this.sendEvent('session_closed', s.id, { reason, code });
    return s.close(err(code, { reason, op: 'step' }, { reason }));
  }

  // ---- batch ----

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

  // ---- outbound ----

  /**
   * Encodes and writes one frame. `checked`: every value in it has been checked already (Session.run
   * checks env results; the rest are the server's own strings and numbers), so it is encoded without
   * walking it again; any other frame is checked here, once.
   */
  private send(frame: { id?: number | null; type: string; [field: string]: unknown }, bin: boolean, checked = false): void {
    // Handed over by a resume: the reply goes where the sessions went.
    if (this.successor !== null) return this.latest().send(frame, bin, checked);
    const open = this.ws.readyState === 1;
    // A dropped socket of a resumable connection: the frame is held for the resume.
    if (!open && (this.replay === null || this.ended || !this.handshaken)) return;
    let data: string | Uint8Array;
    try {
      data = checked ? encodeCheckedFrame(frame, bin) : encodeFrame(frame, bin);
    } catch (e) {
      // Unreachable for checked results; a bug if it happens, so say so instead of crashing.
      this.core.log.error({ err: e }, 'could not encode a reply');
      data = encodeFrame(err('INTERNAL', { reason: 'reply could not be encoded' }).toFrame(frame.id ?? null), bin);
    }
    const id = typeof frame.id === 'number' ? frame.id : null;
    if (!open) return this.hold({ id, data });
    this.out.send(data, this.moreThisTurn());
    if (this.replay !== null && id !== null) this.replay.sent({ id, data });
  }

  /**
   * More frames will follow this one in the current event-loop turn: requests of this connection are
   * still running, or the socket chunk ws is parsing holds more (pipelined frames read at once). A
   * receiver whose shape is not the expected one says "maybe": the frame is held to the end of the turn.
   */
  private moreThisTurn(): boolean {
    if (this.outstanding > 0 || this.pendingMakes > 0) return true;
    const r = this.receiver;
    return r === null || r._bufferedBytes !== 0;
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

  // ---- lifecycle ----

  heartbeat(): void {
    if (!this.alive) {
      this.core.log.info({ sessions: this.sessions.size }, 'connection missed a heartbeat; terminating');
      this.ws.terminate();
      return;
    }
    this.alive = false;
    try {
      this.ws.ping();
    } catch {
      // Socket already closing; the close handler cleans up.
    }
  }

  reapIdle(cutoff: number, idleMs: number): void {
    for (const s of this.sessions.values()) {
      if (s.isIdleSince(cutoff)) void this.serverClose(s.id, `idle for ${idleMs} ms`, 'TIMEOUT');
    }
  }

  private onClose(code?: number): void {
    this.closed = true;
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = null;
    this.socket.removeListener('data', this.onSocketData);
    this.core.removeConnection(this, this.address, this.handshaken);
    this.core.log.debug({ sessions: this.sessions.size, code }, 'connection closed');
    if (this.mayDetach(code)) return this.detach();
    this.ended = true;
    this.core.resume.revoke(this.resumeKey);
    this.resumeKey = null;
    this.replay?.clear();
    for (const s of [...this.sessions.values()]) {
      this.forget(s, 'connection closed');
      void s.close();
    }
  }

  // ---- session resume (PROTOCOL.md §5a) ----

  /** The connection that now holds what this one held (itself unless a resume took it over). */
  private latest(): Connection {
    let c: Connection = this;
    while (c.successor !== null) c = c.successor;
    return c;
  }

  /**
   * A drop, not a goodbye: the socket ended without a close frame from the client (1006: a cut
   * connection, a dead peer, a missed heartbeat), after hello, while it held something a resume could
   * return. Any close frame, whatever its code, is the client saying it is done.
   */
  private mayDetach(code: number | undefined): boolean {
    const r = this.replay;
    if (r === null || this.ended || !this.handshaken || this.core.shuttingDown) return false;
    if (code !== ABNORMAL_CLOSURE) return false;
    return this.sessions.size > 0 || this.pendingMakes > 0 || r.inflight.size > 0 || r.heldCount > 0;
  }

  private detach(): void {
    this.detached = true;
    this.detachedAt = Date.now();
    this.core.resume.detached.add(this);
    const grace = this.core.config.resume_grace_ms;
    this.graceTimer = setTimeout(() => void this.expire(`the grace period of ${grace} ms passed without a resume`), grace);
    this.graceTimer.unref();
    this.core.log.info({ sessions: this.sessions.size, grace_ms: grace }, 'connection dropped; sessions held for a resume');
  }

  /** A frame produced while the socket is gone; past the session queue limits the sessions are closed. */
  private hold(f: Frame): void {
    const r = this.replay as ReplayLog;
    let held = r.hold(f);
    if (held === true) return;
    const c = this.core.config;
    // Server-wide room taken back from a tenant holding more than this one (resume.ts makeRoom).
    if (
      held === 'pool' &&
      this.core.resume.makeRoom(r.tenant, sizeOf(f.data), c.max_buffered_output_bytes,
        `the replies held for the resume passed max_buffered_output_bytes (${c.max_buffered_output_bytes}) server-wide, of which this client's tenant held the most when another tenant's reply needed room`)
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
    if (this.ended) return Promise.resolve();
    this.ended = true;
    this.detached = false;
    this.core.resume.detached.delete(this);
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    const sessions = [...this.sessions.values()];
    this.core.resume.revoke(this.resumeKey, { spent: false, reason, sessions: sessions.map((s) => s.id) });
    this.resumeKey = null;
    this.replay?.clear();
    this.core.log.info({ sessions: sessions.length, reason }, 'no resume: sessions closed');
    return Promise.all(
      sessions.map((s) => {
        this.forget(s, reason);
        return s.close();
      }),
    ).then(() => undefined);
  }

  /**
   * resume: takes the sessions of the connection the token names (detached, or still open when the
   * client saw the drop first), answers which pending ids were never received, then delivers the
   * replies owed, in the order they were produced, each once.
   */
  private resume(m: ResumeRequest, bin: boolean): void {
    const core = this.core;
    const r = this.replay;
    if (r === null) return this.sendError(m.id, resumeDisabled(), bin);
    // During a shutdown a connection whose sessions are being closed has none left on its books, and
    // could take a detached connection's: they would escape both its shutdown and expireAll, closed
    // (unawaited) only when the socket goes, after the server said it was done (resume-attacks.test.ts).
    if (core.shuttingDown) return this.sendError(m.id, err('SHUTTING_DOWN'), bin);
    if (this.sessions.size > 0 || this.pendingMakes > 0) return this.sendError(m.id, refused('this connection already holds sessions; resume on a new connection'), bin);
    // Checked before claiming, so presenting one's own token does not spend it.
    const holder = core.resume.peek(m.token);
    if (holder === this) return this.sendError(m.id, refused("the token is this connection's own"), bin);
    // The server closed that connection (its token lives until the socket is gone): nothing to take.
    if (holder?.ended) return this.sendError(m.id, expired('the server closed that connection'), bin);
    const claimed = core.resume.claim(m.token, this.principal);
    if (claimed instanceof ProtocolError) {
      core.log.debug({ code: claimed.code }, 'resume refused');
      return this.sendError(m.id, claimed, bin);
    }
    core.resume.revoke(claimed.key, { spent: true, reason: 'spent', sessions: [] });
    const old = claimed.conn;
    const owed = old.handOver(this, m.pending ?? []);
    // One live token per connection: the one its hello returned is spent too.
    core.resume.revoke(this.resumeKey, { spent: true, reason: 'replaced', sessions: [] });
    const issued = core.resume.issue(this, this.principal);
    this.resumeKey = issued.key;
    this.sendResult(m.id, { resume_token: issued.token, sessions: [...this.sessions.keys()], unseen: owed.unseen, lost: owed.lost }, bin);
    for (const f of owed.frames) {
      this.out.send(f.data);
      if (f.id !== null) {
        r.received(f.id);
        r.sent(f);
      }
    }
    core.log.info({ sessions: this.sessions.size, delivered: owed.frames.length, unseen: owed.unseen.length, lost: owed.lost.length }, 'connection resumed');
  }

  /** The resume side of `resume`: this connection's sessions and what it owes move to `to`. */
  private handOver(to: Connection, pending: readonly number[]): { unseen: number[]; lost: number[]; frames: Frame[] } {
    this.ended = true;
    this.closed = true;
    this.successor = to;
    this.detached = false;
    this.core.resume.detached.delete(this);
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    this.resumeKey = null;
    // Idle time is not counted while detached (the grace period bounds it), but a resume is no activity
    // either: the clocks move by the time away, never restart, so a client that drops and resumes
    // without stepping cannot hold its sandboxes past idle_timeout_ms of attached time.
    const away = Math.max(0, Date.now() - this.detachedAt);
    for (const [id, s] of this.sessions) {
      s.lastActive += away;
      to.sessions.set(id, s);
    }
    this.sessions.clear();
    // Makes still running land on `to` (latest()): they count against its max_sessions_per_connection now,
    // else a client could resume a connection full of pending makes and make as many again beside them.
    to.pendingMakes += this.pendingMakes;
    this.pendingMakes = 0;
    for (const id of this.closedIds) to.closedIds.add(id);
    const owed = (this.replay as ReplayLog).handOver(pending, to.replay as ReplayLog);
    // Still open (the client saw the drop before the server did): this socket is done.
    if (this.ws.readyState === 0 || this.ws.readyState === 1) {
      this.ws.close(CLOSE_CODES.NORMAL, 'resumed on another connection');
      setTimeout(() => this.ws.terminate(), 2000).unref();
    }
    return owed;
  }

  /** The `shutdown` event, once: at the start of a drain (with its grace) or at shutdown. */
  announceShutdown(graceMs?: number): void {
    if (this.shutdownAnnounced) return;
    this.shutdownAnnounced = true;
    if (graceMs === undefined) this.sendEvent('shutdown', undefined, { code: 'SHUTTING_DOWN', reason: 'server is shutting down' });
    else this.sendEvent('shutdown', undefined, { code: 'SHUTTING_DOWN', reason: 'server is draining: running episodes may finish, no new sessions or episodes', grace_ms: graceMs });
  }

  async shutdown(): Promise<void> {
    const sessions = [...this.sessions.values()];
    this.announceShutdown();
    await Promise.all(sessions.map((s) => this.serverClose(s.id, 'server is shutting down', 'SHUTTING_DOWN')));
    this.sendError(null, err('SHUTTING_DOWN'), this.lastBinary);
    this.closed = true;
    this.ws.close(CLOSE_CODES.SHUTTING_DOWN, 'server is shutting down');
  }
}
