// Plain HTTP routes next to the WebSocket: liveness, readiness, env specs, protocol schemas.
import type { FastifyInstance } from 'fastify';
import { SCHEMAS } from '../../protocol/src/generated/schemas.js';
import type { ServerCore } from './server-core.js';

export function registerHttpRoutes(app: FastifyInstance, core: ServerCore): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_req, reply) => {
    const r = core.readiness();
    if (r.ready) return { status: 'ready', envs: core.registry.list().length };
    return reply.code(503).send({ status: 'not_ready', reason: r.reason });
  });

  app.get('/v1/envs', async () => ({ envs: core.registry.specs() }));

  app.get('/v1/schema', async () => ({ version: 1, schemas: SCHEMAS }));
}
