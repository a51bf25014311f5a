// State shared by all connections of one server: config, registry, limits, counters, timers.
import type { FastifyBaseLogger } from 'fastify';
import { PROTOCOL_VERSIONS, type HelloResult } from '../../protocol/src/index.js';
import type { EnvRegistry } from '../../envs/src/registry.js';
import { TokenChecker } from './auth.js';
import type { ServerConfig } from './config.js';
import type { Connection } from './connection.js';
import { DeadlineSweeper } from './deadline.js';
import type { OpLimits } from './session.js';
import type { Readiness, SandboxService } from './sandbox-adapter.js';
import { SERVER_VERSION } from './version.js';

export class ServerCore {
  readonly connections = new Set<Connection>();
  readonly tokens: TokenChecker;
  /** Open sessions server-wide, including makes in flight (so concurrent makes cannot overshoot). */
  sessionCount = 0;
  shuttingDown = false;
  /** The hello result is the same for every connection (with the highest major we speak): built once. */
  readonly helloResult: HelloResult;
  /** Step/reset/make deadlines (one sweeping timer for all sessions). */
  readonly deadlines: DeadlineSweeper;
  readonly opLimits: OpLimits;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly config: ServerConfig,
    readonly registry: EnvRegistry,
    readonly log: FastifyBaseLogger,
    readonly sandbox: SandboxService | null,
  ) {
    this.tokens = new TokenChecker(config.tokens);
    this.deadlines = new DeadlineSweeper(DeadlineSweeper.tickFor(config.step_timeout_ms, config.reset_timeout_ms));
    // Started here, not on listen: in-process users (tests, benchmarks) get deadlines too. unref'd.
    this.deadlines.start();
    this.opLimits = { step_timeout_ms: config.step_timeout_ms, reset_timeout_ms: config.reset_timeout_ms, deadlines: this.deadlines };
    this.helloResult = {
      version: Math.max(...PROTOCOL_VERSIONS),
      server: { name: 'sandgym', version: SERVER_VERSION },
      capabilities: { batch: true, msgpack: true, pipelining: true, tool_call: true, events: true, sandbox: sandbox !== null },
      limits: {
        max_message_bytes: config.max_message_bytes,
        max_sessions: config.max_sessions_per_connection,
        max_batch: config.max_batch,
        step_timeout_ms: config.step_timeout_ms,
        idle_timeout_ms: config.idle_timeout_ms,
      },
    };
  }

  readiness(): Readiness {
    if (this.shuttingDown) return { ready: false, reason: 'shutting down' };
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
  }

  stopTimers(): void {
    this.deadlines.stop();
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.heartbeatTimer = this.idleTimer = null;
  }

  /** Close every connection with SHUTTING_DOWN / 1001 after closing its sessions. */
  async shutdown(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.stopTimers();
    await Promise.all([...this.connections].map((c) => c.shutdown()));
    if (this.sandbox) {
      try {
        await this.sandbox.close();
      } catch (e) {
        this.log.error({ err: e }, 'sandbox service close failed');
      }
    }
  }
}
