// make and group open sessions through one pre-check (connection/session-opener.ts). They used to check
// separately and had drifted: a group was taken while the server drained (a make was refused), and a
// group's kwargs error said `/kwargs` where a make's names the path inside kwargs (PROTOCOL.md §3). Each
// difference is checked here on both operations, over a real server with a real admission scheduler
// (Docker driver; nothing here gets as far as creating a container). Also: a group's members count
// against the session caps exactly like makes do, and a refused group gives its slots back.
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { EnvDefinition } from '../../envs/src/api.js';
import { EnvRegistry } from '../../envs/src/registry.js';
import { resolveScheduling } from '../src/config.js';
import { PooledSandboxService } from '../src/env-host/sandbox-adapter.js';
import { DockerDriver } from '../src/sandbox/docker/docker-driver.js';
import { PoolSet } from '../src/sandbox/pool.js';
import { SchedulerDriver } from '../src/admission/scheduler-driver.js';
import { RawClient, type Frame } from './helpers/raw-client.js';
import { startServer, type TestServer } from './helpers/server.js';
import { TEST_IMAGE, dockerFacility, gate } from './sandbox/facilities.js';

const dockerOk = gate('docker', await dockerFacility());

/** A sandboxed env with a kwargs schema; never reset here, so no sandbox is ever created. */
const typedEnv: EnvDefinition = {
  id: 'x/typed-v0',
  description: 'takes an integer n',
  observation_space: { type: 'text', max_length: 16 },
  action_space: { type: 'text', max_length: 16 },
  max_episode_steps: null,
  kwargs_schema: { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false },
  sandbox: { image: TEST_IMAGE, limits: { timeout_s: 30 }, reuse: 'wipe' },
  create: () => ({
    async reset() {
      return { observation: 'x' };
    },
    async step() {
      return { observation: 'x', reward: 0, terminated: true };
    },
    async close() {},
  }),
};

let server: TestServer | null = null;
const clients: RawClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await server?.stop();
  server = null;
});

async function serve(config: Record<string, unknown> = {}): Promise<TestServer> {
  const driver = new DockerDriver({ instanceId: `opener-${Date.now().toString(36)}`, createConcurrency: 1 });
  const pools = new PoolSet(driver, { minIdle: 0, maxTotal: 8, refillConcurrency: 1, statsLogIntervalMs: 0 });
  const sched = new SchedulerDriver(resolveScheduling({}), 8);
  const registry = new EnvRegistry();
  registry.register(typedEnv);
  server = await startServer(
    { scheduling: { enabled: true }, ...config },
    {
      sandbox: new PooledSandboxService(driver, pools, undefined, undefined, sched),
      registry,
      logger: pino({ level: process.env.SANDGYM_TEST_LOG ?? 'silent' }),
    },
  );
  return server;
}

let nextId = 1;
async function client(s: TestServer): Promise<RawClient> {
  const c = await RawClient.open(s.url());
  clients.push(c);
  const id = nextId++;
  const r = c.waitFor(id, 30_000);
  c.sendFrame({ id, type: 'hello', versions: [2], client: { name: 'test', version: '0' } });
  expect((await r).type).toBe('result');
  return c;
}

async function error(c: RawClient, type: string, params: Frame): Promise<Frame> {
  const id = nextId++;
  const reply = c.waitFor(id, 30_000);
  c.sendFrame({ id, type, ...params });
  const r = await reply;
  expect(r.type, JSON.stringify(r)).toBe('error');
  return r.error as Frame;
}

describe.skipIf(!dockerOk)('make and group share one pre-check', () => {
  it('both are refused while the server drains (CAPACITY, limit draining); a group used to be taken', async () => {
    const s = await serve();
    const c = await client(s);
    // Nothing runs: the drain is immediate, and the server stays draining.
    expect(await s.core.drain(60_000)).toBe(0);
    for (const [type, params] of [
      ['make', { env_id: 'x/typed-v0' }],
      ['group', { env_id: 'x/typed-v0', size: 2 }],
    ] as const) {
      const e = await error(c, type, params);
      expect(e, type).toMatchObject({ code: 'CAPACITY', retryable: true, details: { limit: 'draining' } });
    }
    expect(s.sessionCount()).toBe(0);
  });

  it('both report a kwargs error at the JSON Pointer inside kwargs; a group used to say /kwargs', async () => {
    const s = await serve();
    const c = await client(s);
    for (const [type, extra] of [
      ['make', {}],
      ['group', { size: 2 }],
    ] as const) {
      const wrongType = await error(c, type, { env_id: 'x/typed-v0', kwargs: { n: 'seven' }, ...extra });
      expect(wrongType, type).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: '/n' } });
      const unknownKey = await error(c, type, { env_id: 'x/typed-v0', kwargs: { extra: 1 }, ...extra });
      expect(unknownKey, type).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: '/extra' } });
    }
    // Refused after the caps were checked: the slots went back.
    expect(s.sessionCount()).toBe(0);
  });

  it('a group counts its members against max_sessions_per_connection like makes do', async () => {
    const s = await serve({ max_sessions_per_connection: 3 });
    const c = await client(s);
    const e = await error(c, 'group', { env_id: 'x/typed-v0', size: 4 });
    expect(e).toMatchObject({ code: 'CAPACITY', details: { limit: 'max_sessions_per_connection' } });
    expect(s.sessionCount()).toBe(0);
  });
});
