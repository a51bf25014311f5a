// One WebSocket connection: decode, handshake, dispatch, per-session queues, batch, replies.
// The step path is kept tight: one decode, a hand-checked fast path instead of the generic
// validator, a Map lookup, a space check, the env call, one encode.
import { randomBytes } from 'node:crypto';
import type { WebSocket, RawData } from 'ws';
import type { EnvInstance } from '../../envs/src/api.js';
import { decodeFrame, findUnencodable, validateRequest } from '../../protocol/src/index.js';
import { err, isInvalidArgument, isSandboxFailure, ProtocolError, reasonOf, wireError } from './errors.js';
import { callAsync, DeadlineExceeded } from './deadline.js';
import { encodeReply, isEncodable } from './fast-encode.js';
import { DEFAULT_HARD_LIMIT_BYTES, WriteCoalescer } from './write-coalescer.js';
import type { ServerCore } from './server-core.js';
import { Session, type BatchCollector, type Job, type SessionRequest } from './session.js';
import { closeSession, runOp } from './session-ops.js';

type Msg = Record<string, unknown>;

/** Suggested wait before retrying a make refused for capacity. */
const CAPACITY_RETRY_MS = 1000;
/** Ids of sessions closed on this connection are remembered (bounded) so a second close is `{}`. */
const MAX_CLOSED_IDS = 100_000;

const UINT32_MAX = 0xffffffff;

function validId(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= UINT32_MAX;
}

function idOf(msg: unknown): number | null {
  if (typeof msg === 'object' && msg !== null && !Array.isArray(msg)) {
    const id = (msg as Msg).id;
    if (validId(id)) return id;
  }
  return null;
}

/**
 * The hot path: `{"id", "type": "step", "session", "action"}` with nothing else. Anything that is
 * not exactly this shape goes through the generic (precompiled) validator.
 */
function isPlainStep(msg: unknown): msg is { id: number; type: 'step'; session: string; action: unknown } {
  if (typeof msg !== 'object' || msg === null) return false;
  const m = msg as Msg;
  if (m.type !== 'step' || !validId(m.id) || typeof m.session !== 'string' || m.action === undefined) return false;
  let n = 0;
  for (const _k in m) n++;
  return n === 4;
}

export class Connection {
  readonly sessions = new Map<string, Session>();
  private readonly closedIds = new Set<string>();
  private handshaken = false;
  private authed: boolean;
  /** Encoding of the last request: used for frames the server originates (events). */
  private lastBinary = false;
  private alive = true;
  private closed = false;
  /** Makes in flight on this connection (count toward the per-connection cap). */
  private pendingMakes = 0;
  /** All outbound frames go through it: one socket write per event-loop turn, and backpressure. */
  private readonly out: WriteCoalescer;

  constructor(
    private readonly ws: WebSocket,
    private readonly core: ServerCore,
    authorization: string | undefined,
  ) {
    this.authed = !core.tokens.enabled;
    this.out = new WriteCoalescer(ws, {
      // Room for a few of the largest frames the server accepts, and never below the default.
      hardLimitBytes: Math.max(DEFAULT_HARD_LIMIT_BYTES, 4 * core.config.max_message_bytes),
      onOverflow: (bytes) => core.log.warn({ buffered_bytes: bytes, sessions: this.sessions.size }, 'client is not reading its replies; terminating the connection'),
    });
    core.connections.add(this);
    ws.on('message', (data: RawData, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('close', () => this.onClose());
    core.log.debug({ connections: core.connections.size }, 'connection opened');
    if (core.shuttingDown) {
      this.sendError(null, err('SHUTTING_DOWN'), false);
      ws.close(1001, 'server is shutting down');
      return;
    }
    if (core.tokens.enabled && authorization !== undefined) {
      if (core.tokens.check(authorization)) this.authed = true;
      else this.reject('invalid bearer token in Authorization header', null, false);
    }
  }

  // ---- inbound ----

  private onMessage(data: RawData, isBinary: boolean): void {
    this.alive = true;
    if (this.closed) return;
    let msg: unknown;
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
        this.enqueue(msg as unknown as SessionRequest, msg.id, isBinary, null, 0);
        return;
      }
      const v = validateRequest(msg);
      if (!v.ok) {
        this.sendError(idOf(msg), v.error, isBinary);
        return;
      }
      this.dispatch(v.msg as unknown as Msg, isBinary);
    } catch (e) {
      this.core.log.error({ err: e }, 'internal error handling a request');
      this.sendError(idOf(msg), err('INTERNAL', { reason: reasonOf(e) }), isBinary);
    }
  }

  private onDecodeError(e: unknown, isBinary: boolean): void {
    if (e instanceof ProtocolError) {
      this.sendError(null, e, isBinary);
      if (e.code === 'TOO_LARGE') this.ws.close(1009, 'message too large');
      return;
    }
    this.sendError(null, err('PARSE_ERROR', { reason: reasonOf(e) }), isBinary);
  }

  private dispatch(m: Msg, bin: boolean): void {
    const id = m.id as number;
    const type = m.type as string;
    if (type === 'ping') {
      this.sendResult(id, m.t === undefined ? {} : { t: m.t }, bin);
      return;
    }
    if (type === 'hello') {
      this.hello(id, m, bin);
      return;
    }
    if (!this.handshaken) {
      this.sendError(id, err('HANDSHAKE_REQUIRED'), bin);
      return;
    }
    switch (type) {
      case 'step':
      case 'reset':
      case 'close':
        this.enqueue(m as unknown as SessionRequest, id, bin, null, 0);
        return;
      case 'batch':
        this.batch(id, m.requests as SessionRequest[], bin);
        return;
      case 'list_envs':
        this.sendResult(id, { envs: this.core.registry.specs() }, bin);
        return;
      case 'make':
        void this.make(id, m.env_id as string, (m.kwargs as Msg | undefined) ?? {}, bin);
        return;
      default:
        this.sendError(id, err('UNKNOWN_TYPE', { type }), bin);
    }
  }

  private hello(id: number, m: Msg, bin: boolean): void {
    if (this.handshaken) {
      this.sendError(id, err('INVALID_MESSAGE', { reason: 'hello already received' }, { reason: 'hello already received' }), bin);
      return;
    }
    if (!this.authed) {
      const token = m.token;
      if (typeof token === 'string' && this.core.tokens.check(token)) this.authed = true;
      else {
        this.reject(token === undefined ? 'a bearer token is required' : 'invalid token', id, bin);
        return;
      }
    }
    const versions = m.versions as number[];
    if (!versions.includes(1)) {
      this.sendError(id, err('UNSUPPORTED_VERSION', { supported: '[1]' }, { supported: [1] }), bin);
      return;
    }
    this.handshaken = true;
    this.sendResult(id, this.core.helloResult, bin);
  }

  private reject(reason: string, id: number | null, bin: boolean): void {
    this.sendError(id, err('UNAUTHORIZED', { reason }, { reason }), bin);
    this.ws.close(4401, 'unauthorized');
    this.closed = true;
  }

  // ---- make ----

  private async make(id: number, envId: string, kwargs: Msg, bin: boolean): Promise<void> {
    const core = this.core;
    const entry = core.registry.get(envId);
    if (!entry) return this.sendError(id, err('UNKNOWN_ENV', { env_id: envId }, { env_id: envId }), bin);
    const perConn = core.config.max_sessions_per_connection;
    if (this.sessions.size + this.pendingMakes >= perConn) {
      const reason = `max_sessions_per_connection (${perConn}) reached`;
      return this.sendError(id, err('CAPACITY', { reason }, { reason, retry_after_ms: CAPACITY_RETRY_MS, limit: 'max_sessions_per_connection' }), bin);
    }
    if (core.sessionCount >= core.config.max_sessions) {
      const reason = `server max_sessions (${core.config.max_sessions}) reached`;
      return this.sendError(id, err('CAPACITY', { reason }, { reason, retry_after_ms: CAPACITY_RETRY_MS, limit: 'max_sessions' }), bin);
    }
    if (entry.validateKwargs && !entry.validateKwargs(kwargs)) {
      // details.path is a JSON Pointer into kwargs ("" = kwargs itself).
      const e = entry.validateKwargs.errors?.[0];
      const extra = e?.keyword === 'additionalProperties' ? `/${String((e.params as { additionalProperty?: string }).additionalProperty)}` : '';
      const path = `${e?.instancePath ?? ''}${extra}`;
      const reason = e ? `${e.message ?? 'invalid'}${extra ? ` ('${extra.slice(1)}')` : ''}` : 'invalid kwargs';
      return this.sendError(id, err('INVALID_ARGUMENT', { path: path || '/', reason }, { path, reason }), bin);
    }
    if (entry.def.sandbox && !core.sandbox) {
      const reason = `env '${envId}' needs a sandbox and this server has no sandbox driver configured`;
      return this.sendError(id, err('UNSUPPORTED', { reason }, { reason }), bin);
    }
    // Reserve the slot before the first await so concurrent makes cannot overshoot the caps.
    core.sessionCount++;
    this.pendingMakes++;
    const sessionId = 's_' + randomBytes(18).toString('base64url');
    const abort = new AbortController();
    const logger = core.log.child({ session: sessionId, env: envId });
    let sandboxes = null;
    let session: Session | null = null;
    let creating: Promise<EnvInstance> | null = null;
    try {
      if (entry.def.sandbox && core.sandbox) {
        sandboxes = core.sandbox.forSession(sessionId, abort.signal, (reason) => this.serverClose(sessionId, reason, 'SANDBOX_ERROR'));
      }
      const ctx = sandboxes ? { signal: abort.signal, logger, sandboxes } : { signal: abort.signal, logger };
      creating = callAsync(() => entry.def.create(ctx, kwargs));
      const instance = await core.deadlines.race(creating, core.config.reset_timeout_ms, 'make');
      if (!instance || typeof instance.reset !== 'function' || typeof instance.step !== 'function' || typeof instance.close !== 'function') {
        throw new Error(`env '${envId}' create() did not return {reset, step, close}`);
      }
      session = new Session(sessionId, entry, instance, abort, logger, sandboxes);
    } catch (e) {
      core.sessionCount--;
      this.pendingMakes--;
      abort.abort();
      if (sandboxes) void sandboxes.releaseAll().catch(() => undefined);
      if (e instanceof DeadlineExceeded) {
        // The late instance belongs to nobody: close it when it arrives.
        void creating
          ?.then((inst) => inst?.close?.())
          .catch(() => undefined);
        return this.sendError(id, err('TIMEOUT', { op: 'make', timeout_ms: e.timeoutMs }, { timeout_ms: e.timeoutMs }), bin);
      }
      if (isInvalidArgument(e)) {
        const path = e.path;
        return this.sendError(id, err('INVALID_ARGUMENT', { path: path || '/', reason: e.message }, { path, reason: e.message }), bin);
      }
      if (isSandboxFailure(e)) return this.sendError(id, err('SANDBOX_ERROR', { reason: reasonOf(e) }, { reason: reasonOf(e) }), bin);
      logger.warn({ err: e }, 'session make failed');
      return this.sendError(id, err('ENV_ERROR', { reason: reasonOf(e) }, { reason: reasonOf(e) }), bin);
    }
    this.pendingMakes--;
    if (this.closed) {
      // The connection went away while the env was being created.
      core.sessionCount--;
      void closeSession(session);
      return;
    }
    this.sessions.set(sessionId, session);
    logger.info({ kwargs }, 'session made');
    this.sendResult(id, { session: sessionId, env_spec: entry.spec }, bin);
  }

  // ---- session queues ----

  private enqueue(item: SessionRequest, id: number, bin: boolean, batch: BatchCollector | null, index: number): void {
    const s = this.sessions.get(item.session);
    if (s === undefined) {
      const e = this.closedIds.has(item.session)
        ? item.type === 'close'
          ? null
          : err('UNKNOWN_SESSION', { session: item.session }, { reason: 'closed' })
        : err('UNKNOWN_SESSION', { session: item.session });
      if (batch) this.settleBatch(batch, index, e ?? {}, e !== null);
      else if (e) this.sendError(id, e, bin);
      else this.sendResult(id, {}, bin);
      return;
    }
    s.lastActive = Date.now();
    s.queue.push({ item, id, binary: bin, batch, index });
    if (!s.busy) void this.drain(s);
  }

  private async drain(s: Session): Promise<void> {
    s.busy = true;
    const limits = this.core.opLimits;
    let job: Job | undefined;
    try {
      while ((job = s.queue.shift()) !== undefined) {
        let result: unknown;
        let failed = false;
        try {
          result = await runOp(s, job.item, limits);
        } catch (e) {
          failed = true;
          result = e instanceof ProtocolError ? e : err('INTERNAL', { reason: reasonOf(e) });
          if (!(e instanceof ProtocolError)) this.core.log.error({ err: e, session: s.id }, 'internal error in session op');
        }
        if (!failed && !isEncodable(result, job.binary)) {
          // An env value outside the wire data model (NaN, Infinity, a class instance...) is the env's fault.
          failed = true;
          result = this.poisonUnencodable(s, result, job.binary);
        }
        if (job.item.type === 'close' && !failed) this.forget(s, 'closed by client');
        s.lastActive = Date.now();
        if (job.batch) this.settleBatch(job.batch, job.index, result, failed);
        else if (failed) this.sendError(job.id, result as ProtocolError, job.binary);
        else this.sendResult(job.id, result, job.binary);
      }
    } catch (e) {
      // Only a server bug lands here; keep the session usable rather than wedged busy.
      this.core.log.error({ err: e, session: s.id }, 'internal error draining a session queue');
    } finally {
      s.busy = false;
      if (s.queue.length > 0) void this.drain(s);
    }
  }

  /** Remove a closed session from this connection's books (once). */
  private forget(s: Session, why: string): void {
    if (this.sessions.get(s.id) !== s) return;
    this.sessions.delete(s.id);
    if (this.closedIds.size >= MAX_CLOSED_IDS) this.closedIds.clear();
    this.closedIds.add(s.id);
    this.core.sessionCount--;
    s.logger.info({ reason: why }, 'session closed');
  }

  /** Server-initiated close (idle, sandbox died, shutdown): event + close. */
  serverClose(sessionId: string, reason: string, code: string): Promise<void> {
    const s = this.sessions.get(sessionId);
    if (!s) return Promise.resolve();
    this.forget(s, reason);
    if (!this.closed) this.sendEvent('session_closed', s.id, { reason, code });
    return closeSession(s);
  }

  // ---- batch ----

  private batch(id: number, items: SessionRequest[], bin: boolean): void {
    const max = this.core.config.max_batch;
    if (items.length > max) {
      const reason = `batch of ${items.length} items exceeds max_batch (${max})`;
      this.sendError(id, err('INVALID_MESSAGE', { reason }, { reason, max_batch: max }), bin);
      return;
    }
    const collector: BatchCollector = { id, binary: bin, results: new Array(items.length), remaining: items.length };
    // Items are enqueued synchronously in order, so items of one session run in order.
    for (let i = 0; i < items.length; i++) this.enqueue(items[i] as SessionRequest, id, bin, collector, i);
  }

  private settleBatch(b: BatchCollector, index: number, value: unknown, failed: boolean): void {
    b.results[index] = failed ? { type: 'error', error: wireError(value as ProtocolError) } : { type: 'result', result: value };
    if (--b.remaining === 0) this.sendResult(b.id, { results: b.results }, b.binary);
  }

  // ---- outbound ----

  private send(frame: unknown, bin: boolean): void {
    if (this.ws.readyState !== 1) return;
    let data: string | Uint8Array;
    try {
      data = encodeReply(frame, bin);
    } catch (e) {
      // Unreachable for checked results; a bug if it happens, so say so instead of crashing.
      this.core.log.error({ err: e }, 'could not encode a reply');
      const id = (frame as { id?: number | null }).id ?? null;
      data = encodeReply({ id, type: 'error', error: wireError(err('INTERNAL', { reason: 'reply could not be encoded' })) }, bin);
    }
    this.out.send(data);
  }

  sendResult(id: number, result: unknown, bin: boolean): void {
    this.send({ id, type: 'result', result }, bin);
  }

  private poisonUnencodable(s: Session, result: unknown, bin: boolean): ProtocolError {
    if (s.state !== 'closed') {
      s.state = 'failed';
      s.failReason = 'ENV_ERROR';
    }
    const bad = findUnencodable(result, bin ? 'msgpack' : 'json');
    const reason = `env returned a value that cannot be encoded${bad ? ` at ${bad.path || '/'}: ${bad.reason}` : ''}`;
    s.logger.warn({ reason }, 'session env error');
    return err('ENV_ERROR', { reason }, { reason });
  }

  sendError(id: number | null, e: ProtocolError, bin: boolean): void {
    this.send({ id, type: 'error', error: wireError(e) }, bin);
  }

  sendEvent(event: string, session: string | undefined, details: Record<string, unknown>): void {
    const frame: Msg = { type: 'event', event, details };
    if (session !== undefined) frame.session = session;
    this.send(frame, this.lastBinary);
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

  private onClose(): void {
    this.closed = true;
    this.core.connections.delete(this);
    this.core.log.debug({ sessions: this.sessions.size }, 'connection closed');
    for (const s of [...this.sessions.values()]) {
      this.forget(s, 'connection closed');
      void closeSession(s);
    }
  }

  async shutdown(): Promise<void> {
    const sessions = [...this.sessions.values()];
    this.sendEvent('shutdown', undefined, { code: 'SHUTTING_DOWN', reason: 'server is shutting down' });
    await Promise.all(sessions.map((s) => this.serverClose(s.id, 'server is shutting down', 'SHUTTING_DOWN')));
    this.sendError(null, err('SHUTTING_DOWN'), this.lastBinary);
    this.closed = true;
    this.ws.close(1001, 'server is shutting down');
  }
}
