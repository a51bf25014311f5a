// A raw protocol client for server tests: sends frames, awaits replies by id, collects events.
// Independent of clients/ts on purpose (tests the server, not the client).
import WebSocket from 'ws';
import { decodeFrame, encodeFrame, PROTOCOL_VERSIONS } from '../../../protocol/src/index.js';

export type Frame = Record<string, any>;

export interface RawClientOptions {
  binary?: boolean;
  headers?: Record<string, string>;
  autoPong?: boolean;
}

export class RawClient {
  readonly ws: WebSocket;
  readonly binary: boolean;
  private nextId = 1;
  private readonly waiters = new Map<number | null, Array<(f: Frame) => void>>();
  /** Frames nobody awaited (events, id-null errors) in arrival order. */
  readonly unclaimed: Frame[] = [];
  private unclaimedWaiters: Array<(f: Frame) => void> = [];
  readonly all: Frame[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(ws: WebSocket, binary: boolean) {
    this.ws = ws;
    this.binary = binary;
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      const f = decodeFrame(data, isBinary, { maxBytes: 1 << 30 }) as Frame;
      this.all.push(f);
      const id = f.type === 'event' ? undefined : (f.id as number | null);
      const list = id !== undefined ? this.waiters.get(id) : undefined;
      if (list && list.length) {
        list.shift()!(f);
        if (!list.length) this.waiters.delete(id!);
        return;
      }
      const w = this.unclaimedWaiters.shift();
      if (w) w(f);
      else this.unclaimed.push(f);
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  static async open(url: string, opts: RawClientOptions = {}): Promise<RawClient> {
    const ws = new WebSocket(url, { headers: opts.headers, autoPong: opts.autoPong ?? true });
    const c = new RawClient(ws, opts.binary ?? false);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return c;
  }

  /** Open + hello; returns the client and the hello result. */
  static async connect(url: string, opts: RawClientOptions & { token?: string } = {}): Promise<RawClient> {
    const c = await RawClient.open(url, opts);
    const r = await c.request('hello', {
      versions: [...PROTOCOL_VERSIONS],
      client: { name: 'test', version: '0' },
      ...(opts.token ? { token: opts.token } : {}),
    });
    if (r.type !== 'result') throw new Error(`hello failed: ${JSON.stringify(r)}`);
    return c;
  }

  sendRaw(data: string | Buffer): void {
    this.ws.send(data);
  }

  /** Send a frame as-is (you pick the id). */
  sendFrame(frame: Frame, binary = this.binary): void {
    this.ws.send(encodeFrame(frame, binary));
  }

  /** Resolve with the next frame carrying this id (null = id-less errors). */
  waitFor(id: number | null, timeoutMs = 10_000): Promise<Frame> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply for id ${id} within ${timeoutMs} ms`)), timeoutMs);
      const list = this.waiters.get(id) ?? [];
      list.push((f) => {
        clearTimeout(timer);
        resolve(f);
      });
      this.waiters.set(id, list);
    });
  }

  /** Next frame not awaited by id (events, errors with id null). */
  nextUnclaimed(timeoutMs = 10_000): Promise<Frame> {
    const f = this.unclaimed.shift();
    if (f) return Promise.resolve(f);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no unclaimed frame within ${timeoutMs} ms`)), timeoutMs);
      this.unclaimedWaiters.push((fr) => {
        clearTimeout(timer);
        resolve(fr);
      });
    });
  }

  request(type: string, params: Frame = {}, binary = this.binary): Promise<Frame> {
    const id = this.nextId++;
    const p = this.waitFor(id);
    this.sendFrame({ id, type, ...params }, binary);
    return p;
  }

  /** request() that throws unless the reply is a result; returns the result body. */
  async ok(type: string, params: Frame = {}): Promise<Frame> {
    const r = await this.request(type, params);
    if (r.type !== 'result') throw new Error(`${type} failed: ${JSON.stringify(r.error)}`);
    return r.result as Frame;
  }

  /** request() expecting an error; returns the error body. */
  async fails(type: string, params: Frame = {}): Promise<Frame> {
    const r = await this.request(type, params);
    if (r.type !== 'error') throw new Error(`${type} unexpectedly succeeded: ${JSON.stringify(r.result)}`);
    return r.error as Frame;
  }

  async make(envId: string, kwargs?: Frame): Promise<string> {
    const r = await this.ok('make', { env_id: envId, ...(kwargs ? { kwargs } : {}) });
    return r.session as string;
  }

  close(): Promise<{ code: number; reason: string }> {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close();
    return this.closed;
  }
}
