// The connection object: one WebSocket, many sessions. Requests are multiplexed by uint32 id, so any
// number may be in flight (pipelining); replies are routed by id, never by arrival order, which is
// what keeps a timed-out request from shifting every later reply onto the wrong caller.
//
// Session resume (PROTOCOL.md §5a): when the server offers it (hello's resume_token) and the socket
// drops without a close frame, the client reconnects with capped, jittered backoff within the grace
// period, sends `resume` with the ids it has no reply to, re-sends only those the server says it never
// received (so no step runs twice), and lets the owed replies settle the pending calls. Requests made
// meanwhile wait and go out after the resume. When the grace period passes, or the server answers
// RESUME_EXPIRED/RESUME_REFUSED, the pending calls and the handles of the old sessions fail with that
// typed error, and the client says so (the `resume_failed` event and a warning on its logger).

// The codec module alone (not the protocol index): keeps ajv and the schemas out of the client's load path.
import { decodeFrame, encodeJson, encodeMsgpack } from '#protocol/codec.js';
// The majors this client speaks are the protocol package's (one declaration; import-free module).
import { PROTOCOL_VERSIONS } from '#protocol/version.js';
import { EnvHandle } from './env-handle.js';
import { CLOSE_CODES, ERROR_REGISTRY, SandgymError, connectionClosedError, requestTimeoutError, type ErrorScope } from './errors.js';
import { AbandonedIds, RequestIds } from './request-ids.js';
import { OPEN, openSocket, type OpenedSocket, type WebSocketCtor, type WebSocketLike } from './socket.js';
import { EnvGroup } from './scheduling.js';
import { schedulingFields, type RequestOptions } from './requests.js';
import type {
  AdmittedEventDetails,
  BatchItem,
  BatchOutcome,
  Capabilities,
  EnvSpec,
  FrameRecord,
  HelloResult,
  Limits,
  QueueProgress,
  QueuedEventDetails,
  SchedulingFields,
  ServerEvent,
  ServerInfo,
} from './types.js';

export const CLIENT_VERSION = '0.1.0';
export { PROTOCOL_VERSIONS, schedulingFields };

export type Encoding = 'json' | 'msgpack';
export type FrameListener = (frame: FrameRecord) => void;

export interface ConnectOptions {
  /** Bearer token: sent in hello (and as an Authorization header when the `ws` package is used). */
  token?: string;
  /** Wire encoding for everything this client sends: JSON text frames or msgpack binary frames. */
  encoding?: Encoding;
  /** Client-side deadline per request; a late reply is discarded by id. Default 60 s. */
  requestTimeoutMs?: number;
  /** Deadline for the WebSocket handshake plus hello. Default 10 s. */
  connectTimeoutMs?: number;
  clientName?: string;
  clientVersion?: string;
  /** WebSocket implementation to use instead of the global one / the `ws` package. */
  WebSocket?: WebSocketCtor;
  /** Sees every raw frame from the very first (hello) on; same as calling `client.onFrame` later. */
  onFrame?: FrameListener;
  /** First request id to use (tests exercise the uint32 wraparound with it). Default 1. */
  firstRequestId?: number;
  /**
   * Reconnect and resume the sessions after an unexpected drop, when the server offers resume
   * (limits.resume_grace_ms > 0). Default true; false: a drop fails every pending call at once.
   */
  reconnect?: boolean;
  /** Where the client says it is reconnecting, resumed, or lost its sessions. Default: console. */
  logger?: ClientLogger;
  /**
   * hello's client_group (PROTOCOL.md §6a): on a server without tokens, connections with the same group
   * share one fair share of the sandboxes. Ignored by a server with tokens (the token is the key).
   */
  clientGroup?: string;
}

export interface ClientLogger {
  info(message: string): void;
  warn(message: string): void;
}

/** What a resume brought back (the `resumed` event). */
export interface ResumeInfo {
  sessions: string[];
  /** Ids re-sent because the server never received them. */
  resent: number[];
  /** Ids that ran but whose reply the server no longer had: failed with REPLY_LOST. */
  lost: number[];
  attempts: number;
  /** From the drop to the resume result. */
  ms: number;
}

export type { RequestOptions };

/** Requests that may wait in the admission queue: their client deadline grows by the queue timeout. */
const QUEUEING = new Set(['make', 'reset', 'group']);

interface Pending {
  type: string;
  resolve: (value: any) => void;
  reject: (err: SandgymError) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** The frame as sent, kept while resume is possible: re-sent when the server never received it. */
  message: Record<string, unknown> | undefined;
  /** A call of the reconnect itself (hello, resume): fails with its socket, never waits for a resume. */
  direct: boolean;
}

export interface ClientEvents {
  /** Server-originated events: session_closed, shutdown, ... */
  event: (event: ServerEvent) => void;
  /** The connection is gone; every pending request has already been rejected with `error`. */
  close: (error: SandgymError) => void;
  /** Frames that belong to no request: id-null errors, undecodable frames, replies to unknown ids. */
  error: (error: SandgymError) => void;
  /** The socket dropped and the client is reconnecting to resume its sessions. */
  reconnecting: (info: { attempt: number; error: SandgymError }) => void;
  /** The sessions are back; pending calls settle with the replies the server held. */
  resumed: (info: ResumeInfo) => void;
  /** The sessions are gone (RESUME_EXPIRED / RESUME_REFUSED): pending calls and their handles failed with `error`. */
  resume_failed: (error: SandgymError) => void;
}

type ListenerMap = { [K in keyof ClientEvents]: Set<ClientEvents[K]> };

/** Connects, performs hello and returns a ready client. Rejects with SandgymError on any failure. */
export async function connect(url: string, opts: ConnectOptions = {}): Promise<SandgymClient> {
  const connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
  let opened: OpenedSocket;
  try {
    opened = await openSocket(url, { WebSocket: opts.WebSocket, token: opts.token, timeoutMs: connectTimeoutMs });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // `ws` reports an HTTP refusal of the upgrade as "Unexpected server response: 401".
    const unauthorized = /\b401\b/.test(message);
    throw new SandgymError(unauthorized ? 'UNAUTHORIZED' : 'CONNECTION_CLOSED', message, {
      details: { url, phase: 'open' },
      retryable: !unauthorized,
      scope: 'connection',
    });
  }
  const client = new SandgymClient(opened.ws, opts, url);
  client.replay(opened.takeEarlyEvents());
  try {
    await client.hello({ timeoutMs: connectTimeoutMs });
  } catch (err) {
    client.close().catch(() => undefined);
    // A server that refuses the handshake (bad token) explains why in an error frame before closing.
    const serverError = err instanceof SandgymError && err.code === 'CONNECTION_CLOSED' ? err.details?.server_error : undefined;
    throw serverError ? SandgymError.fromWire(serverError) : err;
  }
  return client;
}

export class SandgymClient {
  readonly encoding: Encoding;
  /** Filled by hello: who answered, what it can do and the limits it enforces. */
  serverInfo!: ServerInfo;
  capabilities!: Capabilities;
  limits!: Limits;
  protocolVersion!: number;

  private readonly pending = new Map<number, Pending>();
  private readonly abandoned = new AbandonedIds();
  private readonly ids: RequestIds;
  private readonly requestTimeoutMs: number;
  private readonly frameListeners = new Set<FrameListener>();
  private readonly listeners: ListenerMap = {
    event: new Set(),
    close: new Set(),
    error: new Set(),
    reconnecting: new Set(),
    resumed: new Set(),
    resume_failed: new Set(),
  };
  private closeError: SandgymError | undefined;
  /** A connection-scoped error frame (e.g. TOO_LARGE) usually precedes the close that it explains. */
  private lastConnectionError: SandgymError | undefined;
  private closedPromise: Promise<void>;
  private resolveClosed!: () => void;
  // ---- resume (PROTOCOL.md §5a) ----
  /** The server's current resume token (from hello, then from each resume); undefined: no resume. */
  private resumeToken: string | undefined;
  private graceMs = 0;
  /** close() was called: a drop after it is not resumed. */
  private userClosed = false;
  /** Set while reconnecting: requests wait in the outbox. */
  private reconnecting: Promise<void> | null = null;
  private readonly outbox: Record<string, unknown>[] = [];
  /** Sessions made on this client and not closed (they are what a failed resume loses). */
  private readonly openSessions = new Set<string>();
  /** Sessions lost to a failed resume: requests naming them fail with the error at once. */
  private readonly lostSessions = new Map<string, SandgymError>();
  private readonly log: ClientLogger;
  /** onProgress callbacks of requests that may wait in the admission queue, by request id. */
  private readonly progress = new Map<number, (p: QueueProgress) => void>();

  constructor(
    private ws: WebSocketLike,
    private readonly opts: ConnectOptions = {},
    /** Where to reconnect to (connect() passes it); without it a drop is never resumed. */
    private readonly url?: string,
  ) {
    this.encoding = opts.encoding ?? 'json';
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 60_000;
    this.ids = new RequestIds(opts.firstRequestId ?? 1);
    this.log = opts.logger ?? console;
    if (opts.onFrame) this.frameListeners.add(opts.onFrame);
    this.closedPromise = new Promise((resolve) => (this.resolveClosed = resolve));
    this.attach(ws);
  }

  /** Routes a socket's events here; a socket replaced by a reconnect is ignored from then on. */
  private attach(ws: WebSocketLike): void {
    ws.addEventListener('message', (ev: { data: unknown }) => this.handleFrame(ev.data, ws));
    ws.addEventListener('close', (ev: { code?: number; reason?: string }) => this.handleClose(ev?.code, ev?.reason ?? '', ws));
    // Errors are always followed by close, which is where pending requests are settled.
    ws.addEventListener('error', () => undefined);
  }

  /** Feeds events that arrived before this client attached its listeners (see openSocket). */
  replay(events: [string, any][], ws: WebSocketLike = this.ws): void {
    for (const [type, ev] of events) {
      if (type === 'message') this.handleFrame(ev?.data, ws);
      else this.handleClose(ev?.code, ev?.reason ?? '', ws);
    }
  }

  /** True once the connection is gone for good (closed by either side, and not being resumed). */
  get closed(): boolean {
    return this.closeError !== undefined;
  }

  /** True while the client reconnects to resume its sessions after a drop. */
  get resuming(): boolean {
    return this.reconnecting !== null;
  }

  /** Number of requests awaiting a reply. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Sends hello; called by `connect`. */
  async hello(opts?: RequestOptions): Promise<HelloResult> {
    const params: Record<string, unknown> = {
      versions: [...PROTOCOL_VERSIONS],
      client: { name: this.opts.clientName ?? 'sandgym-ts', version: this.opts.clientVersion ?? CLIENT_VERSION },
    };
    if (this.opts.token !== undefined) params.token = this.opts.token;
    if (this.opts.clientGroup !== undefined) params.client_group = this.opts.clientGroup;
    const result = await this.call<HelloResult>('hello', params, opts, true);
    this.protocolVersion = result.version;
    this.serverInfo = result.server;
    this.capabilities = result.capabilities;
    this.limits = result.limits;
    this.resumeToken = result.resume_token;
    this.graceMs = result.limits.resume_grace_ms ?? 0;
    return result;
  }

  async listEnvs(opts?: RequestOptions): Promise<EnvSpec[]> {
    const result = await this.request<{ envs: EnvSpec[] }>('list_envs', {}, opts);
    return result.envs;
  }

  /**
   * Creates a session of `envId`; the handle drives its episodes. `opts` may carry the session's
   * scheduling defaults (priority, queue_timeout_ms, preemptible: PROTOCOL.md §6a).
   */
  async make<O = unknown, A = unknown>(envId: string, kwargs?: Record<string, unknown>, opts?: RequestOptions & SchedulingFields): Promise<EnvHandle<O, A>> {
    const params: Record<string, unknown> = { env_id: envId, ...schedulingFields(opts) };
    if (kwargs !== undefined) params.kwargs = kwargs;
    const result = await this.request<{ session: string; env_spec: EnvSpec }>('make', params, opts);
    this.openSessions.add(result.session);
    return new EnvHandle<O, A>(this, result.session, result.env_spec);
  }

  /**
   * Makes `size` sessions of `envId` admitted as one unit (a GRPO group, PROTOCOL.md §6a): resolves when
   * the server has admitted all of them at once. `group.completed` resolves on the server's
   * group_complete event (the last member closed). Needs capabilities.scheduling.
   */
  async group<O = unknown, A = unknown>(
    envId: string,
    size: number,
    kwargs?: Record<string, unknown>,
    opts?: RequestOptions & SchedulingFields,
  ): Promise<EnvGroup<O, A>> {
    const params: Record<string, unknown> = { env_id: envId, size, ...schedulingFields(opts) };
    if (kwargs !== undefined) params.kwargs = kwargs;
    let complete!: () => void;
    const completed = new Promise<void>((resolve) => (complete = resolve));
    let groupId: string | undefined;
    const off = this.on('event', (e) => {
      if (e.event === 'group_complete' && groupId !== undefined && (e.details as { group?: unknown } | undefined)?.group === groupId) {
        off();
        complete();
      }
    });
    let result: { group: string; sessions: string[]; env_spec: EnvSpec };
    try {
      result = await this.request('group', params, opts);
    } catch (err) {
      off();
      throw err;
    }
    groupId = result.group;
    for (const s of result.sessions) this.openSessions.add(s);
    return new EnvGroup<O, A>(
      result.group,
      result.sessions.map((s) => new EnvHandle<O, A>(this, s, result.env_spec)),
      completed,
    );
  }

  /** Runs many reset/step/close items in one frame; one outcome per item, in order. */
  async batch(items: BatchItem[], opts?: RequestOptions): Promise<BatchOutcome[]> {
    const result = await this.request<{ results: { type: string; result?: Record<string, unknown>; error?: unknown }[] }>('batch', { requests: items }, opts);
    return result.results.map(
      (r): BatchOutcome => (r.type === 'error' ? { type: 'error', error: SandgymError.fromWire(r.error) } : { type: 'result', result: r.result ?? {} }),
    );
  }

  /** Round trip through the server; resolves with the measured time in milliseconds. */
  async ping(opts?: RequestOptions): Promise<number> {
    const t0 = now();
    await this.request('ping', { t: t0 }, opts);
    return now() - t0;
  }

  /**
   * Low-level request: sends `{id, type, ...params}` and resolves with the reply's `result`, or rejects
   * with SandgymError (server error frame, client timeout, or dropped connection).
   */
  request<T = Record<string, unknown>>(type: string, params: Record<string, unknown> = {}, opts?: RequestOptions): Promise<T> {
    const session = params.session;
    if (typeof session === 'string') {
      const lost = this.lostSessions.get(session);
      if (lost) return Promise.reject(lost);
    }
    const p = this.call<T>(type, params, opts, false);
    if (type === 'close' && typeof session === 'string')
      void p.then(
        () => this.openSessions.delete(session),
        () => undefined,
      );
    return p;
  }

  /** `direct`: a call of the handshake or of a reconnect, sent on the current socket even while reconnecting. */
  private call<T>(type: string, params: Record<string, unknown>, opts: RequestOptions | undefined, direct: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.closeError) return reject(this.closeError);
      const queued = this.reconnecting !== null && !direct;
      // Closing but the close event is still on its way: wait for it so the error names the cause.
      // A reconnect attempt's socket that is already gone fails its call now (the loop tries again).
      if (direct && this.reconnecting !== null && this.ws.readyState !== OPEN) return reject(connectionClosedError(undefined, 'socket is not open'));
      if (!queued && this.ws.readyState !== OPEN)
        return void this.closedPromise.then(() => reject(this.closeError ?? connectionClosedError(undefined, 'socket is not open')));
      const id = this.ids.allocate((candidate) => this.pending.has(candidate) || this.abandoned.has(candidate));
      let timeoutMs = opts?.timeoutMs ?? this.requestTimeoutMs;
      // A request that may wait in the admission queue gets the queue's time on top of its own.
      if (timeoutMs > 0 && QUEUEING.has(type) && this.capabilities?.scheduling === true) {
        const q = typeof params.queue_timeout_ms === 'number' ? params.queue_timeout_ms : (this.limits.max_queue_timeout_ms ?? 0);
        timeoutMs += Math.min(q, this.limits.max_queue_timeout_ms ?? q);
      }
      if (opts?.onProgress) this.progress.set(id, opts.onProgress);
      const message = { id, type, ...params };
      // The frame is kept only where a resume may need to send it again.
      const keep = !direct && this.resumeToken !== undefined && this.opts.reconnect !== false;
      const entry: Pending = { type, resolve, reject, timer: undefined, message: keep ? message : undefined, direct };
      if (timeoutMs > 0) entry.timer = setTimeout(() => this.expire(id, timeoutMs), timeoutMs);
      this.pending.set(id, entry);
      if (queued) {
        this.outbox.push(message);
        return;
      }
      try {
        this.send(message);
      } catch (err) {
        this.pending.delete(id);
        if (entry.timer) clearTimeout(entry.timer);
        reject(asEncodeError(type, err));
      }
    });
  }

  on<K extends keyof ClientEvents>(name: K, listener: ClientEvents[K]): () => void {
    (this.listeners[name] as Set<ClientEvents[K]>).add(listener);
    return () => (this.listeners[name] as Set<ClientEvents[K]>).delete(listener);
  }

  /** Observes every raw frame sent and received; returns an unsubscribe function. */
  onFrame(listener: FrameListener): () => void {
    this.frameListeners.add(listener);
    return () => this.frameListeners.delete(listener);
  }

  /** Closes the connection (the server closes all its sessions); pending requests reject. */
  async close(): Promise<void> {
    this.userClosed = true;
    if (!this.closeError && this.reconnecting !== null) {
      // No socket to close: the reconnect loop stops, and everything waiting fails now.
      this.finish(connectionClosedError(CLOSE_CODES.NORMAL, 'client closed'));
      return;
    }
    if (!this.closeError) {
      try {
        this.ws.close(CLOSE_CODES.NORMAL, 'client closed');
      } catch {
        /* already closing */
      }
      // Some implementations never fire close for a socket that never opened; do not hang on them.
      const fallback = setTimeout(() => this.handleClose(CLOSE_CODES.NORMAL, 'client closed'), 2_000);
      await this.closedPromise;
      clearTimeout(fallback);
    }
  }

  /** Resolves when the connection is gone, whoever closed it. */
  whenClosed(): Promise<void> {
    return this.closedPromise;
  }

  private send(message: Record<string, unknown>): void {
    const data = this.encoding === 'msgpack' ? encodeMsgpack(message) : encodeJson(message);
    this.ws.send(data);
    if (this.frameListeners.size > 0) this.emitFrame({ direction: 'sent', data, message, at: now() });
  }

  private expire(id: number, timeoutMs: number): void {
    const entry = this.pending.get(id);
    if (!entry) return;
    this.pending.delete(id);
    this.progress.delete(id);
    this.abandoned.add(id);
    entry.reject(requestTimeoutError(entry.type, id, timeoutMs));
  }

  private handleFrame(raw: unknown, ws: WebSocketLike): void {
    if (ws !== this.ws) return;
    const isBinary = typeof raw !== 'string';
    const data = isBinary ? toBytes(raw) : (raw as string);
    let message: any;
    try {
      message = decodeFrame(data, isBinary, { maxBytes: Number.MAX_SAFE_INTEGER });
    } catch (err) {
      if (this.frameListeners.size > 0) this.emitFrame({ direction: 'received', data, at: now() });
      this.emit('error', new SandgymError('PARSE_ERROR', `undecodable frame from server: ${(err as Error)?.message ?? err}`));
      return;
    }
    if (this.frameListeners.size > 0) this.emitFrame({ direction: 'received', data, message, at: now() });
    if (!message || typeof message !== 'object') {
      this.emit('error', new SandgymError('INVALID_MESSAGE', 'server sent a frame that is not an object'));
      return;
    }
    switch (message.type) {
      case 'result':
        return this.settle(message.id, undefined, message.result);
      case 'error':
        return this.settle(message.id, SandgymError.fromWire(message.error), undefined);
      case 'event':
        if (message.event === 'queued' || message.event === 'admitted') this.onQueueEvent(message as ServerEvent);
        else if (message.event === 'session_closed') this.onSessionClosed(message as ServerEvent);
        return this.emit('event', message as ServerEvent);
      default:
        this.emit('error', new SandgymError('INVALID_MESSAGE', `server sent a frame of unknown type '${String(message.type)}'`));
    }
  }

  private settle(id: unknown, error: SandgymError | undefined, result: unknown): void {
    const entry = typeof id === 'number' ? this.pending.get(id) : undefined;
    if (!entry) {
      if (typeof id === 'number' && this.abandoned.consume(id)) return; // late reply to a timed-out request
      if (error) {
        if (error.scope === 'connection') this.lastConnectionError = error;
        // An id-null error of request or session scope answers some call whose id the server could
        // not read (a conforming server never sends one for a frame this client encoded, PROTOCOL.md
        // §2). Nobody can tell which call: fail every pending one rather than leave one hanging.
        else if (id === null) this.failPending(error);
        this.emit('error', error);
      } else {
        this.emit('error', new SandgymError('INVALID_MESSAGE', `reply for unknown request id ${String(id)}`));
      }
      return;
    }
    this.pending.delete(id as number);
    this.progress.delete(id as number);
    if (entry.timer) clearTimeout(entry.timer);
    if (error) {
      if (error.scope === 'connection') this.lastConnectionError = error;
      entry.reject(error);
    } else entry.resolve(result ?? {});
  }

  /**
   * The server closed a session with a code (PREEMPTED, SANDBOX_ERROR, TIMEOUT...): later requests on it
   * fail with that error, typed as the registry says, instead of a bare UNKNOWN_SESSION, so rollout code
   * (rerunOnInfraFailure) can tell an infrastructure failure from its own mistake.
   */
  private onSessionClosed(e: ServerEvent): void {
    const code = (e.details as { code?: unknown } | undefined)?.code;
    if (typeof e.session !== 'string' || typeof code !== 'string' || !this.openSessions.has(e.session)) return;
    this.openSessions.delete(e.session);
    const reason = (e.details as { reason?: unknown }).reason;
    const known = (ERROR_REGISTRY as Record<string, { retryable: boolean; scope: ErrorScope } | undefined>)[code];
    this.lostSessions.set(
      e.session,
      new SandgymError(code, `session closed by the server: ${typeof reason === 'string' ? reason : code}`, {
        details: { session: e.session, reason },
        retryable: known?.retryable ?? false,
        scope: known?.scope ?? 'session',
      }),
    );
  }

  /** A queued/admitted event names the waiting request's id: hand it to that request's onProgress. */
  private onQueueEvent(e: ServerEvent): void {
    const d = (e.details ?? {}) as Record<string, unknown>;
    const id = d.request;
    if (typeof id !== 'number') return;
    const listener = this.progress.get(id);
    if (!listener) return;
    if (e.event === 'admitted') this.progress.delete(id);
    try {
      listener(
        e.event === 'queued'
          ? { event: 'queued', session: e.session, ...(d as Omit<QueuedEventDetails, never>) }
          : { event: 'admitted', session: e.session, ...(d as Omit<AdmittedEventDetails, never>) },
      );
    } catch (err) {
      this.log.warn(`onProgress threw: ${(err as Error)?.message ?? err}`);
    }
  }

  /** Rejects every pending request with `error`; their ids stay reserved and late replies are dropped. */
  private failPending(error: SandgymError): void {
    const pending = [...this.pending];
    this.pending.clear();
    this.progress.clear();
    for (const [id, entry] of pending) {
      if (entry.timer) clearTimeout(entry.timer);
      this.abandoned.add(id);
      entry.reject(error);
    }
  }

  private handleClose(code: number | undefined, reason: string, ws: WebSocketLike = this.ws): void {
    if (this.closeError || ws !== this.ws) return;
    const err = connectionClosedError(code, reason, this.lastConnectionError);
    if (this.reconnecting !== null) {
      // A reconnect attempt's socket failed: its own calls fail, the loop tries again.
      this.failDirect(err);
      return;
    }
    if (this.mayResume(code)) {
      this.reconnecting = this.resume(err);
      return;
    }
    this.finish(err);
  }

  /** The connection is gone for good: every call waiting fails with `err`. */
  private finish(err: SandgymError): void {
    if (this.closeError) return;
    this.closeError = err;
    this.reconnecting = null;
    this.outbox.length = 0;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const entry of pending) {
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(err);
    }
    this.emit('close', err);
    this.resolveClosed();
  }

  // ---- resume (PROTOCOL.md §5a) ----

  /**
   * A drop worth resuming: the server offers resume, the caller did not opt out or close, and the
   * socket ended without a close frame (1006; a close frame is the server ending it on purpose).
   */
  private mayResume(code: number | undefined): boolean {
    return (
      this.resumeToken !== undefined &&
      this.graceMs > 0 &&
      this.opts.reconnect !== false &&
      this.url !== undefined &&
      !this.userClosed &&
      code === ABNORMAL_CLOSURE &&
      this.lastConnectionError === undefined
    );
  }

  private failDirect(err: SandgymError): void {
    for (const [id, entry] of [...this.pending]) {
      if (!entry.direct) continue;
      this.pending.delete(id);
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(err);
    }
  }

  /** Reconnects with backoff until resumed, refused, or the grace period is over. */
  private async resume(dropped: SandgymError): Promise<void> {
    const t0 = Date.now();
    const deadline = t0 + this.graceMs;
    // Sent on the dropped socket and unanswered: what the server may owe us.
    const owed = [...this.pending.keys()];
    const oldToken = this.resumeToken as string;
    this.log.warn(`sandgym: connection lost (${dropped.message}); reconnecting to resume ${this.openSessions.size} session(s) within ${this.graceMs} ms`);
    let attempt = 0;
    let delay = 100;
    let last: SandgymError = dropped;
    while (!this.userClosed && this.closeError === undefined) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      attempt++;
      this.emit('reconnecting', { attempt, error: last });
      try {
        const opened = await openSocket(this.url as string, {
          WebSocket: this.opts.WebSocket,
          token: this.opts.token,
          timeoutMs: Math.min(left, this.opts.connectTimeoutMs ?? 10_000),
        });
        if (this.userClosed || this.closeError !== undefined) {
          opened.ws.close(CLOSE_CODES.NORMAL, 'client closed');
          return;
        }
        this.ws = opened.ws;
        this.attach(opened.ws);
        this.replay(opened.takeEarlyEvents(), opened.ws);
        const timeoutMs = Math.max(1, Math.min(deadline - Date.now(), this.opts.connectTimeoutMs ?? 10_000));
        await this.hello({ timeoutMs });
        const res = await this.call<{ resume_token: string; sessions: string[]; unseen: number[]; lost: number[] }>(
          'resume',
          { token: oldToken, pending: owed.filter((id) => this.pending.has(id)) },
          { timeoutMs },
          true,
        );
        this.resumed(res, attempt, t0);
        return;
      } catch (e) {
        last = e instanceof SandgymError ? e : connectionClosedError(undefined, (e as Error)?.message ?? String(e));
        if (last.code === 'RESUME_EXPIRED' || last.code === 'RESUME_REFUSED' || last.code === 'UNAUTHORIZED') {
          this.resumeFailed(last, owed);
          return;
        }
        // A socket that opened but failed during hello/resume: drop it before the next attempt.
        try {
          this.ws.close();
        } catch {
          /* already gone */
        }
      }
      const wait = Math.min(delay * (0.5 + Math.random() / 2), deadline - Date.now());
      delay = Math.min(delay * 2, 2_000);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    if (this.closeError !== undefined) return;
    const reason = `could not reconnect within the grace period of ${this.graceMs} ms (${attempt} attempts; last: ${last.message})`;
    const expired = new SandgymError('RESUME_EXPIRED', `cannot resume: ${reason}`, {
      details: { reason, sessions: [...this.openSessions] },
      retryable: false,
      scope: 'request',
    });
    this.markLost(expired);
    this.log.warn(`sandgym: ${expired.message}; ${this.openSessions.size} session(s) lost`);
    this.emit('resume_failed', expired);
    this.finish(expired);
  }

  private resumed(res: { resume_token: string; sessions: string[]; unseen: number[]; lost: number[] }, attempts: number, t0: number): void {
    this.resumeToken = res.resume_token;
    this.reconnecting = null;
    for (const id of res.lost) {
      const entry = this.pending.get(id);
      if (!entry) continue;
      this.pending.delete(id);
      if (entry.timer) clearTimeout(entry.timer);
      this.abandoned.add(id);
      entry.reject(
        new SandgymError('REPLY_LOST', `${entry.type} (id ${id}) ran on the server but its reply was lost with the connection`, {
          details: { request_id: id, type: entry.type },
          retryable: false,
          scope: 'request',
        }),
      );
    }
    // Never received by the server: sent again, same id. The owed replies of the others follow the result.
    for (const id of res.unseen) {
      const message = this.pending.get(id)?.message;
      if (message) this.sendQueued(id, message);
    }
    for (const message of this.outbox.splice(0)) this.sendQueued(message.id as number, message);
    const info: ResumeInfo = { sessions: res.sessions, resent: res.unseen, lost: res.lost, attempts, ms: Date.now() - t0 };
    this.log.info(
      `sandgym: resumed ${res.sessions.length} session(s) after ${info.ms} ms (${attempts} attempt(s); ${res.unseen.length} request(s) re-sent, ${res.lost.length} lost)`,
    );
    this.emit('resumed', info);
  }

  /** The server will not give the sessions back: their calls and handles fail; the new connection stays. */
  private resumeFailed(err: SandgymError, owed: number[]): void {
    this.markLost(err);
    this.reconnecting = null;
    for (const id of owed) {
      const entry = this.pending.get(id);
      if (!entry) continue;
      this.pending.delete(id);
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(err);
    }
    this.log.warn(`sandgym: ${err.message}; ${this.lostSessions.size} session(s) lost`);
    this.emit('resume_failed', err);
    // Requests made meanwhile: those naming a lost session fail, the rest go out on the new connection.
    for (const message of this.outbox.splice(0)) {
      const id = message.id as number;
      const lost = typeof message.session === 'string' ? this.lostSessions.get(message.session) : undefined;
      const entry = this.pending.get(id);
      if (lost && entry) {
        this.pending.delete(id);
        if (entry.timer) clearTimeout(entry.timer);
        entry.reject(lost);
      } else this.sendQueued(id, message);
    }
  }

  private markLost(err: SandgymError): void {
    for (const s of this.openSessions) this.lostSessions.set(s, err);
    this.openSessions.clear();
  }

  /** Sends a frame that waited for the resume; an encoding error fails its call. */
  private sendQueued(id: number, message: Record<string, unknown>): void {
    const entry = this.pending.get(id);
    if (!entry) return;
    try {
      this.send(message);
    } catch (err) {
      this.pending.delete(id);
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(asEncodeError(entry.type, err));
    }
  }

  private emit<K extends keyof ClientEvents>(name: K, arg: Parameters<ClientEvents[K]>[0]): void {
    for (const listener of this.listeners[name]) {
      try {
        (listener as (a: typeof arg) => void)(arg);
      } catch {
        /* a listener's bug must not break routing */
      }
    }
  }

  private emitFrame(frame: FrameRecord): void {
    for (const listener of this.frameListeners) {
      try {
        listener(frame);
      } catch {
        /* observers cannot break the connection */
      }
    }
  }
}

/** The close code of a socket that ended without a close frame (RFC 6455 §7.1.5): a drop. */
const ABNORMAL_CLOSURE = 1006;

/** The codec throws ProtocolError (INVALID_MESSAGE with details.path) for values off the data model, e.g. NaN. */
function asEncodeError(type: string, err: unknown): SandgymError {
  if (err instanceof SandgymError) return err;
  const wire = (err as { toWire?: () => unknown })?.toWire?.();
  if (wire) return SandgymError.fromWire(wire);
  return new SandgymError('INVALID_MESSAGE', `could not encode ${type}: ${(err as Error)?.message ?? String(err)}`);
}

function toBytes(raw: unknown): Uint8Array {
  if (raw instanceof Uint8Array) return raw;
  if (raw instanceof ArrayBuffer) return new Uint8Array(raw);
  if (ArrayBuffer.isView(raw)) return new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
  if (Array.isArray(raw)) return toBytes(concat(raw as Uint8Array[])); // ws fragments
  return new Uint8Array(0);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

function now(): number {
  return typeof performance !== 'undefined' ? performance.now() : Date.now();
}
