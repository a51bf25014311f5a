// Opens a WebSocket through whatever implementation the platform has: the standard global one in
// browsers (and Node >= 22), else the `ws` package, imported lazily so browser bundles never need it.
// Only the WHATWG-style surface (addEventListener, binaryType) is used, which both provide.

export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, listener: (ev: any) => void): void;
  removeEventListener(type: string, listener: (ev: any) => void): void;
}

/** Events that arrived between `open` and the client taking over the socket (replayed in order). */
export type EarlyEvent = ['message' | 'close', any];

export interface OpenedSocket {
  ws: WebSocketLike;
  /** Call once the real listeners are attached: stops buffering and returns what was buffered. */
  takeEarlyEvents(): EarlyEvent[];
}

export type WebSocketCtor = new (url: string, ...args: any[]) => WebSocketLike;

export interface OpenOptions {
  /** An explicit implementation (e.g. `ws`'s class or a browser's); defaults to the global or `ws`. */
  WebSocket?: WebSocketCtor;
  /** Sent as `Authorization: Bearer` when the implementation accepts headers (`ws`); always also sent in hello. */
  token?: string;
  /** Rejects the open when the handshake takes longer than this. */
  timeoutMs: number;
}

export const OPEN = 1;

async function resolveCtor(explicit?: WebSocketCtor): Promise<{ ctor: WebSocketCtor; isWsPackage: boolean }> {
  if (explicit) return { ctor: explicit, isWsPackage: false };
  const g = (globalThis as { WebSocket?: WebSocketCtor }).WebSocket;
  if (g) return { ctor: g, isWsPackage: false };
  // A variable specifier keeps bundlers from inlining `ws` (its browser build only throws).
  const spec = 'ws';
  const mod = (await import(spec)) as { default?: WebSocketCtor; WebSocket?: WebSocketCtor };
  const ctor = mod.WebSocket ?? mod.default;
  if (!ctor) throw new Error('no WebSocket implementation: install the `ws` package');
  return { ctor, isWsPackage: true };
}

/**
 * Resolves once the socket is open; rejects with a plain Error on failure (the client wraps it).
 * A server may answer and close right after the upgrade (a bad token): frames and the close that
 * arrive before the caller attaches its listeners are buffered, never lost.
 */
export async function openSocket(url: string, opts: OpenOptions): Promise<OpenedSocket> {
  const { ctor, isWsPackage } = await resolveCtor(opts.WebSocket);
  const ws = isWsPackage ? new ctor(url, { headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {}, perMessageDeflate: false }) : new ctor(url);
  ws.binaryType = 'arraybuffer';
  const early: EarlyEvent[] = [];
  const onMessage = (ev: any) => early.push(['message', ev]);
  const onClose = (ev: any) => early.push(['close', ev]);
  ws.addEventListener('message', onMessage);
  ws.addEventListener('close', onClose);
  await new Promise<void>((resolve, reject) => {
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        try {
          ws.close();
        } catch {
          /* already failed */
        }
        reject(err);
      } else resolve();
    };
    const timer = setTimeout(() => finish(new Error(`WebSocket open timed out after ${opts.timeoutMs} ms: ${url}`)), opts.timeoutMs);
    ws.addEventListener('open', () => finish());
    ws.addEventListener('error', (ev: { message?: string; error?: Error }) =>
      finish(new Error(`WebSocket error opening ${url}: ${ev?.error?.message ?? ev?.message ?? 'connection failed'}`)),
    );
    ws.addEventListener('close', (ev: { code?: number; reason?: string }) =>
      finish(new Error(`WebSocket closed while opening ${url} (code ${ev?.code ?? '?'}${ev?.reason ? `: ${ev.reason}` : ''})`)),
    );
  });
  return {
    ws,
    takeEarlyEvents() {
      ws.removeEventListener('message', onMessage);
      ws.removeEventListener('close', onClose);
      return early.splice(0);
    },
  };
}
