// A minimal load generator over a bare `ws` socket: frames are built by the caller and replies are
// only inspected as bytes, so the client's own cost stays small and identical for the echo floor
// and for sandgym (the same frames go to both).

import WebSocket from 'ws';
import { decodeFrame } from '../../protocol/src/index.js';

type Frame = string | Uint8Array;

export class Driver {
  private onMessage: (data: Buffer, isBinary: boolean) => void = () => undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary));
  }

  static async open(url: string): Promise<Driver> {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new Driver(ws);
  }

  /** Sends one frame and resolves with the decoded reply (setup traffic only, one request at a time). */
  request(frame: Frame): Promise<any> {
    return new Promise((resolve, reject) => {
      this.onMessage = (data, isBinary) => {
        try {
          resolve(decodeFrame(isBinary ? new Uint8Array(data) : data.toString(), isBinary, { maxBytes: Number.MAX_SAFE_INTEGER }));
        } catch (err) {
          reject(err);
        }
      };
      this.ws.send(frame);
    });
  }

  /** Sends `count` frames at once and resolves with all decoded replies (in arrival order). */
  requestMany(frames: Frame[]): Promise<any[]> {
    return new Promise((resolve) => {
      const out: any[] = [];
      this.onMessage = (data, isBinary) => {
        out.push(decodeFrame(isBinary ? new Uint8Array(data) : data.toString(), isBinary, { maxBytes: Number.MAX_SAFE_INTEGER }));
        if (out.length === frames.length) resolve(out);
      };
      for (const f of frames) this.ws.send(f);
    });
  }

  /** One request in flight at a time; returns each round trip in microseconds. */
  sequential(n: number, make: (i: number) => Frame, isError: (data: Buffer) => boolean = () => false): Promise<{ samples: Float64Array; errors: number }> {
    return new Promise((resolve) => {
      const samples = new Float64Array(n);
      let i = 0;
      let errors = 0;
      let t0 = 0;
      this.onMessage = (data) => {
        samples[i] = (performance.now() - t0) * 1000;
        if (isError(data)) errors++;
        i++;
        if (i === n) return resolve({ samples, errors });
        const frame = make(i);
        t0 = performance.now();
        this.ws.send(frame);
      };
      const frame = make(0);
      t0 = performance.now();
      this.ws.send(frame);
    });
  }

  private corked = false;

  /**
   * Sends through a socket corked until the end of this event-loop turn, so the frames a burst of
   * replies triggers leave in one writev instead of one syscall each: the load generator must not be
   * the bottleneck of a throughput measurement. (`_socket` is ws's underlying net.Socket.)
   */
  private sendCoalesced(frame: Frame): void {
    if (!this.corked) {
      const sock = (this.ws as unknown as { _socket?: { cork(): void; uncork(): void } })._socket;
      if (sock) {
        this.corked = true;
        sock.cork();
        setImmediate(() => {
          this.corked = false;
          sock.uncork();
        });
      }
    }
    this.ws.send(frame);
  }

  /** Keeps `window` requests in flight until `total` replies arrived; returns elapsed ms. */
  pipelined(
    total: number,
    window: number,
    make: (i: number) => Frame,
    isError: (data: Buffer) => number | boolean = () => 0,
  ): Promise<{ elapsed_ms: number; errors: number }> {
    return new Promise((resolve) => {
      let sent = 0;
      let received = 0;
      let errors = 0;
      const t0 = performance.now();
      this.onMessage = (data) => {
        received++;
        errors += Number(isError(data));
        if (sent < total) this.sendCoalesced(make(sent++));
        if (received === total) resolve({ elapsed_ms: performance.now() - t0, errors });
      };
      while (sent < Math.min(window, total)) this.sendCoalesced(make(sent++));
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close();
    });
  }
}

/** True when a reply frame is an error frame (results of test/noop-v0 never contain the word). */
export function looksLikeError(data: Buffer): boolean {
  return data.indexOf('error') !== -1;
}
