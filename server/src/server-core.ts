// State shared by all connections of one server: config, registry, limits, counters, timers. It knows
// connections only as ConnectionHandle (what the timers, drain, shutdown and /metrics need of one), so the
// connection layer depends on it and never the other way round.
import type { FastifyBaseLogger } from 'fastify';
import { PROTOCOL_VERSIONS, protocolError, type HelloResult, type ProtocolError } from '#protocol/index.js';
import type { TaskStatsProvider } from '#envs/api.js';
import type { EnvRegistry } from '#envs/registry.js';
import { TokenChecker } from './transport/auth.js';
import type { ServerConfig } from './config.js';
import { CapacityLedger } from './admission/capacity-ledger.js';
import { DeadlineSweeper } from './session/deadline.js';
import { ResumeTokens, type Resumable } from './transport/resume.js';
import { EpisodeObservers } from './observability/episode-events.js';
import type { OpLimits } from './session/session.js';
import type { Readiness, SandboxService } from './env-host/sandbox-adapter.js';
import { SERVER_VERSION } from './version.js';
import { OutputBudget } from './transport/write-coalescer.js';

/** Suggested wait before retrying a connection refused for capacity. */
const CONNECTION_RETRY_MS = 1000;

/** What the server needs of a connection (connection/connection.ts implements it). */
export interface ConnectionHandle {
  /** Bytes its socket has read and written. */
  socketBytes(): { read: number; written: number };
  /** Its sessions mid-episode or with a request running. */
  runningEpisodes(): number;
  /** Requests waiting behind a running one, all its sessions. */
  queuedRequests(): number;
  heartbeat(): void;
  reapIdle(cutoff: number, idleMs: number): void;
  checkUnfinishedMessage(now: number, timeoutMs: number): void;
  announceShutdown(graceMs?: number): void;
  shutdown(): Promise<void>;
}

/** `R`: what the resume tokens hold (the connection layer's resume links). */
export class ServerCore<R extends Resumable = Resumable> {
  readonly connections = new Set<ConnectionHandle>();
  readonly tokens: TokenChecker;
  /** Session capacity (max_sessions, max_sessions_per_connection): the one place sessions are counted. */
  readonly capacity: CapacityLedger;
  shuttingDown = false;
  /** drain() was called: not ready, no new connection, session or episode; running episodes go on. */
  draining = false;
  /** The hello result is the same for every connection (with the highest major we speak): built once. */
  readonly helloResult: HelloResult;
  /** Step/reset/make deadlines (one sweeping timer for all sessions). */
  readonly deadlines: DeadlineSweeper;
  readonly opLimits: OpLimits;
  /** Unsent reply bytes of all connections (max_buffered_output_bytes). */
  readonly output: OutputBudget;
  /** Open connections per remote address (max_connections_per_address). */
  private readonly perAddress = new Map<string, number>();
  /** Connections that have not completed hello yet (max_pending_handshakes). */
  pendingHandshakes = 0;
  /** Resume tokens and the connections detached awaiting a resume (PROTOCOL.md §5a). */
  readonly resume = new ResumeTokens<R>();
  /** Who hears about sessions and episodes (metrics, archive, task stats): `observers.add(o)`. */
  readonly observers: EpisodeObservers;
  /** The per-task statistics view each env gets (EnvContext.task_stats); null when the server keeps none. */
  taskStatsFor: ((envId: string) => TaskStatsProvider) | null = null;
  /** Socket bytes read / written by connections that have closed (open ones are read on demand: socketBytes). */
  private closedBytesIn = 0;
  private closedBytesOut = 0;
  /** Connection ids: a counter, unique within this process. */
  private connectionSeq = 0;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private messageTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly config: ServerConfig,
    readonly registry: EnvRegistry,
    readonly log: FastifyBaseLogger,
    readonly sandbox: SandboxService | null,
  ) {
    this.tokens = new TokenChecker(config.tokens);
    this.capacity = new CapacityLedger(config.max_sessions, config.max_sessions_per_connection);
    this.observers = new EpisodeObservers(log);
    this.deadlines = new DeadlineSweeper(DeadlineSweeper.tickFor(config.step_timeout_ms, config.reset_timeout_ms));
    // Started here, not on listen: in-process users (tests, benchmarks) get deadlines too. unref'd.
    this.deadlines.start();
    this.output = new OutputBudget(config.max_buffered_output_bytes);
    this.opLimits = {
      step_timeout_ms: config.step_timeout_ms,
      reset_timeout_ms: config.reset_timeout_ms,
      max_queued_requests: config.max_queued_requests,
      max_queued_bytes: config.max_queued_bytes,
      deadlines: this.deadlines,
    };
    this.helloResult = {
      version: Math.max(...PROTOCOL_VERSIONS),
      server: { name: 'sandgym', version: SERVER_VERSION },
      capabilities: {
        batch: true,
        msgpack: true,
        pipelining: true,
        tool_call: true,
        events: true,
        sandbox: sandbox !== null,
        resume: config.resume_grace_ms > 0,
      },
      limits: {
        max_message_bytes: config.max_message_bytes,
        max_sessions: config.max_sessions_per_connection,
        max_batch: config.max_batch,
        step_timeout_ms: config.step_timeout_ms,
        idle_timeout_ms: config.idle_timeout_ms,
        max_queued_requests: config.max_queued_requests,
        max_queued_bytes: config.max_queued_bytes,
        message_timeout_ms: config.message_timeout_ms,
        resume_grace_ms: config.resume_grace_ms,
      },
    };
  }

  /**
   * Whether a new WebSocket upgrade from `address` may proceed: null, or the CAPACITY error the
   * upgrade is refused with (HTTP 503, before any WebSocket state exists, so a flood costs no more
   * than an HTTP request each).
   */
  admit(address: string): ProtocolError | null {
    // A draining server takes no new connection: its clients are told to go to another instance.
    if (this.draining || this.shuttingDown) return protocolError('SHUTTING_DOWN', {}, { reason: 'server is draining' });
    const c = this.config;
    let limit: string | null = null;
    let max = 0;
    if (this.connections.size >= c.max_connections) [limit, max] = ['max_connections', c.max_connections];
    else if (this.pendingHandshakes >= c.max_pending_handshakes) [limit, max] = ['max_pending_handshakes', c.max_pending_handshakes];
    else if ((this.perAddress.get(address) ?? 0) >= c.max_connections_per_address)
      [limit, max] = ['max_connections_per_address', c.max_connections_per_address];
    if (limit === null) return null;
    const reason = `${limit} (${max}) reached`;
    return protocolError('CAPACITY', { reason }, { reason, limit, retry_after_ms: CONNECTION_RETRY_MS });
  }

  /** Open sessions server-wide, including makes in flight. */
  get sessionCount(): number {
    return this.capacity.sessions;
  }

  /** Requests waiting behind a running one, all sessions (a /metrics scrape). */
  queuedRequests(): number {
    let n = 0;
    for (const c of this.connections) n += c.queuedRequests();
    return n;
  }

  /** A new connection id (`c_<n>`). */
  nextConnectionId(): string {
    return `c_${++this.connectionSeq}`;
  }

  /** Books a connection (from its constructor); removeConnection undoes it once, from its close. */
  addConnection(c: ConnectionHandle, address: string): void {
    this.connections.add(c);
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
    this.pendingHandshakes++;
  }

  removeConnection(c: ConnectionHandle, address: string, handshaken: boolean): void {
    if (!this.connections.delete(c)) return;
    const b = c.socketBytes();
    this.closedBytesIn += b.read;
    this.closedBytesOut += b.written;
    const n = (this.perAddress.get(address) ?? 1) - 1;
    if (n <= 0) this.perAddress.delete(address);
    else this.perAddress.set(address, n);
    if (!handshaken) this.pendingHandshakes--;
  }

  /**
   * Bytes read from / written to the sockets of every WebSocket connection since start (frames with
   * their headers, and the upgrade). Summed on demand (a /metrics scrape), so the step path pays nothing.
   */
  socketBytes(): { read: number; written: number } {
    let read = this.closedBytesIn;
    let written = this.closedBytesOut;
    for (const c of this.connections) {
      const b = c.socketBytes();
      read += b.read;
      written += b.written;
    }
    return { read, written };
  }

  readiness(): Readiness {
    if (this.shuttingDown) return { ready: false, reason: 'shutting down' };
    if (this.draining) return { ready: false, reason: 'draining' };
    if (this.sandbox) return this.sandbox.ready();
    return { ready: true };
  }

  startTimers(): void {
    // A connection that has not answered the previous ping by the next tick is half-open: terminate it.
    this.heartbeatTimer = setInterval(() => {
      for (const c of this.connections) c.heartbeat();
    }, this.config.heartbeat_ms);
    this.heartbeatTimer.unref();
    const idle = this.config.idle_timeout_ms;
    const every = Math.min(30_000, Math.max(10, Math.floor(idle / 4)));
    this.idleTimer = setInterval(() => {
      const cutoff = Date.now() - idle;
      for (const c of this.connections) c.reapIdle(cutoff, idle);
    }, every);
    this.idleTimer.unref();
    // Unfinished messages (a frame or fragments that stop arriving): checked a few times per deadline.
    const mt = this.config.message_timeout_ms;
    this.messageTimer = setInterval(
      () => {
        const now = Date.now();
        for (const c of this.connections) c.checkUnfinishedMessage(now, mt);
      },
      Math.min(1000, Math.max(10, Math.floor(mt / 4))),
    );
    this.messageTimer.unref();
  }

  stopTimers(): void {
    this.deadlines.stop();
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.idleTimer) clearInterval(this.idleTimer);
    if (this.messageTimer) clearInterval(this.messageTimer);
    this.heartbeatTimer = this.idleTimer = this.messageTimer = null;
  }

  /** Sessions mid-episode (reset done, not yet terminated or truncated) or with a request running. */
  runningEpisodes(): number {
    let n = 0;
    for (const c of this.connections) n += c.runningEpisodes();
    return n;
  }

  /**
   * The first half of a graceful shutdown (SIGTERM with drain_grace_ms): readiness turns false (a load
   * balancer stops sending connections), new connections are refused (HTTP 503 SHUTTING_DOWN), `make`
   * and `reset` are refused (CAPACITY, details.limit 'draining'), every connection is told (`shutdown`
   * event with details.grace_ms, so a client pool places sessions elsewhere), and the episodes already
   * running go on. Resolves with the number still running when none is left or `graceMs` has passed;
   * the caller then shuts down, which closes what is left with SHUTTING_DOWN.
   */
  async drain(graceMs: number, pollMs = 100): Promise<number> {
    if (!this.draining && !this.shuttingDown) {
      this.draining = true;
      for (const c of this.connections) c.announceShutdown(graceMs);
    }
    const until = Date.now() + graceMs;
    let running = this.runningEpisodes();
    // Polled, not hooked into the session layer: a drain happens once per process, and the check is
    // a walk over the sessions (microseconds for thousands).
    while (running > 0 && Date.now() < until && !this.shuttingDown) {
      await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(1, until - Date.now()))));
      running = this.runningEpisodes();
    }
    return running;
  }

  /** Close every connection with SHUTTING_DOWN / 1001 after closing its sessions. */
  async shutdown(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.stopTimers();
    // One connection that fails to shut down (a socket in a state nobody expected) must not fail the
    // shutdown of the others, nor skip the sandbox release below: log it and go on.
    await Promise.all([...this.connections].map((c) => c.shutdown().catch((e: unknown) => this.log.error({ err: e }, 'connection shutdown failed'))));
    // Sessions waiting for a resume that cannot come now.
    await this.resume.expireAll('server is shutting down');
    if (this.sandbox) {
      try {
        await this.sandbox.close();
      } catch (e) {
        this.log.error({ err: e }, 'sandbox service close failed');
      }
    }
  }
}
