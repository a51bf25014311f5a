// The socket side of a connection: the WebSocket and the TCP socket under it, outbound writes (one
// per event-loop turn, through the write coalescer), the pre-hello byte budget and deadline, the
// deadline of a message still arriving, the heartbeat, and closing. It knows frames as bytes only:
// what they mean, and what to answer, is the connection's (TransportEvents).
import type { Socket } from 'node:net';
import type { RawData, WebSocket } from 'ws';
import { CLOSE_CODES, protocolError as err, type ProtocolError } from '#protocol/index.js';
import type { ServerConfig } from '../config.js';
import { DEFAULT_HARD_LIMIT_BYTES, type OutputBudget, WriteCoalescer } from './write-coalescer.js';

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

/** ws's receiver state between frames (GET_INFO). */
const RECEIVER_IDLE = 0;

/** What the transport tells its connection. */
export interface TransportEvents {
  /** A complete data message. */
  message(data: RawData, isBinary: boolean): void;
  /** The socket is gone (`code`: the close code, 1006 when it ended without a close frame). */
  closed(code: number): void;
  /**
   * The transport ends the connection for the client's fault (too many bytes before hello, a deadline):
   * the connection answers `error` (with `binary`, or the last request's encoding when null), then the
   * transport closes with `closeCode`.
   */
  refuse(error: ProtocolError, binary: boolean | null): void;
}

export interface TransportOptions {
  readonly config: Pick<ServerConfig, 'handshake_max_bytes' | 'handshake_timeout_ms' | 'max_message_bytes'>;
  readonly output: OutputBudget;
  readonly log: { debug(o: object, m: string): void; warn(o: object, m: string): void };
  /** Until hello says whose it is (setTenant): the connection alone. */
  readonly tenant: string;
  /** For the overflow log line. */
  readonly sessions: () => number;
}

export class Transport {
  /** No more frames are handled (closing, closed, or handed over by a resume). */
  private stopped = false;
  private alive = true;
  /** Bytes received before hello succeeded (handshake_max_bytes); -1 once it has. */
  private preHelloBytes = 0;
  private handshakeTimer: NodeJS.Timeout | null = null;
  /** Messages completed (data frames): tells one unfinished message from the next. */
  private messagesIn = 0;
  /** When an unfinished message was first seen (0 = none), and messagesIn then. */
  private unfinishedSince = 0;
  private unfinishedAt = 0;
  private readonly receiver: ReceiverState | null;
  /** All outbound frames go through it: one socket write per event-loop turn, and backpressure. */
  private readonly out: WriteCoalescer;
  readonly address: string;
  private readonly onSocketData = (chunk: Buffer) => this.countPreHello(chunk.length);

  constructor(
    private readonly ws: WebSocket,
    /** The socket ws was upgraded on (the upgrade request's): the write coalescer corks it. */
    private readonly socket: Socket,
    private readonly opts: TransportOptions,
    private readonly events: TransportEvents,
  ) {
    this.out = new WriteCoalescer(ws, socket, {
      // Room for a few of the largest frames the server accepts, and never below the default.
      hardLimitBytes: Math.max(DEFAULT_HARD_LIMIT_BYTES, 4 * opts.config.max_message_bytes),
      onOverflow: (bytes) =>
        opts.log.warn(
          { buffered_bytes: bytes, server_buffered_bytes: opts.output.total, sessions: opts.sessions() },
          'client is not reading its replies; terminating the connection',
        ),
      budget: opts.output,
      tenant: opts.tenant,
    });
    this.address = socket.remoteAddress ?? '';
    this.receiver = receiverOf(ws);
    // Counted on the socket, before ws buffers anything: a frame announced as 15 MB, or fragments
    // that never end, are cut off at the budget instead of being held until they complete.
    socket.prependListener('data', this.onSocketData);
    const hto = opts.config.handshake_timeout_ms;
    this.handshakeTimer = setTimeout(() => this.timeout('hello', hto), hto);
    this.handshakeTimer.unref();
    ws.on('message', (data: RawData, isBinary: boolean) => {
      this.alive = true;
      this.messagesIn++;
      if (!this.stopped) events.message(data, isBinary);
    });
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('close', (code: number) => this.onClose(code));
  }

  /** The socket is open (frames can be written now). */
  get open(): boolean {
    return this.ws.readyState === 1;
  }

  /** Frames are no longer handled (see `stop`). */
  get isStopped(): boolean {
    return this.stopped;
  }

  /** Bytes this connection's socket has read and written (for /metrics, summed on demand). */
  socketBytes(): { read: number; written: number } {
    return { read: this.socket.bytesRead, written: this.socket.bytesWritten };
  }

  /** Whose bytes the unsent replies are (max_buffered_output_bytes per tenant). */
  setTenant(tenant: string): void {
    this.out.setTenant(tenant);
  }

  /** hello succeeded: the pre-auth budget and deadline end here. */
  handshakeDone(): void {
    this.preHelloBytes = -1;
    this.socket.removeListener('data', this.onSocketData);
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = null;
  }

  /** Writes an encoded frame; `more`: more frames follow this turn (they leave in one write). */
  write(data: string | Uint8Array, more?: boolean): void {
    this.out.send(data, more);
  }

  /**
   * More frames will follow in the current event-loop turn from the socket: the chunk ws is parsing
   * holds more (pipelined frames read at once). A receiver whose shape is not the expected one says
   * "maybe": the frame is held to the end of the turn.
   */
  moreInChunk(): boolean {
    const r = this.receiver;
    return r === null || r._bufferedBytes !== 0;
  }

  /** Stop handling frames (closing, or handed over by a resume). */
  stop(): void {
    this.stopped = true;
  }

  /** Close with `code` and stop handling frames; a peer that never answers the close is dropped soon after. */
  closeWith(code: number, reason: string): void {
    this.stopped = true;
    this.out.flush();
    this.ws.close(code, reason);
    setTimeout(() => this.ws.terminate(), 2000).unref();
  }

  /** Sends a close frame (frames still handled until the peer answers it). */
  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }

  /** A socket still connecting or open is closed, and dropped if the peer does not answer. */
  closeIfOpen(code: number, reason: string): void {
    if (this.ws.readyState === 0 || this.ws.readyState === 1) {
      this.ws.close(code, reason);
      setTimeout(() => this.ws.terminate(), 2000).unref();
    }
  }

  /** The heartbeat tick: a connection that has not answered the previous ping is half-open. True if it was terminated. */
  heartbeat(): boolean {
    if (!this.alive) {
      this.ws.terminate();
      return true;
    }
    this.alive = false;
    try {
      this.ws.ping();
    } catch {
      // Socket already closing; the close handler cleans up.
    }
    return false;
  }

  /**
   * Called by the server a few times per message_timeout_ms: a message (one frame's payload, or a
   * fragmented message's frames) still unfinished after the deadline ends the connection. Time spent
   * with reads paused for backpressure (the server's choice, not the client's) does not count.
   */
  checkUnfinishedMessage(now: number, timeoutMs: number): void {
    const r = this.receiver;
    if (r === null || this.stopped) return;
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
    if (now - this.unfinishedSince >= timeoutMs) this.timeout('message', timeoutMs);
  }

  private countPreHello(n: number): void {
    if (this.preHelloBytes < 0) return;
    this.preHelloBytes += n;
    const max = this.opts.config.handshake_max_bytes;
    if (this.preHelloBytes <= max) return;
    if (this.stopped) {
      // Still sending after being told to stop: drop the socket instead of reading on.
      this.ws.terminate();
      return;
    }
    this.opts.log.debug({ bytes: this.preHelloBytes, limit: max }, 'handshake byte budget exceeded');
    this.events.refuse(err('TOO_LARGE', { max_message_bytes: max }, { max_message_bytes: max, limit: 'handshake_max_bytes' }), false);
    this.closeWith(CLOSE_CODES.TOO_LARGE, 'too many bytes before hello');
  }

  private timeout(what: 'hello' | 'message', timeoutMs: number): void {
    if (this.stopped) return;
    this.opts.log.debug({ what, timeout_ms: timeoutMs }, 'connection timed out');
    this.events.refuse(err('CONNECTION_TIMEOUT', { what, timeout_ms: timeoutMs }, { what, timeout_ms: timeoutMs }), null);
    this.closeWith(CLOSE_CODES.CONNECTION_TIMEOUT, `${what} timeout`);
  }

  private onClose(code: number): void {
    this.stopped = true;
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = null;
    this.socket.removeListener('data', this.onSocketData);
    this.events.closed(code);
  }
}
