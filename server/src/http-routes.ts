// Plain HTTP routes next to the WebSocket: liveness, readiness, env specs, protocol schemas.
// The versioned routes carry the protocol major in their path, like the WebSocket endpoint.
import type { FastifyInstance } from 'fastify';
import { PROTOCOL_VERSION, PROTOCOL_VERSIONS, protocolError } from '../../protocol/src/index.js';
import { SCHEMAS } from '../../protocol/src/generated/schemas.js';
import type { ServerCore } from './server-core.js';

export function registerHttpRoutes(app: FastifyInstance, core: ServerCore): void {
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

  // An older major's routes answer with the protocol's typed refusal (as its WebSocket path does from
  // hello) rather than fastify's untyped 404, so an old client can say what went wrong.
  const supported = [...PROTOCOL_VERSIONS];
  const refusal = protocolError('UNSUPPORTED_VERSION', { supported }, { supported }).toWire();
  for (let major = 1; major < PROTOCOL_VERSION; major++) {
    for (const route of ['envs', 'schema']) {
      app.get(`/v${major}/${route}`, async (_req, reply) => reply.code(404).send({ error: refusal }));
    }
  }
}
