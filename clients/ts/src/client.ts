// The connection object: one WebSocket, many sessions. Requests are multiplexed by uint32 id, so any
// number may be in flight (pipelining); replies are routed by id, never by arrival order, which is
// what keeps a timed-out request from shifting every later reply onto the wrong caller.

// The codec module alone (not the protocol index): keeps ajv and the schemas out of the client's load path.
import { decodeFrame, encodeJson, encodeMsgpack } from '../../../protocol/src/codec.js';
// The majors this client speaks are the protocol package's (one declaration; import-free module).
import { PROTOCOL_VERSIONS } from '../../../protocol/src/version.js';
import { EnvHandle } from './env-handle.js';
import { CLOSE_CODES, SandgymError, connectionClosedError, requestTimeoutError } from './errors.js';
import { AbandonedIds, RequestIds } from './request-ids.js';
import { OPEN, openSocket, type OpenedSocket, type WebSocketCtor, type WebSocketLike } from './socket.js';
import type { BatchItem, BatchOutcome, Capabilities, EnvSpec, FrameRecord, HelloResult, Limits, ServerEvent, ServerInfo } from './types.js';

export const CLIENT_VERSION = '0.1.0';
export { PROTOCOL_VERSIONS };

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
}

export interface RequestOptions {
  /** Overrides the client's requestTimeoutMs for this request; 0 disables the deadline. */
  timeoutMs?: number;
}

interface Pending {
  type: string;
  resolve: (value: any) => void;
  reject: (err: SandgymError) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export interface ClientEvents {
  /** Server-originated events: session_closed, shutdown, ... */
  event: (event: ServerEvent) => void;
  /** The connection is gone; every pending request has already been rejected with `error`. */
  close: (error: SandgymError) => void;
  /** Frames that belong to no request: id-null errors, undecodable frames, replies to unknown ids. */
  error: (error: SandgymError) => void;
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
  const client = new SandgymClient(opened.ws, opts);
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
  private readonly listeners: ListenerMap = { event: new Set(), close: new Set(), error: new Set() };
  private closeError: SandgymError | undefined;
  /** A connection-scoped error frame (e.g. TOO_LARGE) usually precedes the close that it explains. */
  private lastConnectionError: SandgymError | undefined;
  private closedPromise: Promise<void>;
  private resolveClosed!: () => void;

  constructor(
    private readonly ws: WebSocketLike,
    private readonly opts: ConnectOptions = {},
  ) {
    this.encoding = opts.encoding ?? 'json';
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 60_000;
    this.ids = new RequestIds(opts.firstRequestId ?? 1);
    if (opts.onFrame) this.frameListeners.add(opts.onFrame);
    this.closedPromise = new Promise((resolve) => (this.resolveClosed = resolve));
    ws.addEventListener('message', (ev: { data: unknown }) => this.handleFrame(ev.data));
    ws.addEventListener('close', (ev: { code?: number; reason?: string }) => this.handleClose(ev?.code, ev?.reason ?? ''));
    // Errors are always followed by close, which is where pending requests are settled.
    ws.addEventListener('error', () => undefined);
  }

  /** Feeds events that arrived before this client attached its listeners (see openSocket). */
  replay(events: [string, any][]): void {
    for (const [type, ev] of events) {
      if (type === 'message') this.handleFrame(ev?.data);
      else this.handleClose(ev?.code, ev?.reason ?? '');
    }
  }

  /** True once the socket is gone (closed by either side). */
  get closed(): boolean {
    return this.closeError !== undefined;
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
    const result = await this.request<HelloResult>('hello', params, opts);
    this.protocolVersion = result.version;
    this.serverInfo = result.server;
    this.capabilities = result.capabilities;
    this.limits = result.limits;
    return result;
  }

  async listEnvs(opts?: RequestOptions): Promise<EnvSpec[]> {
    const result = await this.request<{ envs: EnvSpec[] }>('list_envs', {}, opts);
    return result.envs;
  }

  /** Creates a session of `envId`; the handle drives its episodes. */
  async make<O = unknown, A = unknown>(envId: string, kwargs?: Record<string, unknown>, opts?: RequestOptions): Promise<EnvHandle<O, A>> {
    const params: Record<string, unknown> = { env_id: envId };
    if (kwargs !== undefined) params.kwargs = kwargs;
    const result = await this.request<{ session: string; env_spec: EnvSpec }>('make', params, opts);
    return new EnvHandle<O, A>(this, result.session, result.env_spec);
  }

  /** Runs many reset/step/close items in one frame; one outcome per item, in order. */
  async batch(items: BatchItem[], opts?: RequestOptions): Promise<BatchOutcome[]> {
    const result = await this.request<{ results: { type: string; result?: Record<string, unknown>; error?: unknown }[] }>('batch', { requests: items }, opts);
    return result.results.map((r): BatchOutcome =>
      r.type === 'error' ? { type: 'error', error: SandgymError.fromWire(r.error) } : { type: 'result', result: r.result ?? {} },
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
    return new Promise<T>((resolve, reject) => {
      if (this.closeError) return reject(this.closeError);
      // Closing but the close event is still on its way: wait for it so the error names the cause.
      if (this.ws.readyState !== OPEN) return void this.closedPromise.then(() => reject(this.closeError ?? connectionClosedError(undefined, 'socket is not open')));
      const id = this.ids.allocate((candidate) => this.pending.has(candidate) || this.abandoned.has(candidate));
      const timeoutMs = opts?.timeoutMs ?? this.requestTimeoutMs;
      const entry: Pending = { type, resolve, reject, timer: undefined };
      if (timeoutMs > 0) entry.timer = setTimeout(() => this.expire(id, timeoutMs), timeoutMs);
      this.pending.set(id, entry);
      const message = { id, type, ...params };
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
    this.abandoned.add(id);
    entry.reject(requestTimeoutError(entry.type, id, timeoutMs));
  }

  private handleFrame(raw: unknown): void {
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
    if (entry.timer) clearTimeout(entry.timer);
    if (error) {
      if (error.scope === 'connection') this.lastConnectionError = error;
      entry.reject(error);
    } else entry.resolve(result ?? {});
  }

  /** Rejects every pending request with `error`; their ids stay reserved and late replies are dropped. */
  private failPending(error: SandgymError): void {
    const pending = [...this.pending];
    this.pending.clear();
    for (const [id, entry] of pending) {
      if (entry.timer) clearTimeout(entry.timer);
      this.abandoned.add(id);
      entry.reject(error);
    }
  }

  private handleClose(code: number | undefined, reason: string): void {
    if (this.closeError) return;
    const err = connectionClosedError(code, reason, this.lastConnectionError);
    this.closeError = err;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const entry of pending) {
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(err);
    }
    this.emit('close', err);
    this.resolveClosed();
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
