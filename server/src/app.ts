// The app builder: a configured fastify instance with the WebSocket endpoint and HTTP routes.
// It never listens; the CLI and the tests call app.listen().
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import websocket from '@fastify/websocket';
import type { EnvRegistry } from '#envs/registry.js';
import { PROTOCOL_VERSIONS, protocolError, wsPath } from '#protocol/index.js';
import { bearerToken } from './transport/auth.js';
import { buildRegistry } from './env-host/build-registry.js';
import { resolveConfig, type ServerConfig } from './config.js';
import { Connection, type ConnectionCore } from './connection/connection.js';
import { registerHttpRoutes } from './http-routes.js';
import { inspectPlugin } from './inspect/plugin.js';
import { Observability } from './observability/index.js';
import type { SandboxService } from './env-host/sandbox-adapter.js';
import { registerSchedulerMetrics } from './admission/scheduler-metrics.js';
import { ServerCore } from './server-core.js';

export interface BuildOptions {
  /** Sandbox layer; when absent and config.driver is set, one is built from config (sandbox-adapter.ts). */
  sandbox?: SandboxService;
  /** Use this registry instead of building one from config (tests). */
  registry?: EnvRegistry;
  /** A pino logger instance to use instead of fastify's default (tests, embedding). */
  logger?: FastifyBaseLogger;
}

export interface SandgymApp {
  app: FastifyInstance;
  config: ServerConfig;
  registry: EnvRegistry;
  core: ServerCore;
  /** Metrics, episode tracking and task statistics; null when config.metrics is false. */
  observability: Observability | null;
  /** Open sessions server-wide (including makes in flight). */
  sessionCount(): number;
  /** The ws:// URL once listening (uses the bound address and port). */
  url(): string;
}

/** How much over max_message_bytes ws still buffers, so we can answer TOO_LARGE before closing. */
function payloadSlack(max: number): number {
  return Math.max(64 * 1024, Math.min(max, 1024 * 1024));
}

async function loadSandboxService(config: ServerConfig, log: FastifyBaseLogger, registry: EnvRegistry): Promise<SandboxService | null> {
  if (!config.driver || config.driver === 'none') return null;
  // Imported only when a driver is configured: servers without sandboxes never load dockerode.
  const { createSandboxService } = await import('./env-host/sandbox-adapter.js');
  // The registry is passed so pools are warmed for its sandboxed envs without building it twice.
  return createSandboxService(config, log, registry);
}

/**
 * Where the server's own logger writes (stderr): JSON lines, or pino-pretty's text for a terminal.
 * Unset log_format: pretty on a TTY, JSON otherwise (a log collector always gets JSON).
 */
async function logStream(cfg: ServerConfig): Promise<NodeJS.WritableStream> {
  const format = cfg.log_format ?? (process.stderr.isTTY ? 'pretty' : 'json');
  if (format === 'json') return process.stderr;
  // Loaded only for pretty output; sync so a crash loses no line.
  const { default: pretty } = await import('pino-pretty');
  return pretty({ destination: 2, sync: true, colorize: process.stderr.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}

export async function buildApp(config: Partial<ServerConfig> = {}, options: BuildOptions = {}): Promise<SandgymApp> {
  const cfg = resolveConfig(config);
  const registry = options.registry ?? (await buildRegistry(cfg));
  // No per-request HTTP log lines: health probes would drown the session lifecycle lines.
  const logController = new LogController({ disableRequestLogging: true });
  // Fastify's default 10 s plugin timeout fails start-up on a machine that is merely busy (seen at load average
  // 20-40: the plugins wait on nothing but the CPU). A plugin that truly hangs still shows: start-up never listens.
  const pluginTimeout = 120_000;
  const app = options.logger
    ? Fastify({ loggerInstance: options.logger, logController, pluginTimeout })
    : Fastify({ logger: { level: cfg.log_level, stream: await logStream(cfg) }, logController, pluginTimeout });
  const sandbox = options.sandbox ?? (await loadSandboxService(cfg, app.log, registry));
  const core: ConnectionCore = new ServerCore(cfg, registry, app.log, sandbox);
  // Registered before any connection exists; with metrics off no observer is added (zero-cost hook).
  const observability = cfg.metrics === false ? null : new Observability(core, { gcMetrics: cfg.gc_metrics === true });
  // The admission queue's metrics on the same registry (scheduler-metrics.ts).
  if (observability && sandbox?.scheduler) registerSchedulerMetrics(observability.metrics.registry, sandbox.scheduler);

  await app.register(websocket, {
    options: {
      maxPayload: cfg.max_message_bytes + payloadSlack(cfg.max_message_bytes),
      perMessageDeflate: false,
      // The codec checks UTF-8 itself and answers PARSE_ERROR keeping the connection (PROTOCOL.md §1);
      // ws would close with 1007 instead.
      skipUTF8Validation: true,
    },
    // Graceful shutdown: sessions closed, SHUTTING_DOWN sent, sockets closed with 1001.
    preClose: async function (this: FastifyInstance) {
      await core.shutdown();
      await new Promise<void>((resolve) => this.websocketServer.close(() => resolve()));
    },
    errorHandler: (error, socket) => {
      app.log.debug({ err: error }, 'websocket error');
      socket.terminate();
    },
  });

  // The current major's path, and every older major's on the same handler: a client of an older
  // protocol then gets a typed UNSUPPORTED_VERSION naming the majors we speak from its hello, which it
  // can report, instead of an HTTP 404 on the upgrade, which it cannot tell from a wrong host.
  for (let major = 1; major <= Math.max(...PROTOCOL_VERSIONS); major++) {
    app.get(
      wsPath(major),
      {
        websocket: true,
        // Connection caps are checked before the upgrade: a refused connection costs one HTTP 503
        // (with the CAPACITY error as its body and Retry-After), never a WebSocket.
        preValidation: (request, reply, done) => {
          const refusal = core.admit(request.raw.socket.remoteAddress ?? '');
          if (refusal === null) return done();
          core.log.debug({ address: request.raw.socket.remoteAddress, limit: refusal.details?.limit }, 'connection refused at capacity');
          void reply.code(503).header('retry-after', '1').send({ error: refusal.toWire() });
        },
      },
      (socket, request) => {
        new Connection(socket, request.raw.socket, core, bearerToken(request.headers.authorization));
      },
    );
  }
  // On a server with tokens, the HTTP routes that describe what it serves (/vN/envs, /vN/schema) ask for
  // the same bearer token as the WebSocket: an operator who set tokens expects the server closed.
  // Liveness and readiness (/healthz, /readyz) stay open for probes; /inspect is a static page that
  // asks for the token before it connects.
  if (core.tokens.enabled) {
    const unauthorized = protocolError('UNAUTHORIZED', { reason: 'a bearer token is required' }, { reason: 'a bearer token is required' }).toWire();
    app.addHook('onRequest', (request, reply, done) => {
      const path = request.url.split('?', 1)[0] ?? '';
      // /metrics and /vN/tasks/stats too: what the server runs and how the policy does are the operator's.
      if (!/^\/(v\d+\/(envs|schema|tasks\/stats)|metrics)$/.test(path) || core.tokens.check(bearerToken(request.headers.authorization))) return done();
      void reply.code(401).header('www-authenticate', 'Bearer').send({ error: unauthorized });
    });
  }
  registerHttpRoutes(app, core, observability);
  // The browser inspector (GET /inspect): static page, its bundle is built lazily on first request.
  await app.register(inspectPlugin);

  app.addHook('onListen', async () => core.startTimers());
  app.addHook('onClose', async () => {
    core.stopTimers();
    observability?.close();
  });

  return {
    app,
    config: cfg,
    registry,
    core,
    observability,
    sessionCount: () => core.sessionCount,
    url() {
      const addr = app.server.address();
      if (!addr || typeof addr === 'string') throw new Error('server is not listening');
      const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      return `ws://${host}:${addr.port}${wsPath()}`;
    },
  };
}
