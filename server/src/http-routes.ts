// Plain HTTP routes next to the WebSocket: liveness, readiness, env specs, protocol schemas, Prometheus
// metrics and per-task statistics. The versioned routes carry the protocol major in their path, like
// the WebSocket endpoint. On a server with tokens, app.ts asks for the bearer token on every route here
// but /healthz and /readyz (docs/OBSERVABILITY.md, "Access").
import type { FastifyInstance } from 'fastify';
import { PROTOCOL_VERSION, PROTOCOL_VERSIONS, protocolError } from '#protocol/index.js';
import { SCHEMAS } from '#protocol/generated/schemas.js';
import type { Observability } from './observability/index.js';
import type { ServerCore } from './server-core.js';

/** Longest accepted value of a /tasks/stats query parameter (an env id is at most 128 characters). */
const MAX_QUERY_CHARS = 128;

export function registerHttpRoutes(app: FastifyInstance, core: ServerCore, obs: Observability | null = null): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_req, reply) => {
    const r = core.readiness();
    // `sandbox`: the driver in use (null: none, sandboxed envs refused), missing images, pool stats.
    const sandbox = r.sandbox ? { sandbox: r.sandbox } : {};
    if (r.ready) return { status: 'ready', envs: core.registry.list().length, ...sandbox };
    return reply.code(503).send({ status: 'not_ready', reason: r.reason, ...sandbox });
  });

  app.get(`/v${PROTOCOL_VERSION}/envs`, async () => ({ envs: core.registry.specs() }));

  app.get(`/v${PROTOCOL_VERSION}/schema`, async () => ({ version: PROTOCOL_VERSION, schemas: SCHEMAS }));

  const disabled = (what: string) => {
    const reason = `${what} are off on this server (metrics: false)`;
    return protocolError('UNSUPPORTED', { reason }, { reason }).toWire();
  };

  // Prometheus text exposition. Off: 404 with a typed body, so a scraper's error says why.
  app.get('/metrics', async (_req, reply) => {
    if (!obs) return reply.code(404).send({ error: disabled('metrics') });
    return reply.header('content-type', obs.metrics.contentType).send(await obs.metrics.scrape());
  });

  // Per-task success statistics per split: ?env=<env id>&split=<split>, both optional.
  app.get(`/v${PROTOCOL_VERSION}/tasks/stats`, async (req, reply) => {
    if (!obs) return reply.code(404).send({ error: disabled('task statistics') });
    const q = (req.query ?? {}) as Record<string, unknown>;
    const filter: { env?: string; split?: string } = {};
    for (const k of Object.keys(q)) {
      const v = q[k];
      if ((k !== 'env' && k !== 'split') || typeof v !== 'string' || v === '' || v.length > MAX_QUERY_CHARS) {
        const name = k.slice(0, 64);
        const reason =
          k === 'env' || k === 'split'
            ? `query parameter '${name}' must be given once, 1..${MAX_QUERY_CHARS} characters`
            : `unknown query parameter '${name}' (known: env, split)`;
        return reply.code(400).send({ error: protocolError('INVALID_ARGUMENT', { path: `/${name}`, reason }, { path: `/${name}`, reason }).toWire() });
      }
      filter[k] = v;
    }
    if (filter.env !== undefined && !core.registry.get(filter.env)) {
      return reply.code(404).send({ error: protocolError('UNKNOWN_ENV', { env_id: filter.env }, { env_id: filter.env }).toWire() });
    }
    return obs.taskStats.report(filter);
  });

  // An older major's routes answer with the protocol's typed refusal (as its WebSocket path does from
  // hello) rather than fastify's untyped 404, so an old client can say what went wrong.
  const supported = [...PROTOCOL_VERSIONS];
  const refusal = protocolError('UNSUPPORTED_VERSION', { supported }, { supported }).toWire();
  for (let major = 1; major < PROTOCOL_VERSION; major++) {
    for (const route of ['envs', 'schema', 'tasks/stats']) {
      app.get(`/v${major}/${route}`, async (_req, reply) => reply.code(404).send({ error: refusal }));
    }
  }
}
