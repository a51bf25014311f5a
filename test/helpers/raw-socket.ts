// A bare WebSocket with a frame queue, for tests that must see exactly what the server sends
// (transcripts, fuzzing) without any client library smoothing it over.

import WebSocket from 'ws';
import { decodeFrame, encodeJson, encodeMsgpack, PROTOCOL_VERSIONS } from '../../protocol/src/index.js';

export type Encoding = 'json' | 'msgpack';

export type Received =
  | { kind: 'frame'; isBinary: boolean; data: string | Uint8Array; message: any; decodeError?: string }
  | { kind: 'close'; code: number; reason: string };

export class RawSocket {
  private readonly queue: Received[] = [];
  private waiter: ((r: Received) => void) | undefined;
  closeInfo: { code: number; reason: string } | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      const payload: string | Uint8Array = isBinary ? new Uint8Array(data) : data.toString('utf8');
      let message: unknown;
      let decodeError: string | undefined;
      try {
        message = decodeFrame(payload, isBinary, { maxBytes: Number.MAX_SAFE_INTEGER });
      } catch (err) {
        decodeError = (err as Error).message;
      }
      this.push({ kind: 'frame', isBinary, data: payload, message, ...(decodeError ? { decodeError } : {}) });
    });
    ws.on('close', (code: number, reason: Buffer) => {
      this.closeInfo = { code, reason: reason.toString() };
      this.push({ kind: 'close', code, reason: reason.toString() });
    });
    ws.on('error', () => undefined);
  }

  static async open(url: string, headers: Record<string, string> = {}): Promise<RawSocket> {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false, maxPayload: 1024 * 1024 * 1024 });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new RawSocket(ws);
  }

  private push(r: Received): void {
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w(r);
    } else this.queue.push(r);
  }

  /** Next frame or close; rejects after `timeoutMs`. */
  next(timeoutMs = 5_000): Promise<Received> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    if (this.closeInfo) return Promise.resolve({ kind: 'close', ...this.closeInfo });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        reject(new Error(`no frame within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiter = (r) => {
        clearTimeout(timer);
        resolve(r);
      };
    });
  }

  /** Next decoded message; throws on close or an undecodable frame. */
  async nextMessage(timeoutMs = 5_000): Promise<any> {
    const r = await this.next(timeoutMs);
    if (r.kind === 'close') throw new Error(`connection closed (${r.code} ${r.reason}) while waiting for a frame`);
    if (r.decodeError) throw new Error(`server sent an undecodable frame: ${r.decodeError}`);
    return r.message;
  }

  /** Frames already received and not yet consumed. */
  get buffered(): number {
    return this.queue.length;
  }

  send(message: unknown, encoding: Encoding): void {
    this.ws.send(encoding === 'msgpack' ? encodeMsgpack(message) : encodeJson(message), { binary: encoding === 'msgpack' });
  }

  sendRaw(data: string | Uint8Array): void {
    this.ws.send(data, { binary: typeof data !== 'string' });
  }

  async request(message: Record<string, unknown>, encoding: Encoding, timeoutMs = 5_000): Promise<any> {
    this.send(message, encoding);
    return this.nextMessage(timeoutMs);
  }

  async hello(encoding: Encoding, id = 1, extra: Record<string, unknown> = {}): Promise<any> {
    const reply = await this.request({ id, type: 'hello', versions: [...PROTOCOL_VERSIONS], client: { name: 'test', version: '0' }, ...extra }, encoding);
    if (reply?.type !== 'result') throw new Error(`hello failed: ${JSON.stringify(reply)}`);
    return reply.result;
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  close(): Promise<void> {
    if (this.closeInfo) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close();
      setTimeout(() => {
        this.ws.terminate();
        resolve();
      }, 2_000).unref();
    });
  }
}
